"""What the PrologSlurmctld and EpilogSlurmctld scripts do: ask the service as a job starts, post it when it ends.

Standard library only: slurmctld runs the scripts with the system ``python3``, where iosets
need not be installed. The client is ``client.py`` copied beside this file, else the one of
the iosets package this file sits in (``iosets/api/client.py``).

slurmctld gives its scripts an almost empty environment (the job's ``SLURM_*`` variables,
no ``PATH``), so ``iosets.conf`` beside the scripts may hold ``KEY=VALUE`` lines (``#``
comments) that fill in what the environment lacks: ``IOSETS_URL``, ``IOSETS_TOKEN_FILE``,
``IOSETS_TIMEOUT``, ``IOSETS_DARSHAN_PATTERN``, ``SLURM_CONF``, ``PATH``... Both scripts
exit 0 whatever happens (a failing PrologSlurmctld would requeue the job): trouble is
one line on stderr.

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
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
CONFIG_NAME = "iosets.conf"
SCONTROL_TIMEOUT = 5.0
LOG_MAX_MB = 64.0
"""Largest Darshan log the epilog reads (``IOSETS_LOG_MAX_MB``), MB."""
READ_TIMEOUT = 5.0
"""Seconds the epilog gives the log's reading in all (``IOSETS_READ_TIMEOUT``)."""
TAG = re.compile(r"\s*\biosets set=\S+ priority=\S+ source=\S+( conservative)?")
_FREE_TEXT = ("AdminComment=", "Comment=", "SystemComment=", "Command=", "WorkDir=", "StdErr=", "StdIn=", "StdOut=")


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
    """The module in file ``path``, registered as ``name`` (a dataclass looks its module up by name)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def show_job(job_id: str, env: Mapping[str, str]) -> dict[str, str]:
    """``scontrol show job ID`` as ``{field: value}``; empty when scontrol fails."""
    try:
        shown = subprocess.run(
            ["scontrol", "show", "job", job_id], env=env, capture_output=True, text=True, timeout=SCONTROL_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        log(f"scontrol show job {job_id}: {error}")
        return {}
    return parse_job(shown.stdout)


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


def job_request(env: Mapping[str, str], record: Mapping[str, str]) -> dict:
    """The recommendation request of a job: its name as the app, its numeric uid as the user (as Darshan's)."""
    return {
        "app": env.get("SLURM_JOB_NAME") or record.get("JobName") or "",
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
    """Stamp the starting job's AdminComment with the service's answer (the default one when it is down)."""
    env = hook_environment(environ)
    client = load_client()
    job_id = env["SLURM_JOB_ID"]
    record = show_job(job_id, env)
    request = job_request(env, record)
    answer = client.recommend(**request, connection=client.Connection.from_environment(env))
    if "error" in answer:
        log(f"job {job_id}: default answer: {answer['error']}")
    comment = retag(record.get("AdminComment", ""), client.tag(answer))
    update = ["scontrol", "update", f"JobId={job_id}", f"AdminComment={comment}"]
    done = subprocess.run(update, env=env, capture_output=True, text=True, timeout=SCONTROL_TIMEOUT)
    if done.returncode != 0:
        log(f"job {job_id}: scontrol update failed: {done.stderr.strip()}")
    return 0


def finished_row(env: Mapping[str, str], record: Mapping[str, str]) -> dict:
    """The jobs-table row of a finished job: id, uid, name as app, tasks, start, end, run time."""
    request = job_request(env, record)
    start, end = epoch(record.get("StartTime")), epoch(record.get("EndTime"))
    row = {key: request[key] for key in ("job_id", "user", "app", "nprocs")}
    row |= {"start": start, "end": end, "runtime": end - start if start is not None and end is not None else None}
    return {key: value for key, value in row.items() if value is not None}


def darshan_logs(pattern: str, env: Mapping[str, str]) -> list[str]:
    """Files matching ``pattern`` with ``%u`` the user name, ``%U`` the uid, ``%j`` the job id, ``%%`` a %."""
    values = {"u": env.get("SLURM_JOB_USER", ""), "U": env.get("SLURM_JOB_UID", ""), "j": env["SLURM_JOB_ID"]}
    expanded = re.sub(r"%([uUj%])", lambda m: glob.escape(values.get(m.group(1), "%")), pattern)
    return sorted(glob.glob(expanded))


def read_log(env: Mapping[str, str]):
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
            timeout=positive(env, "IOSETS_READ_TIMEOUT", READ_TIMEOUT),
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
    """Post the finished job: its Darshan log when IOSETS_DARSHAN_PATTERN finds one it may read, else its row."""
    env = hook_environment(environ)
    client = load_client()
    connection = client.Connection.from_environment(env)
    job_id = env["SLURM_JOB_ID"]
    found = read_log(env)
    try:
        if found is not None:
            try:
                client.post_log(found.path, data=found.data, job_id=job_id, connection=connection)
                return 0
            except client.Refused as error:  # a log the analyzer cannot read: the row still tells the job ran
                log(f"job {job_id}: log {found.path} refused: {error}")
        client.post_job(finished_row(env, show_job(job_id, env)), connection=connection)
    except (client.Unreachable, client.Refused, OSError, ValueError) as error:
        log(f"job {job_id}: not posted: {error}")
    return 0


def run(hook) -> int:
    """Run ``prolog`` or ``epilog`` on this process's environment; 0 whatever happens."""
    try:
        return hook(os.environ)
    except Exception as error:  # noqa: BLE001 - a hook must never fail the job
        log(f"{hook.__name__} failed: {type(error).__name__}: {error}")
        return 0


def log(message: str) -> None:
    print(f"iosets: {message}", file=sys.stderr)
