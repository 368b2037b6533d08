"""Output files: checked before the work, written atomically with the umask's mode; tables read by name."""

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest

from iosets._io import atomic_path, check_folder, check_output, read_frame, write_frame
from iosets._validation import C_INT_MAX, check_count
from iosets.errors import InputError

FRAME = pl.DataFrame({"job_id": ["a", "b"], "w_iter": [10.0, 100.0]})
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _error(call) -> str:
    with pytest.raises(InputError) as raised:
        call()
    return str(raised.value)


@pytest.fixture
def a_file(tmp_path):
    """A regular file, where a folder is expected."""
    path = tmp_path / "file.txt"
    path.write_text("a file\n")
    return path


def test_check_output_creates_nothing_and_returns_the_path(tmp_path):
    out = tmp_path / "new" / "deeper" / "jobs.parquet"
    assert check_output(out, what="jobs table") == out
    assert not (tmp_path / "new").exists()  # the folders are the write's to create
    assert list(tmp_path.iterdir()) == []
    assert write_frame(FRAME, out) == out and pl.read_parquet(out).equals(FRAME)


def test_check_output_accepts_a_relative_name_in_a_writable_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert check_output("jobs.csv") == Path("jobs.csv")
    assert list(tmp_path.iterdir()) == []


def test_an_output_under_a_file_is_refused(a_file):
    out = a_file / "sub" / "jobs.parquet"
    message = _error(lambda: check_output(out, what="jobs table"))
    assert message == f"{out}: cannot write the jobs table: {a_file} is a file, not a folder"
    assert a_file.read_text() == "a file\n"


def test_an_output_that_is_a_folder_is_refused(tmp_path):
    folder = tmp_path / "jobs.parquet"
    folder.mkdir()
    assert _error(lambda: check_output(folder, what="jobs table")) == (
        f"{folder}: is a folder; expected a file name for the jobs table"
    )


@pytest.mark.parametrize(
    "name, suffixes, message",
    [
        ("jobs.txt", (".parquet", ".csv"), "expected a .parquet or .csv file name for the table"),
        ("jobs", (".parquet", ".csv"), "expected a .parquet or .csv file name for the table"),
        ("wl.yaml", (".json",), "expected a .json file name for the table"),
    ],
)
def test_a_wrong_suffix_is_refused(tmp_path, name, suffixes, message):
    assert _error(lambda: check_output(tmp_path / name, suffixes=suffixes)) == f"{tmp_path / name}: {message}"
    assert check_output(tmp_path / name, suffixes=()) == tmp_path / name


def test_dot_dot_folders_are_probed_where_they_lead_and_removed(tmp_path):
    kept = tmp_path / "kept"
    kept.mkdir()  # an empty folder that exists before: never removed
    out = tmp_path / "new" / ".." / "kept" / "x.csv"
    assert check_output(out) == out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"] and list(kept.iterdir()) == []


def test_check_folder_refuses_a_file_and_leaves_nothing(a_file, tmp_path):
    assert _error(lambda: check_folder(a_file, what="agios export")) == (
        f"{a_file}: cannot write the agios export: {a_file} is a file, not a folder"
    )
    assert check_folder(tmp_path / "out" / "etc", what="agios export") == tmp_path / "out" / "etc"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux sysfs, where no one creates files")
def test_a_folder_where_files_cannot_be_created_is_refused():
    # sysfs refuses new files even to root, which otherwise ignores permission bits
    assert _error(lambda: check_output("/sys/jobs.parquet", what="jobs table")) == (
        "/sys/jobs.parquet: cannot write the jobs table in /sys (Permission denied)"
    )


@pytest.mark.skipif(IS_ROOT, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert _error(lambda: check_output(folder / "new" / "x.csv", what="jobs table")) == (
            f"{folder / 'new' / 'x.csv'}: cannot write the jobs table in {folder / 'new'} (Permission denied)"
        )
    finally:
        folder.chmod(0o700)


def test_write_frame_keeps_refusing_other_suffixes(tmp_path):
    assert _error(lambda: write_frame(FRAME, tmp_path / "x.txt")) == (
        f"{tmp_path / 'x.txt'}: expected a .parquet or .csv file name for the table"
    )
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_leaves_the_old_file_when_the_block_fails(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("new\n")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["t.csv"]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_outputs_get_the_mode_of_the_umask(tmp_path, umask, mode):
    code = textwrap.dedent(
        f"""
        import os, sys
        os.umask({umask:#o})
        import polars as pl
        from iosets._io import atomic_path, write_frame
        from iosets.datasets import make_iosets_workload
        from iosets.workload import write_workload
        folder = sys.argv[1]
        write_frame(pl.DataFrame({{"a": [1]}}), folder + "/t.parquet")
        write_frame(pl.DataFrame({{"a": [1]}}), folder + "/t.csv")
        with atomic_path(folder + "/plain.txt") as tmp:
            tmp.write_text("x")
        write_workload(make_iosets_workload([(1, 10, 1)], horizon=50, random_state=0), folder + "/wl")
        """
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    written = ["t.parquet", "t.csv", "plain.txt", "wl/jobs.parquet", "wl/phases.parquet"]
    assert {name: stat.S_IMODE((tmp_path / name).stat().st_mode) for name in written} == dict.fromkeys(written, mode)


def test_the_umask_is_left_as_it_was():
    code = "import os; os.umask(0o027); import iosets._io; print(oct(os.umask(0)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "0o27\n"


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_read_frame_reads_a_name_with_glob_characters_as_it_is(tmp_path, suffix):
    path = tmp_path / f"x[bold red]y*{suffix}"
    write_frame(FRAME, path)
    (tmp_path / f"xby{suffix}").write_text("decoy: what the name would match as a pattern")
    assert read_frame(path).equals(FRAME)


def test_read_frame_names_the_file_and_the_reason(tmp_path):
    path = tmp_path / "x[1].csv"
    path.write_bytes(b"job_id,w_iter\n\xe9t\xe9,1.0\n")
    assert _error(lambda: read_frame(path, what="jobs table")) == (
        f"{path}: not a readable jobs table (invalid utf-8 sequence)"
    )
    assert _error(lambda: read_frame(tmp_path / "none[1].csv")) == f"{tmp_path / 'none[1].csv'}: no such file"


def test_check_count_with_a_maximum():
    assert check_count(C_INT_MAX, "device queue_depth", minimum=1, maximum=C_INT_MAX) == 2147483647
    assert _error(lambda: check_count(C_INT_MAX + 1, "device queue_depth", minimum=1, maximum=C_INT_MAX)) == (
        "device queue_depth must be an integer in [1, 2147483647], got 2147483648"
    )
    assert _error(lambda: check_count(0, "n", minimum=1)) == "n must be an integer >= 1, got 0"
    assert _error(lambda: check_count(2.0, "n", maximum=5)) == "n must be an integer in [0, 5], got 2.0"
