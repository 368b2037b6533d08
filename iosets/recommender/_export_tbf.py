"""Lustre NRS TBF export: ``lctl set_param`` rules by jobid, with rates for the jobs active now."""

import re

import numpy as np
import polars as pl

from .. import __version__
from .._validation import check_positive
from ..errors import InputError
from ._shell import check_job_ids, shell_word

TBF_TARGET = "ost.OSS.ost_io"
"""Default NRS service: the OSS bulk I/O service."""

TBF_MAX_RATE = 1_000_000
"""Lustre accepts rule rates strictly between 0 and this (LPROCFS_NRS_RATE_MAX, RPC/s)."""

_MAX_RULE_NAME = 15  # MAX_TBF_NAME is 16 bytes with the terminating NUL
_MAX_COMMAND = 4095  # LPROCFS_WR_NRS_TBF_MAX_CMD is 4096 bytes with the NUL
_RULE_NAME = re.compile(rf"[A-Za-z0-9_]{{1,{_MAX_RULE_NAME}}}")
_TARGET = re.compile(r"[A-Za-z][A-Za-z0-9_.*-]*")  # a leading '-' would be an lctl option
_RULE_PREFIX = "iosets_"


def tbf_rates(recommended: pl.DataFrame, active_job_ids, rpc_capacity: float) -> pl.DataFrame:
    """Each active job's share of the server's RPC rate under IO-SETS priorities.

    The active sets share ``rpc_capacity`` in proportion to their priority
    (``p_s / sum of the active sets' p``). IO-SETS lets one job per set do I/O at a
    time, but a TBF rule cannot make a set's jobs take turns: a set's share is split
    evenly among its active jobs, so the rates never add up to more than the capacity.

    Parameters
    ----------
    recommended : polars.DataFrame
        Output of :func:`recommend` (``job_id``, ``set``, ``priority``).
    active_job_ids : iterable of str
        Jobs running now (duplicates are ignored); each must be in ``recommended``.
    rpc_capacity : float
        RPC/s the server (one CPU partition, see :func:`render_tbf`) can serve.

    Returns
    -------
    polars.DataFrame
        One row per active job, in ``recommended`` order: ``job_id``, ``set``,
        ``priority``, ``set_active_jobs``, ``share`` (fraction of the capacity), ``rate``
        (RPC/s, sums to ``rpc_capacity``) and ``rpc_rate`` (the integer rate of the rule,
        ``max(1, floor(rate))``, with ``rate`` rounded to 6 decimals first).

    Examples
    --------
    >>> rec = pl.DataFrame({"job_id": ["a", "b", "c"], "set": [1, 2, 2], "priority": [0.1, 0.01, 0.01]})
    >>> tbf_rates(rec, ["a", "b", "c"], 1100.0)["rpc_rate"].to_list()
    [1000, 50, 50]
    """
    capacity = check_positive(rpc_capacity, "rpc_capacity")
    jobs = _job_frame(recommended)
    active = _active_ids(active_job_ids, jobs["job_id"])
    rows = jobs.filter(pl.col("job_id").is_in(active))
    rows = rows.with_columns(pl.len().over("set").cast(pl.Int64).alias("set_active_jobs"))
    set_weight = rows.group_by("set").agg(pl.col("priority").first())["priority"].sum()
    share = pl.col("priority") / set_weight / pl.col("set_active_jobs")
    rows = rows.with_columns(share.alias("share")).with_columns((pl.col("share") * capacity).alias("rate"))
    rpc_rate = np.maximum(1, np.floor(np.round(rows["rate"].to_numpy(), 6))).astype(np.int64)
    too_fast = rpc_rate >= TBF_MAX_RATE
    if too_fast.any():
        job = rows["job_id"][int(np.argmax(too_fast))]
        raise InputError(f"TBF rates must be < {TBF_MAX_RATE} RPC/s; job {job!r} would get {rpc_rate.max()}")
    return rows.with_columns(pl.Series("rpc_rate", rpc_rate, dtype=pl.Int64))


def _job_frame(recommended: pl.DataFrame) -> pl.DataFrame:
    """``job_id`` (as text), ``set`` and ``priority`` of a recommendation, job ids unique."""
    missing = [name for name in ("job_id", "set", "priority") if name not in recommended.columns]
    if missing:
        raise InputError(f"not a recommendation: missing column(s) {', '.join(missing)} (run recommend first)")
    jobs = recommended.select(pl.col("job_id").cast(pl.String), "set", "priority")
    duplicated = jobs.filter(pl.col("job_id").is_duplicated())["job_id"].unique(maintain_order=True)
    if duplicated.len():
        raise InputError(f"job_id must be unique in the recommendation; repeated: {', '.join(duplicated[:5])}")
    return jobs


