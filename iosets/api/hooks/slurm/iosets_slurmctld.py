"""What the PrologSlurmctld and EpilogSlurmctld scripts do: ask the service as a job starts, post it when it ends.

Standard library only: slurmctld runs the scripts with the system ``python3``, where iosets
need not be installed. The client is ``client.py`` copied beside this file, else the one of
the iosets package this file sits in (``iosets/api/client.py``).

slurmctld gives its scripts an almost empty environment (the job's ``SLURM_*`` variables,
no ``PATH``), so ``iosets.conf`` beside the scripts may hold ``KEY=VALUE`` lines (``#``
comments) that fill in what the environment lacks: ``IOSETS_URL``, ``IOSETS_TOKEN_FILE``,
``IOSETS_TIMEOUT``, ``IOSETS_DARSHAN_PATTERN``, ``SLURM_CONF``, ``PATH``... Trouble is one
line on stderr.

The job's app is its key (``app_key.py`` beside this file): the program its batch script
launches, named as Darshan rows name theirs, read from Slurm's job record
(``scontrol write batch_script``), never the job's name unless nothing else is found.

Each script ends within its deadline, every step included: the prolog within
``IOSETS_PROLOG_TIMEOUT`` (default 5 s), the epilog within ``IOSETS_EPILOG_TIMEOUT`` (default
10 s); a step that would pass it gets what is left. The prolog exits 0 whatever happens (a
failing PrologSlurmctld would requeue the job), and keeps the tag job_submit.lua stamped when
the service does not answer. The epilog exits 0 when the job is posted, else
``EXIT_UNREACHABLE`` (3) or ``EXIT_NOT_POSTED`` (4): slurmctld's log then says
``EpilogSlurmctld exit status 3:0`` for the job (the job itself is not affected).

The epilog reads the job's Darshan log with ``job_log.py`` (beside this file): as the job's
user (``SLURM_JOB_UID``, ``SLURM_JOB_GID``, ``SLURM_JOB_USER``) when it runs as root; no
symbolic link below the pattern's fixed folder; a regular file owned by the job's user; at
most ``IOSETS_LOG_MAX_MB`` (default 64) MB; within ``IOSETS_READ_TIMEOUT`` (default 5) s.
A refused log is one line on stderr naming the check, never the file's bytes, and the job
is posted without it (its row from ``scontrol show job``).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
CONFIG_NAME = "iosets.conf"
SCONTROL_TIMEOUT = 5.0
"""Seconds one ``scontrol`` call may take (less when the script's deadline is nearer)."""
UPDATE_TIME = 1.0
"""Seconds of the prolog's deadline kept for its ``scontrol update`` after the service's answer."""
PROLOG_TIMEOUT = 5.0
"""Seconds the prolog takes at most, every step included (``IOSETS_PROLOG_TIMEOUT``)."""
EPILOG_TIMEOUT = 10.0
"""Seconds the epilog takes at most, every step included (``IOSETS_EPILOG_TIMEOUT``)."""
EXIT_UNREACHABLE = 3
"""The epilog's exit code when the service did not answer: the job is not posted."""
EXIT_NOT_POSTED = 4
"""The epilog's exit code when the service refused the job, or the row could not be built."""
LOG_MAX_MB = 64.0
"""Largest Darshan log the epilog reads (``IOSETS_LOG_MAX_MB``), MB."""
READ_TIMEOUT = 5.0
"""Seconds the epilog gives the log's reading in all (``IOSETS_READ_TIMEOUT``)."""
SPOOL = "/var/spool/iosets"
"""Where the epilog keeps the rows the service did not take (``IOSETS_SPOOL``)."""
SPOOL_MAX_FILES = 10000
"""Rows the spool holds at most, set-aside ones included (``IOSETS_SPOOL_MAX_FILES``): the oldest are dropped."""
SPOOL_MAX_MB = 16.0
"""MB the spool holds at most (``IOSETS_SPOOL_MAX_MB``): the oldest rows are dropped."""
SPOOL_TIME = 0.5
"""Seconds of the epilog's deadline kept for writing its row to the spool."""
ROW_TIME = 2.0
"""Seconds of the epilog's deadline a log's post leaves for building the job's row (its ``scontrol`` calls)."""
RECORD_TIME = 1.0
"""Seconds at most the epilog gives ``scontrol show job`` before posting a log (for the job's node count,
which slurmctld does not give its scripts); a log whose record is not read by then is posted without it."""
DRAIN_TIME = 2.0
"""Seconds the epilog spends at most posting spooled rows once its job is posted (``IOSETS_SPOOL_DRAIN_TIME``)."""
DRAIN_TIMEOUT = 60.0
"""Seconds ``drain_spool`` takes at most (``IOSETS_DRAIN_TIMEOUT``)."""
RETRIED = frozenset({401, 403, 408, 429})
"""4xx statuses that say nothing against the row (token, timeout, rate): a spooled row is tried again."""
TAG = re.compile(r"\s*\biosets set=\S+ priority=\S+ source=\S+( conservative)?")
_FREE_TEXT = ("AdminComment=", "Comment=", "SystemComment=", "Command=", "WorkDir=", "StdErr=", "StdIn=", "StdOut=")


class Deadline:
    """The moment a hook must be done by; each step waits at most what is left."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def left(self, step: float, *, keep: float = 0.0) -> float:
        """``step`` seconds, or what is left less ``keep`` (for the steps after) when less; 0 once passed."""
        return max(min(step, self.at - time.monotonic() - keep), 0.0)


def hook_environment(environ: Mapping[str, str], config: Path = HERE / CONFIG_NAME) -> dict[str, str]:
    """``environ`` with the ``KEY=VALUE`` lines of ``config`` (when it exists) for the keys it lacks."""
    env = dict(environ)
    if config.is_file():
        for line in config.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and not key.startswith("#"):
                env.setdefault(key.strip(), value.strip())
    return env


def load_client() -> ModuleType:
    """The iosets client: ``client.py`` beside this file, else the package's ``iosets/api/client.py``."""
    for path in (HERE / "client.py", HERE.parents[1] / "client.py"):
        if path.is_file():
            return load_module(path, "iosets_client")
    raise FileNotFoundError(f"no client.py beside {HERE} nor in {HERE.parents[1]}")


def load_module(path: Path, name: str) -> ModuleType:
    """The module in file ``path``, registered as ``name`` (a dataclass looks its module up by name).

    Loaded once: a second call gives the same module (its exception classes stay the ones caught).
    """
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) == str(path):
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def show_job(job_id: str, env: Mapping[str, str], deadline: Deadline, *, keep: float = 0.0) -> dict[str, str]:
    """``scontrol show job ID`` as ``{field: value}``; empty when scontrol fails."""
    shown = scontrol(["show", "job", job_id], env, deadline, keep=keep)
    return parse_job(shown or "")


