"""The real darshan-runtime fixtures hold what their truth says: phases, spacing, union, logs, job ids and bytes.

The truth files were written by scripts; these checks recompute each derived number from the file's own phases,
and read every named log with iosets' reader, so that a fixture that lies fails here rather than in a test that
trusts it.
"""

import statistics

import pytest

pytest.importorskip("darshan")

from runtime_truth import DATA, RuntimeCase, expected_rows, normalise_expected, runtime_cases  # noqa: E402

from iosets.analyzer import read_darshan  # noqa: E402

CASES = runtime_cases()
MADE_HERE = ("contention", "gaps-exp", "fsync", "forked", "steps")
"""The folders of tests/data/darshan-runtime/make_cases.py."""


def _mean_spacing(phases: list[list[float]]) -> tuple[float, float] | None:
    gaps = [b[0] - a[0] for a, b in zip(phases, phases[1:], strict=False)]
    return (statistics.fmean(gaps), statistics.pstdev(gaps) / statistics.fmean(gaps)) if gaps else None


def _union_length(phases: list[list[float]]) -> float:
    total, reach = 0.0, float("-inf")
    for start, end in sorted(phases):
        total += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return total


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("periodic", "periodic"),
        ("periodic (HEATMAP, no DXT)", "periodic"),
        ("not periodic: io_bound", "io_bound"),
        ("io_bound", "io_bound"),
        ("not periodic (tiny)", "not_periodic"),
        ("not_periodic", "not_periodic"),
    ],
)
def test_expected_texts_are_normalised(text, normal):
    assert normalise_expected(text) == normal


def test_an_unknown_expected_text_is_named():
    with pytest.raises(ValueError, match="'sometimes' is none of periodic, not_periodic, io_bound"):
        normalise_expected("sometimes")


def test_every_fixture_folder_is_listed():
    folders = {case.folder for case in CASES}
    assert {"corpus", "mpi", *MADE_HERE} <= folders
    assert folders == {truth.parent.name for truth in DATA.glob("*/ground_truth.json")}
    assert sum(case.folder == "corpus" for case in CASES) == 9
    assert sum(case.folder == "mpi" for case in CASES) == 4


def test_steps_rows_are_one_per_set_of_overlapping_processes_and_one_per_later_run():
    rows = expected_rows("steps")
    assert [len(row) for row in rows] == [6, 1, 1, 4]
    assert len({log for row in rows for log in row}) == 12
    cases = sorted((case for case in CASES if case.folder == "steps"), key=lambda case: case.row)
    assert [case.truth["job_id"] for case in cases] == ["2240", "2241", "2241", "2242"]
    first, second = cases[1].truth, cases[2].truth
    assert second["t_start"] > first["t_end"]  # the second run of 2241 starts after the first ended


@pytest.mark.parametrize("name", ["steps_a", "steps_c"])
def test_overlapping_processes_are_all_alive_together(name):
    (case,) = [case for case in CASES if case.name == name]
    jobs = [read_darshan(log) for log in case.logs]
    assert max(job.meta["start"] for job in jobs) < min(job.meta["end"] for job in jobs)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_phase_counts_spacings_and_union_match_the_phases(case: RuntimeCase):
    truth, phases = case.truth, case.truth["phases"]
    assert truth["n_phases"] == len(phases) == len(case.phase_kinds)
    assert all(0 <= start <= end <= truth["runtime_true"] for start, end in phases)
    assert phases == sorted(phases)
    writes = [phase for phase, kind in zip(phases, case.phase_kinds, strict=True) if kind == "write"]
    every, written = _mean_spacing(phases), _mean_spacing(writes)
    # w_iter_true: the write phases' spacing; w_iter_all_phases and spacing_cv: every phase's
    assert truth["w_iter_true"] == (None if written is None else pytest.approx(written[0], abs=2e-6))
    assert truth["w_iter_all_phases"] == (None if every is None else pytest.approx(every[0], abs=2e-6))
    assert truth["spacing_cv"] == (None if every is None else pytest.approx(every[1], abs=1e-4))
    assert truth["alpha_true"] == pytest.approx(_union_length(phases) / truth["runtime_true"], abs=2e-5)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_the_logs_exist_hold_the_job_and_its_bytes(case: RuntimeCase):
    truth = case.truth
    jobs = [read_darshan(log) for log in case.logs]
    assert {job.meta["job_id"] for job in jobs} == {truth["job_id"]}
    # phases are measured from the first log's header start (the program's own start in corpus/: < 1 ms apart)
    assert min(job.meta["start"] for job in jobs) == pytest.approx(truth["t_start"], abs=1e-3)
    assert sum(job.counters["bytes_written"] for job in jobs) == truth["bytes_written"]
    assert sum(job.counters["bytes_read"] for job in jobs) == truth["bytes_read"]
    if "ior_command" in truth:  # IOR prints its console text on <STDOUT>: a module row of its own, never counted
        console = [m for job in jobs for m in job.modules if m.module == "STDIO streams"]
        assert 0 < sum(m.bytes_written for m in console) < 64 * 1024
        assert not any(m.counted for m in console)


@pytest.mark.parametrize("folder", MADE_HERE)
def test_runs_made_here_stay_small_and_give_each_log_to_one_row(folder):
    cases = [case for case in CASES if case.folder == folder]
    logs = [log for case in cases for log in case.logs]
    assert len(logs) == len(set(logs))
    assert {path.name for path in (DATA / folder).glob("*.darshan")} == {log.name for log in logs}
    assert sum(path.stat().st_size for path in (DATA / folder).iterdir()) < 400_000
