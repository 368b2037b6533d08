"""The epilog's spool: a row the service could not take waits on disk, is posted once it answers, and stays bounded.

The hooks run as slurmctld runs them (subprocesses, a fake ``scontrol``); the spool is in the
fake's folder (``job_env``). The cap and the folder checks are read in process.
"""

import calendar
import fcntl
import json
import os
import stat
from pathlib import Path

import pytest

from .hookkit import SLURM_HOOKS, StubService, closed_port, fake_scontrol, give, learned_jobs
from .test_hooks import DARSHAN_LOG, LOG_UID, job_env, load_module, run_hook, user_logs  # noqa: F401 (fixture)

spool = load_module(SLURM_HOOKS / "iosets_slurmctld.py", "slurmctld_of_spool").load_module(
    SLURM_HOOKS / "spool.py", "spool_under_test"
)
START = calendar.timegm((2026, 11, 23, 16, 29, 42))  # the fake job's StartTime, TZ=UTC
ROW_88 = {"job_id": "88", "user": "1001", "app": "A", "nprocs": 16, "nodes": 2}
ROW_88 |= {"start": START, "end": START + 90.0, "runtime": 90.0}  # NumNodes=2 in the fake's record


def spooled(env: dict) -> list[Path]:
    return sorted(Path(env["IOSETS_SPOOL"]).glob("*.json"))


def ended(fake: dict, url: str, job_id: str, token: str | None = None, **settings) -> dict:
    return job_env(fake, url, token, SLURM_JOB_ID=job_id, **settings)


@pytest.fixture
def down_then_back(serve):
    """A live service that learned app A (20 jobs), stopped: ``restart()`` brings it back on its store and port."""
    server = serve()
    for row in learned_jobs("A", "1001"):
        assert server.post_job(row).status_code == 201
    server.stop()
    return server


def test_a_row_spooled_while_the_service_is_down_is_posted_once_it_is_back(down_then_back, tmp_path):
    server = down_then_back
    fake = fake_scontrol(tmp_path / "bin", end="2026-11-23T16:31:12")
    env = ended(fake, server.url, "88", server.token)
    done = run_hook("epilog_slurmctld", env)
    (path,) = spooled(env)
    assert done.returncode == 3  # slurmctld's log: EpilogSlurmctld exit status 3
    assert done.stderr.splitlines() == [
        f"iosets: job 88: not posted: {server.url}/v1/jobs: [Errno 111] Connection refused",
        f"iosets: job 88: spooled as {path}: posted when the service answers",
    ]
    assert json.loads(path.read_text()) == ROW_88
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700

    server.restart()
    copy = path.read_bytes()  # the same row, spooled again below: a re-post must not store it twice
    fake_89 = fake_scontrol(tmp_path / "bin", job_id="89", end="2026-11-23T16:31:12")
    slow = {"IOSETS_EPILOG_TIMEOUT": "60", "IOSETS_POST_TIMEOUT": "30", "IOSETS_SPOOL_DRAIN_TIME": "30"}  # refits
    done = run_hook("epilog_slurmctld", ended(fake_89, server.url, "89", server.token, **slow))
    assert done.returncode == 0
    assert done.stderr == f"iosets: spool {path.parent}: 1 posted, 0 set aside, 0 waiting\n"
    assert spooled(env) == []
    stored = server.get("/v1/jobs/88").json()
    assert {key: stored[key] for key in ROW_88} == ROW_88

    path.write_bytes(copy)  # as if the service stored it but its answer was lost: the row is sent again
    done = run_hook("drain_spool", env | {"IOSETS_POST_TIMEOUT": "30"})  # what a timer runs
    assert (done.returncode, done.stderr) == (0, f"iosets: spool {path.parent}: 1 posted, 0 set aside, 0 waiting\n")
    assert spooled(env) == []
    jobs = server.get("/v1/jobs", app="A").json()["jobs"]
    assert sorted(job["job_id"] for job in jobs if not job["job_id"].startswith("A-")) == ["88", "89"]
    assert len(jobs) == 22  # the 20 learned ones, 88 once, 89


