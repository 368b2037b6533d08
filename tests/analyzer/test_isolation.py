"""darshan-util runs in worker processes: a crash or a hang costs one log, never the caller or the batch."""

import math
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from iosets.analyzer import analyze, ingest, read_darshan
from iosets.analyzer._pool import Pool, describe_end, run_isolated
from iosets.errors import InputError

darshan = pytest.importorskip("darshan")

EXAMPLES = Path(darshan.__file__).parent / "examples" / "example_logs"
SEGV = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
IN_DXT = "from iosets.analyzer._stage import note_stage; note_stage('reading DXT_POSIX'); "
IN_BGQ = "from iosets.analyzer._stage import note_stage; note_stage('reading BG/Q'); "
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _errors(analysis, seen_crash) -> list:
    return [(path, seen_crash(reason)) for path, reason in analysis.errors.rows()]


def _lustre_crash(folder: Path) -> Path:
    """dxt.darshan relabelled format 3.21: darshan-util reads its STDIO region as LUSTRE and dies (crash 3)."""
    path = folder / "lustre_crash.darshan"
    path.write_bytes(b"3.21" + (EXAMPLES / "dxt.darshan").read_bytes()[4:])
    return path


def _posix_flip(folder: Path) -> Path:
    """dxt.darshan with a byte of its POSIX stream flipped: darshan-util reports an error (no crash)."""
    data = bytearray((EXAMPLES / "dxt.darshan").read_bytes())
    data[10000] ^= 0xFF
    path = folder / "posix_flip.darshan"
    path.write_bytes(bytes(data))
    return path


def test_pool_contains_crashes_and_queued_tasks_go_on():
    tasks = [(str.upper, f"t{i}") for i in range(12)]
    tasks[3] = (exec, SEGV)
    tasks[7] = (exec, IN_DXT + SEGV)
    tasks[9] = (math.sqrt, -1.0)
    with Pool(2) as pool:
        replies = dict(pool.run(tasks, timeout=30))
    assert sorted(replies) == list(range(12))  # every task ends exactly once
    assert replies[3].died == "the worker process crashed: signal 11 (SIGSEGV)"
    assert replies[7].died == "darshan-util crashed: signal 11 (SIGSEGV) while reading DXT_POSIX"
    assert isinstance(replies[9].error, ValueError) and replies[9].value is None
    assert {i: r.value for i, r in replies.items() if i not in (3, 7, 9)} == {
        i: f"T{i}" for i in range(12) if i not in (3, 7, 9)
    }


def test_a_result_that_does_not_pickle_is_an_error_not_a_dead_worker():
    with Pool(1) as pool:
        replies = dict(pool.run([(memoryview, b"ab"), (str.upper, "a")], timeout=30))
    assert isinstance(replies[0].error, RuntimeError) and "does not pickle" in str(replies[0].error)
    assert replies[0].died is None and replies[1].value == "A"


@pytest.mark.timing
def test_a_worker_that_overruns_is_killed_and_named():
    tasks = [(exec, IN_BGQ + "import time; time.sleep(60)"), (str.upper, "a"), (str.upper, "b")]
    with Pool(1) as pool:  # the two tasks queued behind the stuck one run in its replacement
        replies = dict(pool.run(tasks, timeout=1.0))
    assert replies[0].died == "darshan-util did not finish within 1 s while reading BG/Q"
    assert (replies[1].value, replies[2].value) == ("A", "B")


@pytest.mark.parametrize(
    ("status", "stage", "timeout", "reason"),
    [
        (signal.SIGABRT, "closing the log", None, "darshan-util crashed: signal 6 (SIGABRT) while closing the log"),
        (signal.SIGKILL, "", None, "the worker process crashed: signal 9 (SIGKILL)"),
        (3 << 8, "reading POSIX", None, "darshan-util exited with status 3 while reading POSIX"),
        (signal.SIGKILL, "reading BG/Q", 60.0, "darshan-util did not finish within 60 s while reading BG/Q"),
        (signal.SIGKILL, "", 2.5, "the worker process did not finish within 2.5 s"),
    ],
)
def test_how_a_worker_ended_in_words(status, stage, timeout, reason):
    assert describe_end(int(status), stage, timeout) == reason


def test_a_crash_in_a_single_read_is_an_input_error_and_the_caller_goes_on(tmp_path, seen_crash):
    bad = _lustre_crash(tmp_path)
    reason = f"{bad}: darshan-util crashed: signal 11 (SIGSEGV) while reading LUSTRE"
    with pytest.raises(InputError) as error:
        read_darshan(bad)
    assert seen_crash(str(error.value)) == reason
    with pytest.raises(InputError) as error:
        ingest(bad)  # what `iosets ingest` calls
    assert seen_crash(str(error.value)) == reason
    assert read_darshan(EXAMPLES / "dxt.darshan").requests.height == 7623  # a new worker took over


@pytest.mark.timing
def test_a_single_read_that_overruns_is_an_input_error():
    with pytest.raises(InputError, match=r"^slow\.darshan: darshan-util did not finish within 0\.5 s while reading"):
        run_isolated(exec, IN_DXT + "import time; time.sleep(60)", name="slow.darshan", timeout=0.5)
    assert run_isolated(str.upper, "ok", name="x") == "OK"


