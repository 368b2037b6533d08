"""What the report's tests share: a generated site with every input on disk, and a headless Chromium.

The site is a generated IO-SETS workload (three job profiles) turned into a site trace, analyzed,
recommended, replayed under three schedulers, tuned, plus a request replay: each table written by the
command that writes it for a user (``iosets recommend``, ``replay-trace``, ``tune``, ``replay-requests``),
companions included. The validation (real runs take minutes) is the phase engine's metrics of the IO-SETS
paper's Fig. 4 scenario with stand-in runs around them, written by ``Validation.write``. The browser is Debian's
``chromium`` (``tests/report/browser.py``); without it, or without Playwright, the browser tests are skipped, or
fail when ``IOSETS_REQUIRE_CHROMIUM=1`` (CI).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest


def _load_browser():
    """``tests/report/browser.py``, loaded by path (this folder is not a package)."""
    name = "iosets_tests_report_browser"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("browser.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


browser_harness = _load_browser()

APPS = ("ocean-model", "cfd-solver", "checkpointer")
"""App of each job profile of the generated site: short, medium and long I/O periods."""
PROFILES = ((5, 40.0, 5.0), (4, 300.0, 30.0), (3, 1200.0, 100.0))
"""(jobs, mean w_iter s, its deviation) of each profile (``make_iosets_workload``)."""
SCHEDULERS = ("fcfs", "wfq", "iosets-wfq")


def _run(*args: Any) -> None:
    """Run ``iosets ARGS`` in this process; fail with its output when it fails."""
    from typer.testing import CliRunner

    from iosets.cli import app

    result = CliRunner().invoke(app, [str(arg) for arg in args])
    assert result.exit_code == 0, f"iosets {' '.join(map(str, args))}:\n{result.output}"


def write_site(folder: Path) -> dict[str, Path]:
    """Write a generated site's report inputs into ``folder``; return each input's path, by ``build_report`` name."""
    from iosets.analyzer import analyze_requests
    from iosets.datasets import make_backlogged_requests, make_iosets_workload, workload_site_requests
    from iosets.replay import Device

    workload = make_iosets_workload(PROFILES, horizon=4000.0, random_state=0)
    site = workload_site_requests(workload, request_size=100_000_000)
    site.write_parquet(folder / "site.parquet")
    apps = pl.DataFrame({"job_id": workload.jobs["id"], "app": [APPS[p] for p in workload.jobs["profile"]]})
    jobs = (
        analyze_requests(site)
        .drop("app")
        .join(apps, on="job_id")
        .with_columns(pl.format("user{}", pl.col("job_id")).alias("user"))
    )
    jobs.write_parquet(folder / "jobs.parquet")
    _run("recommend", folder / "jobs.parquet", "--bandwidth", "1e9", "-o", folder / "rec.parquet")
    compare = ",".join(SCHEDULERS)
    # the device the site was generated on: each job alone replays its phases exactly (a trusted model check)
    device = Device(bandwidth=workload.bandwidth, overhead=0.0, seek=0.0)
    (folder / "device.json").write_text(json.dumps(device.to_dict()), encoding="utf-8")
    _run(
        "replay-trace",
        folder / "site.parquet",
        "--rec",
        folder / "rec.parquet",
        "--compare",
        compare,
        "--device",
        folder / "device.json",
        "-o",
        folder / "perjob.parquet",
    )
    _run("tune", folder / "jobs.parquet", "--horizon", "8000", "-o", folder / "tune.parquet")
    make_backlogged_requests(3000, 3, size_range=(65536, 65536), random_state=0).write_parquet(folder / "ops.parquet")
    _run(
        "replay-requests",
        folder / "ops.parquet",
        "--scheduler",
        "rbfq",
        *("--weight", "c0=100", "--weight", "c1=10", "--weight", "c2=1", "--reservation", "c2=1000"),
        "-o",
        folder / "result.parquet",
    )
    write_validation(folder / "validation.json")
    return {
        "jobs": folder / "jobs.parquet",
        "recommendation": folder / "rec.parquet",
        "site": folder / "site.parquet",
        "replay": folder / "perjob.parquet",
        "tune": folder / "tune.parquet",
        "requests": folder / "result.parquet",
        "validation": folder / "validation.json",
    }


VALIDATION_RUNS = {"system": ("fair-share", (1.1, 1.15, 1.2)), "set-10": ("set-10", (0.999, 1.0, 1.004))}
"""Per validated policy: the phase engine's policy, and each stand-in run's metrics as multiples of its values."""


def write_validation(path: Path) -> Path:
    """A ``validation.json`` of the Fig. 4 scenario: the phase engine's metrics, runs at ``VALIDATION_RUNS`` of them."""
    from iosets.replay import replay_phases
    from iosets.validate import METRICS, PolicyValidation, Validation, make_fig4_workload

    workload = make_fig4_workload(4, horizon=100.0, bandwidth=2e8)
    outcomes = {}
    for policy, (simulated_policy, factors) in VALIDATION_RUNS.items():
        simulated = replay_phases(workload, simulated_policy).metrics
        measured = {metric: [getattr(simulated, metric) * f for f in factors] for metric in METRICS}
        outcomes[policy] = PolicyValidation(policy, simulated_policy, measured, simulated)
    return Validation(workload, 2e8, outcomes).write(path)


@pytest.fixture(scope="session")
def harness():
    """The browser harness module, ``tests/report/browser.py``."""
    return browser_harness


@pytest.fixture(scope="module")
def site_inputs(tmp_path_factory) -> dict[str, Path]:
    """Every input of a report of the generated site, written by iosets' own commands."""
    return write_site(tmp_path_factory.mktemp("site"))


def _missing_browser(reason: str) -> None:
    """Skip with ``reason``, or fail when ``IOSETS_REQUIRE_CHROMIUM=1``."""
    variable = browser_harness.REQUIRE_VARIABLE
    if os.environ.get(variable) == "1":
        pytest.fail(f"{reason} ({variable}=1: the browser tests must run)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Chromium (Playwright ``Browser``) for one test module."""
    if browser_harness.find_chromium() is None:
        _missing_browser(browser_harness.MISSING_CHROMIUM)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing_browser("playwright not installed: pip install -e '.[test]'")
    with sync_playwright() as playwright:
        browser = browser_harness.launch_chromium(playwright)
        yield browser
        browser.close()