def batch_script(
    record: Mapping[str, str], env: Mapping[str, str], deadline: Deadline, *, keep: float = 0.0
) -> str | None:
    """The job's batch script (``scontrol write batch_script ID -``); None for a job without one.

    Only a batch job is asked: for another, scontrol prints its refusal on stdout and exits 0.
    """
    if not batch(record) or not record.get("JobId"):
        return None
    return scontrol(["write", "batch_script", record["JobId"], "-"], env, deadline, quiet=True, keep=keep)


def scontrol(
    args: list[str], env: Mapping[str, str], deadline: Deadline, *, quiet: bool = False, keep: float = 0.0
) -> str | None:
    """``scontrol ARGS``'s output within the deadline less ``keep`` (at most ``SCONTROL_TIMEOUT``); None when it fails.

    A failure is logged unless ``quiet`` (a job without a batch script is no trouble).
    """
    timeout = deadline.left(SCONTROL_TIMEOUT, keep=keep)
    try:
        if timeout <= 0:
            raise subprocess.TimeoutExpired("scontrol", 0)
        done = subprocess.run(["scontrol", *args], env=env, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        if not quiet:
            log(f"scontrol {' '.join(args)}: {error}")
        return None
    if done.returncode != 0:
        if not quiet:
            log(f"scontrol {' '.join(args)}: {done.stderr.strip()}")
        return None
    return done.stdout


def parse_job(text: str) -> dict[str, str]:
    """Fields of ``scontrol show job``'s multi-line output; a free-text field (comments, paths) fills its line."""
    fields = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(_FREE_TEXT):
            key, _, value = line.partition("=")
            fields[key] = value.strip()
            continue
        for token in line.split():
            key, sep, value = token.partition("=")
            if sep:
                fields[key] = value
    return fields


def seconds(limit: str | None) -> float | None:
    """A Slurm duration (``[D-]HH:MM:SS``, ``MM:SS``) in seconds; None for UNLIMITED, Partition_Limit..."""
    match = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", limit or "")
    if match is None:
        return None
    days, hours, minutes, secs = (int(part or 0) for part in match.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + secs)


def epoch(stamp: str | None) -> float | None:
    """A Slurm time stamp (local time, ``2026-11-23T16:29:42``) as epoch seconds; None for Unknown/None."""
    try:
        return time.mktime(time.strptime(stamp or "", "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def number(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def job_app(env: Mapping[str, str], record: Mapping[str, str], script: str | None) -> str:
    """The job's app key (``app_key.py``): from its batch script, else the executable of a job without one
    (``BatchFlag=0``: ``srun``, ``salloc``; a batch job's ``Command`` is its script's path), else its name."""
    app_key = load_module(HERE / "app_key.py", "iosets_app_key")
    name = env.get("SLURM_JOB_NAME") or record.get("JobName") or ""
    command = record.get("Command") if not batch(record) else None
    return app_key.app_key(script=script, command=command, name=name)


def batch(record: Mapping[str, str]) -> bool:
    """Whether the job has a batch script (``BatchFlag`` is not 0; a record without the field counts as one)."""
    return record.get("BatchFlag") != "0"


def job_request(env: Mapping[str, str], record: Mapping[str, str], script: str | None = None) -> dict:
    """The recommendation request of a job: its app key, its numeric uid as the user (as Darshan's)."""
    return {
        "app": job_app(env, record, script),
        "user": env.get("SLURM_JOB_UID") or re.sub(r"^.*\((\d+)\)$", r"\1", record.get("UserId", "")),
        "nprocs": number(record.get("NumTasks")) or number(record.get("NumCPUs")),
        "requested_time": seconds(record.get("TimeLimit")),
        "job_id": env["SLURM_JOB_ID"],
    }


def retag(comment: str, new_tag: str) -> str:
    """``comment`` with its iosets tags (job_submit.lua's, an earlier prolog's) replaced by ``new_tag``.

    The site's own text is kept in front.
    """
    kept = TAG.sub("", comment).strip()
    return f"{kept} {new_tag}" if kept else new_tag


def prolog(environ: Mapping[str, str]) -> int:
    """Stamp the starting job's AdminComment with the service's answer.

    When the service cannot answer, a tag already there (job_submit.lua's) is kept; without one,
    the default answer is stamped.
    """
    env = hook_environment(environ)
    deadline = Deadline(positive(env, "IOSETS_PROLOG_TIMEOUT", PROLOG_TIMEOUT))
    client = load_client()
    job_id = env["SLURM_JOB_ID"]
    record = show_job(job_id, env, deadline)
    if not record:  # an update would erase the comment it could not read
        log(f"job {job_id}: not tagged: its record could not be read")
        return 0
    request = job_request(env, record, batch_script(record, env, deadline))
    connection = client.Connection.from_environment(env)
    connection = replace(connection, timeout=deadline.left(connection.timeout, keep=UPDATE_TIME))
    answer = client.recommend(**request, connection=connection)
    comment = record.get("AdminComment", "")
    if "error" in answer:
        if TAG.search(comment):
            log(f"job {job_id}: tag kept: {answer['error']}")
            return 0
        log(f"job {job_id}: default answer: {answer['error']}")
    update = ["update", f"JobId={job_id}", f"AdminComment={retag(comment, client.tag(answer))}"]
    scontrol(update, env, deadline)
    return 0


def finished_row(env: Mapping[str, str], record: Mapping[str, str], script: str | None = None) -> dict:
    """The jobs-table row of a finished job: id, uid, app key, tasks, nodes, start, end, run time."""
    request = job_request(env, record, script)
    start, end = epoch(record.get("StartTime")), epoch(record.get("EndTime"))
    row = {key: request[key] for key in ("job_id", "user", "app", "nprocs")} | {"nodes": number(record.get("NumNodes"))}
    row |= {"start": start, "end": end, "runtime": end - start if start is not None and end is not None else None}
    return {key: value for key, value in row.items() if value is not None}


def darshan_logs(pattern: str, env: Mapping[str, str]) -> list[str]:
    """Files matching ``pattern`` with ``%u`` the user name, ``%U`` the uid, ``%j`` the job id, ``%%`` a %."""
    values = {"u": env.get("SLURM_JOB_USER", ""), "U": env.get("SLURM_JOB_UID", ""), "j": env["SLURM_JOB_ID"]}
    expanded = re.sub(r"%([uUj%])", lambda m: glob.escape(values.get(m.group(1), "%")), pattern)
    return sorted(glob.glob(expanded))


def read_log(env: Mapping[str, str], deadline: Deadline):
    """The job's first Darshan log (``job_log.JobLog``), read as its user; None when none or refused.

    A refusal is logged with its reason, never with the file's bytes.
    """
    pattern = env.get("IOSETS_DARSHAN_PATTERN")
    if not pattern:
        return None
    job_log = load_module(HERE / "job_log.py", "iosets_job_log")
    try:
        uid = number(env.get("SLURM_JOB_UID"))
        if uid is None:
            raise ValueError(f"SLURM_JOB_UID={env.get('SLURM_JOB_UID')!r}: expected the job's numeric uid")
        owner = job_log.Owner(uid, number(env.get("SLURM_JOB_GID")), env.get("SLURM_JOB_USER") or None)
        return job_log.read_job_log(
            lambda: darshan_logs(pattern, env),
            base=job_log.fixed_folder(pattern),
            owner=owner,
            limit=int(positive(env, "IOSETS_LOG_MAX_MB", LOG_MAX_MB) * 2**20),
            timeout=deadline.left(positive(env, "IOSETS_READ_TIMEOUT", READ_TIMEOUT)),
            label=pattern,
        )
    except ValueError as error:
        log(f"job {env['SLURM_JOB_ID']}: log {pattern} not read: {error}")
    except job_log.LogRefused as refused:
        log(f"job {env['SLURM_JOB_ID']}: log {refused.path} refused: {refused.reason}")
    return None


def positive(env: Mapping[str, str], key: str, default: float) -> float:
    """The finite number > 0 ``env[key]`` holds, ``default`` when unset; ValueError naming the key otherwise."""
    text = env.get(key) or ""
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ValueError(f"{key}={text!r}: expected a number > 0")
    return value


def epilog(environ: Mapping[str, str]) -> int:
    """Post the finished job: its Darshan log when IOSETS_DARSHAN_PATTERN finds one it may read, else its row.

    A log is posted with the job's node count from ``scontrol show job`` (read for at most
    :data:`RECORD_TIME` s; without it when that fails). The row is what Slurm knows (app key,
    uid, tasks, nodes, start, end, run time): every finished job is posted, with or without a
    log. A row the service could not take now (no answer, or an error that is not the row's) is
    written to the spool instead; once the job is posted, rows waiting in the spool are posted
    too, for at most ``IOSETS_SPOOL_DRAIN_TIME`` s.
    Returns 0 when posted, else the code that says why not.
    """
    env = hook_environment(environ)
    deadline = Deadline(positive(env, "IOSETS_EPILOG_TIMEOUT", EPILOG_TIMEOUT))
    client = load_client()
    connection = client.Connection.from_environment(env)
    job_id = env["SLURM_JOB_ID"]
    found = read_log(env, deadline)
    record: dict[str, str] = {}
    failed = None  # why the service did not take the job now: its row goes to the spool
    try:
        if found is not None:
            record = show_job(job_id, env, Deadline(deadline.left(RECORD_TIME, keep=ROW_TIME + SPOOL_TIME)))
            nodes = number(record.get("NumNodes"))
            timed = replace(connection, post_timeout=deadline.left(connection.post_timeout, keep=ROW_TIME + SPOOL_TIME))
            failed = not_taken(
                client,
                lambda: client.post_log(found.path, data=found.data, job_id=job_id, nodes=nodes, connection=timed),
            )
            if failed is None:
                drain_spool(env, client, connection, deadline)
                return 0
            if isinstance(failed, client.Refused) and permanent(failed):  # a log the analyzer cannot read
                log(f"job {job_id}: log {found.path} refused: {failed}")
                failed = None  # the row still tells the job ran
        record = record or show_job(job_id, env, deadline, keep=SPOOL_TIME)
        row = finished_row(env, record, batch_script(record, env, deadline, keep=SPOOL_TIME))
        if failed is None:
            timed = replace(connection, post_timeout=deadline.left(connection.post_timeout, keep=SPOOL_TIME))
            failed = not_taken(client, lambda: client.post_job(row, connection=timed))
    except (OSError, ValueError) as error:
        log(f"job {job_id}: not posted: {error}")
        return EXIT_NOT_POSTED
    if failed is None:
        drain_spool(env, client, connection, deadline)
        return 0
    log(f"job {job_id}: not posted: {failed}")
    if isinstance(failed, client.Refused) and permanent(failed):
        return EXIT_NOT_POSTED
    spool_row(env, row)
    return EXIT_UNREACHABLE if isinstance(failed, client.Unreachable) else EXIT_NOT_POSTED


def not_taken(client: ModuleType, post) -> Exception | None:
    """None when ``post()`` stored the job, else why not (``client.Unreachable`` or ``client.Refused``)."""
    try:
        post()
    except (client.Unreachable, client.Refused) as error:
        return error
    return None


def permanent(error: Exception) -> bool:
    """Whether the service refused a row for good: a 4xx other than 401, 403, 408 and 429 (the row is wrong)."""
    status = getattr(error, "status", None)
    return status is not None and 400 <= status < 500 and status not in RETRIED


def open_spool(env: Mapping[str, str]):
    """The spool of ``IOSETS_SPOOL`` (default :data:`SPOOL`), capped by ``IOSETS_SPOOL_MAX_FILES`` and ``_MAX_MB``."""
    spool = load_module(HERE / "spool.py", "iosets_spool")
    return spool.Spool(
        env.get("IOSETS_SPOOL") or SPOOL,
        max_files=int(positive(env, "IOSETS_SPOOL_MAX_FILES", SPOOL_MAX_FILES)),
        max_bytes=int(positive(env, "IOSETS_SPOOL_MAX_MB", SPOOL_MAX_MB) * 2**20),
        log=log,
    )


def spool_row(env: Mapping[str, str], row: dict) -> None:
    """Write the row the service did not take to the spool; one line says where, or why it could not."""
    job_id = row.get("job_id")
    try:
        path = open_spool(env).add(row)
    except Exception as error:  # noqa: BLE001 - SpoolError, OSError, a bad setting: the row is lost, said so
        log(f"job {job_id}: not spooled: {error}")
        return
    log(f"job {job_id}: spooled as {path}: posted when the service answers")


def drain_spool(env: Mapping[str, str], client: ModuleType, connection, deadline: Deadline, *, seconds=None):
    """Post the spooled rows, oldest first, for at most ``seconds`` (``IOSETS_SPOOL_DRAIN_TIME``) within the
    deadline; what was done (``spool.Drained``), None when the spool could not be read (said in one line)."""
    spool = load_module(HERE / "spool.py", "iosets_spool")
    try:
        pending = open_spool(env)
        budget = Deadline(seconds if seconds is not None else positive(env, "IOSETS_SPOOL_DRAIN_TIME", DRAIN_TIME))

        def post(row: dict, timeout: float) -> None:
            try:
                client.post_job(row, connection=replace(connection, post_timeout=timeout))
            except client.Refused as error:
                if permanent(error):
                    raise spool.Rejected(str(error)) from None
                raise

        done = pending.drain(post, lambda: min(deadline.left(connection.post_timeout), budget.left(float("inf"))))
    except (spool.SpoolError, OSError, ValueError) as error:
        log(f"spool not drained: {error}")
        return None
    if done.posted or done.rejected:
        log(f"spool {pending.folder}: {done.posted} posted, {done.rejected} set aside, {done.waiting} waiting")
    return done


def drain(environ: Mapping[str, str]) -> int:
    """Post every spooled row within ``IOSETS_DRAIN_TIMEOUT`` (default 60 s): what ``drain_spool`` runs from a timer.

    Returns 0 when no row is left waiting, else :data:`EXIT_UNREACHABLE`.
    """
    env = hook_environment(environ)
    deadline = Deadline(positive(env, "IOSETS_DRAIN_TIMEOUT", DRAIN_TIMEOUT))
    client = load_client()
    done = drain_spool(env, client, client.Connection.from_environment(env), deadline, seconds=float("inf"))
    return 0 if done is not None and done.waiting == 0 else EXIT_UNREACHABLE


def run(hook) -> int:
    """Run ``prolog``, ``epilog`` or ``drain`` on this process's environment; its code.

    A hook that fails unexpectedly gives 0 (the prolog: the job must start) or ``EXIT_NOT_POSTED``
    (the epilog, the drain: a job was not posted).
    """
    try:
        return hook(os.environ)
    except Exception as error:  # noqa: BLE001 - a hook must never fail the job
        log(f"{hook.__name__} failed: {type(error).__name__}: {error}")
        return 0 if hook is prolog else EXIT_NOT_POSTED


def log(message: str) -> None:
    print(f"iosets: {message}", file=sys.stderr)
