"""Trace replay fidelity on real logs of parallel file systems (issue #21): each log calibrated on itself, judged
on what the fit did not see (benchmarks/replay_fidelity.py prints the README's table from the same runs)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from replay_fidelity import default_logs, fidelity  # noqa: E402

LOGS = [path for path in default_logs() if path.exists()]


@pytest.mark.skipif(len(LOGS) < 5, reason="the shared LBNL logs are not on this machine")
@pytest.mark.parametrize("path", LOGS, ids=lambda path: path.name)
def test_held_out_phases_are_replayed_within_25_percent(path):
    row = fidelity(path)
    held = row["held_out"]
    print(f"\n{path.name}: held-out median {held['median']:.1%}, p90 {held['p90']:.1%} over {held['folds']:.0f} folds")
    assert held["folds"] >= 2 and held["median"] <= 0.25  # a log of one phase is held out by ranks