def test_a_hung_service_spools_the_row_within_the_epilogs_deadline(tmp_path):
    stub = StubService(hold=True)  # answers nothing until closed
    fake = fake_scontrol(tmp_path / "bin", end="2026-11-23T16:31:12")
    env = ended(fake, stub.url, "88", IOSETS_POST_TIMEOUT="30", IOSETS_EPILOG_TIMEOUT="3")
    try:
        done = run_hook("epilog_slurmctld", env)
    finally:
        stub.close()
    (path,) = spooled(env)
    assert done.returncode == 3 and len(stub.requests) == 1
    lost, kept = done.stderr.splitlines()
    assert lost.startswith(f"iosets: job 88: not posted: {stub.url}/v1/jobs: no answer within ")
    assert float(lost.split()[-2]) < 3.0 - 0.5  # the post left the 0.5 s the spool keeps
    assert kept == f"iosets: job 88: spooled as {path}: posted when the service answers"
    assert json.loads(path.read_text()) == ROW_88


def test_a_log_the_hung_service_did_not_answer_leaves_time_to_spool_the_jobs_row(tmp_path, request):
    logs = request.getfixturevalue("user_logs") / "logs"  # the job's user's folder, every user may enter
    log = logs / "88.darshan"
    log.write_bytes(DARSHAN_LOG.read_bytes())
    give(log, LOG_UID)
    stub = StubService(hold=True)
    fake = fake_scontrol(tmp_path / "bin", end="2026-11-23T16:31:12")
    env = ended(fake, stub.url, "88", IOSETS_POST_TIMEOUT="30", IOSETS_EPILOG_TIMEOUT="5")
    env |= {"SLURM_JOB_UID": str(LOG_UID), "SLURM_JOB_GID": str(LOG_UID)}
    env["IOSETS_DARSHAN_PATTERN"] = str(logs / "%j.darshan")
    try:
        done = run_hook("epilog_slurmctld", env)
    finally:
        stub.close()
    (path,) = spooled(env)
    assert done.returncode == 3 and [r["path"] for r in stub.requests] == ["/v1/jobs"]  # the log's post only
    assert b'name="log"' in stub.requests[0]["body"]
    lost, kept = done.stderr.splitlines()
    assert lost.startswith(f"iosets: job 88: not posted: {stub.url}/v1/jobs: no answer within ")
    assert float(lost.split()[-2]) < 5.0 - 2.5  # the post left 2 s for the job's row and 0.5 s for the spool
    assert kept == f"iosets: job 88: spooled as {path}: posted when the service answers"
    assert json.loads(path.read_text()) == {**ROW_88, "user": str(LOG_UID)}  # what Slurm knows, not the log


def add_rows(folder: Path, job_ids, **cap) -> tuple:
    """A spool in ``folder`` (cap: ``max_files``, ``max_bytes``) given one row per job id; (spool, its log)."""
    logged: list[str] = []
    pending = spool.Spool(folder, log=logged.append, **{"max_files": 100, "max_bytes": 1 << 20, **cap})
    for job_id in job_ids:
        pending.add({"job_id": job_id, "user": "1001", "app": "A"})
    return pending, logged


