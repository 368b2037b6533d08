"""The epilog reads a job's Darshan log as the job's user: FIFOs, links, giant and others' files are refused.

Each attack is a log the pattern finds for job 88 of ``nobody`` (uid 65534); the epilog runs as
root (as slurmctld runs it), refuses the log with a reason that names the check, and still posts
the job's row to a stub service. No byte of the planted files appears in a message or a request.
"""

import calendar
import json
import os
import shutil
from pathlib import Path

import pytest

from .hookkit import SLURM_HOOKS, StubService, fake_scontrol, give, open_folder
from .test_hooks import DARSHAN_LOG, job_env, load_module, run_hook

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the epilog reads as the job's user: needs root")

job_log = load_module(SLURM_HOOKS / "iosets_slurmctld.py", "slurmctld_of_safety").load_module(
    SLURM_HOOKS / "job_log.py", "job_log_under_test"
)  # registered by name, as its dataclasses need
NOBODY = 65534  # nobody
OTHER = 1234
SECRET = b"root:$6$iosets-secret-never-echoed$"
LIMIT = 64 << 20  # IOSETS_LOG_MAX_MB's default, bytes


@pytest.fixture
def site():
    """A Darshan folder every user may enter, holding ``nobody``'s own folder (theirs, 0700)."""
    with open_folder() as folder:
        (folder / "darshan" / "nobody").mkdir(parents=True)
        (folder / "darshan").chmod(0o755)
        give(folder / "darshan" / "nobody", NOBODY, 0o700)
        yield folder


def secret_file(path: Path, *, uid: int = 0, mode: int = 0o600, size: int | None = None) -> Path:
    """A file starting with ``SECRET``, owned by ``uid`` (root: a root-only file), ``size`` bytes when given."""
    with open(path, "wb") as file:
        file.write(SECRET)
        if size is not None:
            file.truncate(size)  # sparse: costs no disk
    return give(path, uid, mode)


def run_epilog(site: Path, tmp_path: Path, **settings) -> tuple:
    """The epilog of job 88 of nobody, pattern ``site/darshan/%u/*_id%j-*.darshan``: (process, stub requests)."""
    stub = StubService(reply=(201, {"job_id": "88"}))
    fake = fake_scontrol(tmp_path / "bin", job_id="88", start="2026-11-23T16:29:42", end="2026-11-23T16:29:52")
    env = job_env(fake, stub.url, SLURM_JOB_ID="88", SLURM_JOB_UID=str(NOBODY), SLURM_JOB_GID=str(NOBODY))
    env |= {"SLURM_JOB_USER": "nobody", "IOSETS_DARSHAN_PATTERN": f"{site}/darshan/%u/*_id%j-*.darshan", **settings}
    try:
        done = run_hook("epilog_slurmctld", env)  # waits up to 60 s: the hook's bounds are far below
    finally:
        stub.close()
    return done, stub.requests


def posted_row(requests: list[dict]) -> dict:
    """The one request's JSON row: the job posted without its log."""
    (request,) = requests
    assert (request["method"], request["path"]) == ("POST", "/v1/jobs")
    assert request["headers"]["Content-Type"] == "application/json"
    return json.loads(request["body"])


def the_row_of_nobody() -> dict:
    start = float(calendar.timegm((2026, 11, 23, 16, 29, 42)))  # TZ=UTC in the hook's environment
    return {"job_id": "88", "user": str(NOBODY), "app": "A", "nprocs": 16, "start": start, "end": start + 10.0}


LOG = "x_id88-1.darshan"


def fifo(site: Path) -> str:
    os.mkfifo(site / "darshan" / "nobody" / LOG)
    give(site / "darshan" / "nobody" / LOG, NOBODY)
    return "a FIFO, not a regular file"


def link_to_a_root_only_file(site: Path) -> str:
    secret = secret_file(site / "shadow")
    (site / "darshan" / "nobody" / LOG).symlink_to(secret)
    give(site / "darshan" / "nobody" / LOG, NOBODY)
    return f"{LOG}: a symbolic link (none is followed in the user's part of the path)"


def a_linked_folder(site: Path) -> str:
    """The user's folder itself a link (to a folder they may read, holding a good log of theirs)."""
    elsewhere = site / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    give(Path(shutil.copy(DARSHAN_LOG, elsewhere / LOG)), NOBODY, 0o600)
    (site / "darshan" / "nobody").rmdir()
    (site / "darshan" / "nobody").symlink_to(elsewhere)
    return "nobody: a symbolic link (none is followed in the user's part of the path)"


def a_1_gb_file(site: Path) -> str:
    secret_file(site / "darshan" / "nobody" / LOG, uid=NOBODY, size=1 << 30)
    return f"{1 << 30} bytes, more than the limit of {LIMIT} bytes"


