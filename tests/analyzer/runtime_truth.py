"""The real darshan-runtime fixtures with their programs' truth (tests/data/darshan-runtime), listed as cases.

Every folder there that holds a ``ground_truth.json`` is read (``corpus``, ``mpi``, the runs of make_cases.py and
any folder added later). Each entry of a file's ``jobs`` is one case: the logs that form one expected row of the
jobs table, and its truth. The ``expected`` strings of the shared files ("not periodic: io_bound", "periodic
(HEATMAP, no DXT)", "not periodic (tiny)") are normalised to ``periodic``, ``not_periodic`` or ``io_bound``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parents[1] / "data" / "darshan-runtime"
TRUTH_FILE = "ground_truth.json"
EXPECTED = ("periodic", "not_periodic", "io_bound")


def normalise_expected(text: str) -> str:
    """``periodic``, ``not_periodic`` or ``io_bound`` from a truth file's ``expected`` text.

    >>> normalise_expected("not periodic: io_bound"), normalise_expected("periodic (HEATMAP, no DXT)")
    ('io_bound', 'periodic')
    """
    words = text.lower().replace("_", " ")
    if "io bound" in words:
        return "io_bound"
    if words.startswith("not periodic"):
        return "not_periodic"
    if words.startswith("periodic"):
        return "periodic"
    raise ValueError(f"expected: {text!r} is none of {', '.join(EXPECTED)} (nor a variant of one)")


@dataclass(frozen=True)
class RuntimeCase:
    """One expected jobs-table row of a fixture folder: its logs and its truth (the ``jobs`` entry as read)."""

    folder: str
    name: str
    logs: tuple[Path, ...]
    row: int
    """The row's number in its folder (the entry's ``row`` when given, else its index in ``jobs``)."""
    expected: str
    truth: dict

    @property
    def id(self) -> str:
        """``folder/name``: the test id."""
        return f"{self.folder}/{self.name}"

    @property
    def phase_kinds(self) -> list[str]:
        """Each phase's kind (``read`` or ``write``): the truth's ``phase_kinds``, else every phase a write."""
        return self.truth.get("phase_kinds") or ["write"] * len(self.truth["phases"])


def _cases_of(truth_file: Path) -> list[RuntimeCase]:
    jobs = json.loads(truth_file.read_text())["jobs"]
    folder = truth_file.parent
    return [
        RuntimeCase(
            folder=folder.name,
            name=job["name"],
            logs=tuple(folder / log for log in job["log"]),
            row=job.get("row", k),
            expected=normalise_expected(job["expected"]),
            truth=job,
        )
        for k, job in enumerate(jobs)
    ]


def runtime_cases(data: Path = DATA) -> list[RuntimeCase]:
    """Every case of every folder of ``data`` that holds a ``ground_truth.json``, folders in name order."""
    return [case for truth_file in sorted(data.glob(f"*/{TRUTH_FILE}")) for case in _cases_of(truth_file)]


def expected_rows(folder: str, data: Path = DATA) -> list[tuple[str, ...]]:
    """The jobs-table rows ``folder`` must give, each as the sorted names of the logs that form it."""
    cases = sorted((c for c in runtime_cases(data) if c.folder == folder), key=lambda c: c.row)
    if not cases:
        raise ValueError(f"{folder}: no such fixture folder with a {TRUTH_FILE} under {data}")
    return [tuple(sorted(log.name for log in case.logs)) for case in cases]