def test_a_spooled_row_refused_for_good_is_set_aside_with_the_reason(tmp_path):
    fake = fake_scontrol(tmp_path / "bin", end="2026-11-23T16:31:12")
    folder = tmp_path / "bin" / "spool"
    pending, _ = add_rows(folder, ["10", "11", "12"])
    first, second, third = pending.waiting()
    refused = (422, {"detail": "body.nodes: Input should be greater than or equal to 1"})
    busy = (503, {"detail": "refit under way"})
    stub = StubService(reply=(201, {}), first=[(201, {}), refused, (200, {}), busy])
    env = ended(fake, stub.url, "88")
    try:
        done = run_hook("epilog_slurmctld", env)  # posts 88 (201), then 10 (422), 11 (200: stored before), 12 (503)
        requests = len(stub.requests)
        again = run_hook("drain_spool", env)  # 12 only: 10 is never sent again
    finally:
        stub.close()
    assert done.returncode == 0 and requests == 4
    assert [json.loads(r["body"])["job_id"] for r in stub.requests] == ["88", "10", "11", "12", "12"]
    assert done.stderr.splitlines() == [
        f"iosets: spool {folder}: {first.name} set aside in rejected/: HTTP 422: {refused[1]['detail']}",
        f"iosets: spool {folder}: {third.name} waits: HTTP 503: refit under way",
        f"iosets: spool {folder}: 1 posted, 1 set aside, 1 waiting",
    ]
    assert (again.returncode, again.stderr) == (0, f"iosets: spool {folder}: 1 posted, 0 set aside, 0 waiting\n")
    (aside,) = pending.set_aside()
    assert aside.name == first.name and stat.S_IMODE(aside.stat().st_mode) == 0o600
    assert json.loads(aside.read_text()) == {
        "reason": f"HTTP 422: {refused[1]['detail']}",
        "row": {"job_id": "10", "user": "1001", "app": "A"},
    }
    assert pending.waiting() == [] and not second.exists()


def test_the_spool_drops_its_oldest_rows_past_its_cap(tmp_path):
    pending, logged = add_rows(tmp_path / "files", ["1", "2", "3", "4", "5"], max_files=3)
    assert [json.loads(path.read_text())["job_id"] for path in pending.waiting()] == ["3", "4", "5"]
    full = f"spool {tmp_path / 'files'} full (3 files, 1048576 bytes at most): dropped the oldest row "
    assert [line.partition(full)[2].rsplit("-", 1)[1] for line in logged] == ["1.json", "2.json"]  # <ns>-<pid>-<job>
    size = len(json.dumps({"app": "A", "job_id": "6", "user": "1001"}, sort_keys=True))  # 44 bytes a row
    pending, logged = add_rows(tmp_path / "bytes", ["6", "7", "8"], max_bytes=2 * size)
    assert [json.loads(path.read_text())["job_id"] for path in pending.waiting()] == ["7", "8"]
    assert len(logged) == 1 and logged[0].endswith("-6.json")


def test_a_spool_folder_others_could_write_is_refused(tmp_path):
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    with pytest.raises(spool.SpoolError, match=r"mode 0777 lets others write \(0700 expected\)"):
        add_rows(open_folder, ["1"])
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    with pytest.raises(spool.SpoolError, match="not a folder .a link or a file."):
        add_rows(tmp_path / "link", ["1"])
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_an_epilog_that_cannot_spool_says_the_row_is_lost(tmp_path):
    fake = fake_scontrol(tmp_path / "bin", end="2026-11-23T16:31:12")
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    env = ended(fake, f"http://127.0.0.1:{closed_port()}", "88", IOSETS_SPOOL=str(blocked))
    done = run_hook("epilog_slurmctld", env)
    assert done.returncode == 3
    assert (
        done.stderr.splitlines()[1] == f"iosets: job 88: not spooled: spool {blocked}: not a folder (a link or a file)"
    )
    assert os.path.isfile(blocked)


def test_one_drain_at_a_time_and_none_past_its_time(tmp_path):
    pending, _ = add_rows(tmp_path / "spool", ["1", "2"])
    posted: list[str] = []

    def post(row, timeout):
        posted.append(row["job_id"])

    with open(tmp_path / "spool" / spool.LOCK, "w") as held:  # another drain (an epilog, the timer) is running
        fcntl.flock(held, fcntl.LOCK_EX)
        assert pending.drain(post, lambda: 10.0) == spool.Drained(0, 0, 2)
    assert pending.drain(post, lambda: 0.0) == spool.Drained(0, 0, 2)  # no time left: nothing sent
    assert posted == []
    assert pending.drain(post, lambda: 10.0) == spool.Drained(2, 0, 0) and posted == ["1", "2"]  # oldest first