def another_users_log(site: Path) -> str:
    secret_file(site / "darshan" / "nobody" / LOG, uid=OTHER, mode=0o644)  # readable by nobody, but not theirs
    return f"owned by uid {OTHER}, not the job's user (uid {NOBODY})"


def a_log_the_user_cannot_read(site: Path) -> str:
    """The user's own file, mode 000: root could read it, the user cannot."""
    secret_file(site / "darshan" / "nobody" / LOG, uid=NOBODY, mode=0o000)
    return f"Permission denied (read as uid {NOBODY})"


@needs_root
@pytest.mark.parametrize(
    "plant",
    [fifo, link_to_a_root_only_file, a_linked_folder, a_1_gb_file, another_users_log, a_log_the_user_cannot_read],
)
def test_a_log_the_job_may_not_give_is_refused_and_the_job_still_posted(site, tmp_path, plant):
    reason = plant(site)
    done, requests = run_epilog(site, tmp_path)
    path = site / "darshan" / "nobody" / LOG
    assert (done.returncode, done.stderr) == (0, f"iosets: job 88: log {path} refused: {reason}\n")
    row = posted_row(requests)
    assert {key: row[key] for key in the_row_of_nobody()} == the_row_of_nobody() and row["runtime"] == 10.0
    assert SECRET.decode() not in done.stderr + done.stdout and all(SECRET not in r["body"] for r in requests)


@needs_root
def test_a_log_the_user_owns_is_posted_as_read(site, tmp_path):
    log = give(Path(shutil.copy(DARSHAN_LOG, site / "darshan" / "nobody" / LOG)), NOBODY, 0o400)
    done, requests = run_epilog(site, tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    (request,) = requests
    assert request["headers"]["Content-Type"].startswith("multipart/form-data; boundary=")
    head = f'Content-Disposition: form-data; name="log"; filename="{LOG}"\r\n'
    head += "Content-Type: application/octet-stream\r\n\r\n"
    assert head.encode() + log.read_bytes() + b"\r\n--" in request["body"]


@needs_root
def test_a_folder_the_user_cannot_enter_hides_the_log(site, tmp_path):
    """Read as nobody, a log in a root-only folder is not found at all: the row alone is posted."""
    (site / "darshan" / "nobody").chmod(0o755)
    give(site / "darshan" / "nobody", 0, 0o700)
    give(Path(shutil.copy(DARSHAN_LOG, site / "darshan" / "nobody" / LOG)), NOBODY, 0o600)
    done, requests = run_epilog(site, tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert posted_row(requests)["user"] == str(NOBODY)


@needs_root
def test_a_bad_setting_names_itself_and_the_job_is_still_posted(site, tmp_path):
    give(Path(shutil.copy(DARSHAN_LOG, site / "darshan" / "nobody" / LOG)), NOBODY, 0o400)
    done, requests = run_epilog(site, tmp_path, IOSETS_LOG_MAX_MB="lots")
    pattern = f"{site}/darshan/%u/*_id%j-*.darshan"
    expected = f"iosets: job 88: log {pattern} not read: IOSETS_LOG_MAX_MB='lots': expected a number > 0\n"
    assert (done.returncode, done.stderr) == (0, expected)
    assert posted_row(requests)["job_id"] == "88"


@pytest.mark.timing
def test_a_read_that_never_ends_is_cut_at_the_timeout(tmp_path):
    """The child blocks (a FIFO opened blocking, no writer ever comes): refused once the timeout passes."""
    os.mkfifo(tmp_path / "never")

    def hang() -> list[str]:
        with open(tmp_path / "never", "rb"):
            return [str(tmp_path / "never")]

    owner = job_log.Owner(os.geteuid())
    with pytest.raises(job_log.LogRefused) as refused:
        job_log.read_job_log(hang, base=str(tmp_path), owner=owner, limit=LIMIT, timeout=0.5, label="the pattern")
    assert refused.value.path == "the pattern"
    assert refused.value.reason == "not read within 0.5 s (the reader was killed)"


@pytest.mark.parametrize(
    "pattern, fixed",
    [
        ("/lustre/darshan/%u/*_id%j-*.darshan", "/lustre/darshan"),
        ("/darshan-logs/*/*/*/%u_*_id%j-*.darshan", "/darshan-logs"),
        ("/logs/%j.darshan", "/logs"),
        ("/%u.darshan", "/"),
        ("logs/x[0-9]/%j", "logs"),
        ("%j.darshan", "."),
    ],
)
def test_the_sites_part_of_a_pattern(pattern, fixed):
    assert job_log.fixed_folder(pattern) == fixed