def _active_ids(active_job_ids, known: pl.Series) -> list[str]:
    """The active job ids as text, checked against the recommendation."""
    if isinstance(active_job_ids, str):
        raise InputError(f"active job ids must be a list of ids, got the string {active_job_ids!r}")
    active = list(dict.fromkeys(str(job) for job in active_job_ids))
    unknown = sorted(set(active) - set(known.to_list()))
    if unknown:
        raise InputError(f"active job(s) not in the recommendation: {', '.join(unknown[:5])}")
    return active


def render_tbf(
    recommended: pl.DataFrame,
    *,
    generated: str,
    active,
    rpc_capacity: float,
    target: str = TBF_TARGET,
    default_rate: int | None = None,
) -> tuple[str]:
    """A shell script of ``lctl set_param`` commands: TBF by jobid, one rule per set (see :func:`tbf_rates`)."""
    if not isinstance(target, str) or not _TARGET.fullmatch(target):
        raise InputError(f"target must be an lctl service path such as {TBF_TARGET!r}, got {target!r}")
    rates = tbf_rates(recommended, active, rpc_capacity)
    check_job_ids(rates["job_id"].to_list(), "a TBF rule (jobid={...})")
    lines = [*_tbf_header(generated, rpc_capacity, target), "set -e", _set_param(target, "nrs_policies", "tbf jobid")]
    lines += _stop_previous(target)
    if default_rate is not None:
        lines.append(_set_param(target, "nrs_tbf_rule", f"change default rate={_check_rate(default_rate)}"))
    for (set_id,), jobs in rates.group_by("set", maintain_order=True):
        rule_rate = int(jobs["rpc_rate"][0])
        for k, chunk in enumerate(_chunks(jobs["job_id"].to_list(), rule_rate)):
            rule = f"start {_rule_name(set_id, k)} jobid={{{' '.join(chunk)}}} rate={rule_rate}"
            lines.append(_set_param(target, "nrs_tbf_rule", rule))
    return ("\n".join(lines) + "\n",)


def _tbf_header(generated: str, rpc_capacity: float, target: str) -> list[str]:
    return [
        "#!/bin/sh",
        f"# IO-SETS Lustre NRS TBF rules (jobid), generated by iosets {__version__} on {generated}.",
        "# TBF is NOT work-conserving: a rule caps its jobs at its rate even when the server is idle.",
        f"# The rates share rpc_capacity={rpc_capacity:g} RPC/s among the jobs active when this file was written:",
        "# a set gets priority / (sum of the active sets' priorities); its active jobs split that evenly",
        "# (TBF cannot make them take turns as IO-SETS does). Re-run `iosets export --format tbf --active ...`",
        "# whenever jobs start or end, and run the new script on every OSS.",
        "# Rates are per CPU partition (CPT) of the server: give the RPC/s that one CPT serves.",
        "# Jobs not listed match the 'default' rule (module parameter tbf_rate, 10000 RPC/s unless changed).",
        "# Clients must send job ids, e.g. lctl set_param jobid_var=SLURM_JOB_ID.",
        f"# Undo: lctl set_param {target}.nrs_policies=fifo",
    ]


def _set_param(target: str, name: str, value: str) -> str:
    return f"lctl set_param {shell_word(f'{target}.{name}={value}', 'lctl parameter')}"


def _stop_previous(target: str) -> list[str]:
    """Commands that stop every rule a previous run started (their names begin with iosets_)."""
    listing = f"lctl get_param -n {shell_word(f'{target}.nrs_tbf_rule', 'target')}"
    return [
        f"for rule in $({listing} | awk '$1 ~ /^{_RULE_PREFIX}[A-Za-z0-9_]+$/ {{print $1}}' | sort -u); do",
        f'    lctl set_param {shell_word(f"{target}.nrs_tbf_rule=", "target")}"stop $rule"',
        "done",
    ]


def _check_rate(rate) -> int:
    if isinstance(rate, bool) or not isinstance(rate, (int, np.integer)) or not 0 < rate < TBF_MAX_RATE:
        raise InputError(f"default_rate must be an integer in 1..{TBF_MAX_RATE - 1} RPC/s, got {rate!r}")
    return int(rate)


def _rule_name(set_id: int, k: int) -> str:
    """``iosets_s<set>_<k>`` (``m`` for a minus sign): TBF names are 1-15 letters, digits or _."""
    name = f"{_RULE_PREFIX}s{set_id}_{k}".replace("-", "m")
    if not _RULE_NAME.fullmatch(name):
        raise InputError(f"TBF rule name {name!r} is longer than {_MAX_RULE_NAME} characters")
    return name


def _chunks(job_ids: list[str], rate: int) -> list[list[str]]:
    """Split a set's job ids so that each ``start`` command fits Lustre's 4096-byte buffer."""
    budget = _MAX_COMMAND - len(f"start {_RULE_PREFIX}sm999_999 jobid={{}} rate={rate}")
    chunks: list[list[str]] = [[]]
    size = 0
    for job in job_ids:
        if chunks[-1] and size + len(job) + 1 > budget:
            chunks.append([])
            size = 0
        chunks[-1].append(job)
        size += len(job) + 1
    return chunks