def _interrupt_when(exists: Path, done: threading.Event) -> None:
    """SIGINT to this process once ``exists`` exists (polled for up to a minute, or until ``done`` is set)."""
    deadline = time.monotonic() + 60
    while not exists.exists():
        if done.wait(0.01) or time.monotonic() > deadline:
            return
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.timing
@linux_only
def test_ctrl_c_during_a_single_read_kills_its_worker_and_the_next_read_works(tmp_path):
    pid = int(run_isolated(os.readlink, "/proc/self", name="pid"))
    started, done = tmp_path / "started", threading.Event()
    watcher = threading.Thread(target=_interrupt_when, args=(started, done))
    watcher.start()
    try:
        with pytest.raises(KeyboardInterrupt):  # Ctrl-C once the worker runs the task, not before
            run_isolated(exec, f"open({str(started)!r}, 'w').close(); import time; time.sleep(60)", name="slow")
    finally:
        done.set()
        watcher.join()
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped, not left running
    assert run_isolated(str.upper, "a", name="x") == "A"


@linux_only
def test_a_worker_retires_after_darshan_util_failed_in_it(tmp_path):
    pid = run_isolated(os.readlink, "/proc/self", name="pid")
    read_darshan(EXAMPLES / "example.darshan")
    assert run_isolated(os.readlink, "/proc/self", name="pid") == pid  # a good read: same worker
    bad = _posix_flip(tmp_path)
    with pytest.raises(InputError, match=r"posix_flip\.darshan: cannot read the POSIX module .*\[darshan-util: "):
        read_darshan(bad)
    assert run_isolated(os.readlink, "/proc/self", name="pid") != pid  # its log left open: a fresh one


def test_isolated_false_reads_in_this_process():
    job = read_darshan(EXAMPLES / "dxt.darshan", isolated=False)
    assert job.requests.height == 7623 and job.meta["job_id"] == "1537455"


@pytest.fixture(scope="module")
def crash_batch(tmp_path_factory):
    """48 good logs (the pool's batch size) and one that crashes darshan-util."""
    folder = tmp_path_factory.mktemp("crash_batch")
    for k in range(48):
        shutil.copy(
            EXAMPLES / ("example.darshan" if k % 2 else "ior_hdf5_example.darshan"), folder / f"{k:02d}.darshan"
        )
    return folder, _lustre_crash(folder)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_crash_in_a_batch_is_one_error_row(crash_batch, workers, seen_crash):
    folder, bad = crash_batch
    big = analyze([folder], workers=workers, per_log=True)  # 49 logs: worker processes
    small = analyze(
        [folder / "00.darshan", folder / "01.darshan", bad], workers=workers, per_log=True
    )  # this process's reader
    reason = f"{bad}: darshan-util crashed: signal 11 (SIGSEGV) while reading LUSTRE"
    assert _errors(big, seen_crash) == _errors(small, seen_crash) == [(str(bad), reason)]
    assert big.jobs.height == 48 and small.jobs.height == 2
    assert big.jobs.head(2).equals(small.jobs)


def test_timeout_must_be_positive(crash_batch):
    with pytest.raises(InputError, match="timeout must be a finite number > 0, got 0"):
        analyze([crash_batch[0]], timeout=0)


@pytest.mark.slow
def test_dask_tasks_contain_a_crash(crash_batch, seen_crash):
    folder, bad = crash_batch
    logs = [folder / "00.darshan", folder / "01.darshan", bad]
    cluster = analyze(logs, dask="local", per_log=True)
    local = analyze(logs, workers=1, per_log=True)
    reason = f"{bad}: darshan-util crashed: signal 11 (SIGSEGV) while reading LUSTRE"
    assert _errors(cluster, seen_crash) == _errors(local, seen_crash) == [(str(bad), reason)]
    assert cluster.jobs.equals(local.jobs)


# ----------------------------------------------------------------------------- clean stops


def _group(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            state, _ppid, group = stat.rsplit(")", 1)[1].split()[:3]
            if int(group) == pgid and state != "Z":
                found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def many_links(tmp_path_factory):
    """3000 links to dxt.darshan: a batch that takes several seconds."""
    folder = tmp_path_factory.mktemp("many")
    for k in range(3000):
        (folder / f"{k:04d}.darshan").symlink_to(EXAMPLES / "dxt.darshan")
    return folder


@pytest.mark.timing
@linux_only
@pytest.mark.parametrize(
    ("signum", "whole_group"), [(signal.SIGINT, True), (signal.SIGTERM, False)], ids=["ctrl_c", "kill_pid"]
)
def test_a_stopped_analyze_leaves_no_process_and_no_file(many_links, tmp_path, signum, whole_group):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = (
        "from iosets.analyzer import analyze\n"
        "def progress(finished, total):\n"
        "    for outcome in finished:\n"
        "        print(flush=True)\n"  # one line per trace read
        "        yield outcome\n"
        f"analyze([{str(many_links)!r}], workers=2, progress=progress)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        start_new_session=True,  # its own process group, as a shell job
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    try:
        readable, _, _ = select.select([proc.stdout], [], [], 60)
        assert readable and proc.stdout.readline() == b"\n"  # reading logs: one is read
        assert len(_group(proc.pid)) == 4  # caller, fork server, 2 workers
        (os.killpg if whole_group else os.kill)(proc.pid, signum)  # Ctrl-C in a shell; `kill PID`
        assert proc.wait(timeout=60) == -signum
        deadline = time.monotonic() + 60
        while _group(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _group(proc.pid) == []
        assert list(tmp.iterdir()) == []
        read = 1 + proc.stdout.read().count(b"\n")  # at its end: the workers, which shared the pipe, are gone
        assert read < 3000  # stopped in the middle of the batch
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
