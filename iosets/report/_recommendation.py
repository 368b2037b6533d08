"""The report's "Recommendation": each set's priority, WFQ and RBFQ parameters, and the files that apply them."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..recommender import AGIOS_MAX_WEIGHT
from ._document import ReportInputs, Section, Table
from ._format import counted, format_count, format_number, format_priority, format_rate, format_seconds, listed

MISSING = "Run `iosets recommend JOBS -o rec.parquet`, then pass --rec rec.parquet"
"""What the section says without a recommendation."""

EXPORTS = (
    (
        "agios",
        "agios.conf, wfq.conf",
        "AGIOS's WFQ scheduler: agios_init reads agios.conf, which selects WFQ and names wfq.conf "
        "(one weight per set's queue, sets by increasing number)",
    ),
    (
        "tbf",
        "iosets-tbf.sh",
        "Lustre NRS TBF: run on the OSS servers, it sets lctl set_param rules by job id for the jobs "
        "running now (--active, --rpc-capacity); re-run it whenever jobs start or end",
    ),
    (
        "cgroup",
        "iosets-io-weight.sh",
        "cgroup v2: run from the Slurm prolog on each node, it writes each job's io.weight (a node's own devices)",
    ),
    (
        "json",
        "iosets.json",
        "Slurm hooks and other tools: each set, the set of each app and (user, app), and the default "
        "(conservative) set for apps never seen",
    ),
    (
        "lua",
        "iosets.lua",
        "Slurm's job_submit.lua (iosets/api/hooks/slurm/job_submit.lua reads /etc/slurm/iosets.lua): "
        "the set and priority of each submitted job",
    ),
)
"""Per `iosets export` format: the files it writes (as `iosets.recommender.export` names them), what applies them."""

_SET_COLUMNS = {
    "set": "set",
    "n_jobs": "jobs",
    "conservative jobs": "conservative jobs",
    "w_iter_min": "w_iter min",
    "w_iter_max": "w_iter max",
    "rbfq_reservation": "RBFQ reservation",
    "rbfq_limit": "RBFQ limit",
}

_SET_FORMATS = {
    "w_iter min": "seconds",
    "w_iter max": "seconds",
    "RBFQ reservation": "rate",
    "RBFQ limit": "rate",
}

_WEIGHT_FORMATS = {
    "priority": "priority",
    "WFQ weight (B/round)": "count",
    "WFQ share": "share",
    "RBFQ weight": "number",
    "RBFQ share": "share",
}


def recommendation_section(inputs: ReportInputs) -> Section:
    """The "Recommendation" section: one row per set, its priority and weights, the conservative set, the exports.

    Parameters
    ----------
    inputs : ReportInputs
        ``recommendation`` (RECOMMENDED_JOBS) is read; without it the section says what to run.

    Returns
    -------
    Section
        Section ``recommendation``: the per-set table (``iosets.recommender.set_summary`` with each set's
        jobs on thin evidence), a small table of each set's priority, WFQ weight and RBFQ weight with the share
        each gives when every set does I/O at once, and a table of ``iosets export`` formats, the files each
        writes and what applies them.
    """
    title = "Recommendation"
    if inputs.recommendation is None:
        reading = (
            "This section shows the recommended policy: the set each job goes to, each set's priority, "
            "WFQ weight and RBFQ reservation, weight and limit, and the files that apply them."
        )
        return Section(id="recommendation", title=title, reading=reading, missing=MISSING)
    recommended = inputs.recommendation
    sets = set_table(recommended)
    weights = weights_table(recommended)
    rec_file = Path(inputs.sources.get("recommendation", "rec.parquet")).name
    exports = export_table(rec_file)
    return Section(
        id="recommendation",
        title=title,
        reading=_reading(recommended, weights, rec_file),
        tables=(
            Table("recommendation-sets", "The recommendation per set", sets, formats=_SET_FORMATS),
            Table(
                "recommendation-weights",
                "Priority and weights per set",
                weights,
                formats=_WEIGHT_FORMATS,
                note="WFQ weight: bytes a set's queue sends per round; RBFQ weight: its priority over the lowest. "
                "A share is what the set gets when every set does I/O at once (RBFQ: before reservations). "
                f"capped: the WFQ weight hit {format_count(AGIOS_MAX_WEIGHT)}, the largest AGIOS holds.",
            ),
            Table("recommendation-exports", "Files that apply it", exports),
        ),
    )


def set_table(recommended: pl.DataFrame) -> pl.DataFrame:
    """``iosets.recommender.set_summary`` with each set's jobs on thin evidence, columns named for a reader."""
    from ..recommender import set_summary

    thin = recommended.group_by("set").agg(pl.col("conservative").sum().cast(pl.UInt32).alias("conservative jobs"))
    summary = set_summary(recommended).join(thin, on="set", how="left", maintain_order="left")
    return summary.select(list(_SET_COLUMNS)).rename(_SET_COLUMNS)


def weights_table(recommended: pl.DataFrame) -> pl.DataFrame:
    """Per set: priority, WFQ weight and RBFQ weight, the share of each when every set does I/O at once, and
    whether the WFQ weight is capped at ``AGIOS_MAX_WEIGHT``."""
    from ..recommender import set_summary

    summary = set_summary(recommended)
    return summary.select(
        "set",
        "priority",
        pl.col("wfq_weight").alias("WFQ weight (B/round)"),
        (pl.col("wfq_weight") / pl.col("wfq_weight").sum()).alias("WFQ share"),
        pl.col("rbfq_weight").alias("RBFQ weight"),
        (pl.col("rbfq_weight") / pl.col("rbfq_weight").sum()).alias("RBFQ share"),
        pl.when(pl.col("wfq_weight") >= AGIOS_MAX_WEIGHT).then(pl.lit("yes")).otherwise(pl.lit("")).alias("capped"),
    )


def export_table(rec_file: str = "rec.parquet") -> pl.DataFrame:
    """Per export format: the command, the files it writes and what applies them."""
    return pl.DataFrame(
        {
            "format": [fmt for fmt, _, _ in EXPORTS],
            "command": [f"iosets export {rec_file} --format {fmt} --out DIR" for fmt, _, _ in EXPORTS],
            "files": [files for _, files, _ in EXPORTS],
            "applied by": [applied for _, _, applied in EXPORTS],
        }
    )


def conservative_set(recommended: pl.DataFrame) -> int | None:
    """The set of the jobs on thin evidence (the highest-priority set any of them is in); None without such jobs."""
    lowest = recommended.select(pl.col("set").filter(pl.col("conservative")).min()).item()
    return None if lowest is None else int(lowest)


def mapping_of(recommended: pl.DataFrame) -> str | None:
    """The SET-b mapping the recommendation's priorities follow (``"set-10"`` when each set s has priority 10^-s),
    None when they follow no base (a gmm mapping) or when one set 0 fits every base.

    Examples
    --------
    >>> mapping_of(pl.DataFrame({"set": [1, 2], "priority": [0.1, 0.01]}))
    'set-10'
    >>> mapping_of(pl.DataFrame({"set": [0, 1], "priority": [0.9, 0.001]})) is None
    True
    """
    pairs = recommended.select("set", "priority").unique().filter(pl.col("set") != 0)
    if pairs.height == 0:
        return None
    bases = (pairs["priority"].log() / -pairs["set"].cast(pl.Float64)).exp()
    base = float(bases[0])
    if not base > 1 or (bases / base - 1).abs().max() > 1e-9:  # type: ignore[operator]
        return None
    zero = recommended.filter(pl.col("set") == 0)
    if zero.height and abs(float(zero["priority"][0]) - 1) > 1e-9:
        return None
    return f"set-{float(f'{base:.6g}'):g}"


def _reading(recommended: pl.DataFrame, weights: pl.DataFrame, rec_file: str) -> str:
    """How many sets, how the extremes weigh against each other, the conservative set, negative sets, capped WFQ
    weights, reservations, how to apply."""
    if weights.height == 0:
        return "The recommendation holds no job: there is no set to show."
    first, last = weights.row(0, named=True), weights.row(-1, named=True)
    if recommended.height == 1:
        text = (
            f"The recommendation puts its one job in set {first['set']} (priority {format_priority(first['priority'])})"
            ": with no other job, WFQ and RBFQ have nothing to weigh it against."
        )
    elif weights.height == 1:
        text = (
            f"The recommendation puts {_all_jobs(recommended.height)} in one set, set {first['set']}: they "
            "do I/O one at a time (one job of a set at a time), and WFQ and RBFQ have no other set to weigh it "
            "against."
        )
    else:
        text = f"The recommendation puts {counted(recommended.height, 'job')} in {counted(weights.height, 'set')}. "
        text += (
            "A smaller set number means a shorter characteristic time and a higher priority: set "
            f"{first['set']} gets priority {format_priority(first['priority'])} and set {last['set']} "
            f"{format_priority(last['priority'])}. When both do I/O at once, RBFQ weighs set {first['set']} "
            f"{format_number(first['RBFQ weight'] / last['RBFQ weight'])} times set {last['set']}, and WFQ serves "
            f"{format_count(first['WFQ weight (B/round)'])} against {format_count(last['WFQ weight (B/round)'])} "
            "bytes per round. Within a set, one job does I/O at a time."
        )
    text += _negative_sets(recommended, weights) + _capped(weights)
    thin = int(recommended["conservative"].sum())
    chosen = conservative_set(recommended)
    if chosen is None:
        text += " No job is on thin evidence, so no job needed the conservative set."
    else:
        text += (
            f" {counted(thin, 'job')} {'is' if thin == 1 else 'are'} on thin evidence (no confident w_iter, or not"
            f" periodic): {'it goes' if thin == 1 else 'they go'} to set {chosen}, "
            "the conservative set, or a lower-priority one, never ahead of a job whose rhythm is known."
        )
    reserved = recommended["rbfq_reservation"]
    if reserved.null_count() < reserved.len():
        from ..recommender import set_summary

        total = set_summary(recommended)["rbfq_reservation"].sum()
        text += f" RBFQ reserves {format_rate(float(total))} in all across the sets."
    return text + (
        f" `iosets export {rec_file} --format F` writes the files of the last table: each says what it assumes in its"
        " first lines."
    )


def _all_jobs(n: int) -> str:
    """ "both jobs", "all 3 jobs"."""
    return "both jobs" if n == 2 else f"all {counted(n, 'job')}"


def _negative_sets(recommended: pl.DataFrame, weights: pl.DataFrame) -> str:
    """What a negative set means, when the recommendation has one; "" otherwise."""
    negative = [int(s) for s in weights["set"].to_list() if s < 0]
    if not negative:
        return ""
    names = listed([f"set {s}" for s in negative])
    mapping = mapping_of(recommended)
    if mapping is None:
        return (
            f" {names.capitalize()}: a negative set is a set like any other, of higher priority than set 0, not a "
            "job without a set."
        )
    base = float(mapping.removeprefix("set-"))
    return (
        f" {names.capitalize()}: a negative set is a set like any other, not a job without a set. {mapping.upper()} "
        f"numbers a job's set round(log{format_number(base)} w_iter), so a job whose I/O phases start less than "
        f"{format_seconds(base**-0.5)} apart (w_iter below {format_number(base)}^-0.5) lands below set 0, at a "
        "higher priority than set 0."
    )


def _capped(weights: pl.DataFrame) -> str:
    """The WFQ weights capped at AGIOS's largest, and what that does; "" when none is."""
    capped = weights.filter(pl.col("capped") == "yes")
    if capped.height == 0:
        return ""
    names = listed([f"set {s}" for s in capped["set"].to_list()])
    priority = weights["priority"].to_numpy()
    span = float(priority.max() / priority.min())
    lowest = int(weights["WFQ weight (B/round)"].min())  # type: ignore[arg-type]
    fits = int(AGIOS_MAX_WEIGHT // span)
    advice = (
        f"`iosets recommend JOBS --max-request {fits} -o rec.parquet` (the lowest set's weight, now "
        f"{format_count(lowest)} bytes) keeps the exact ratios"
        if fits >= 1
        else "fewer sets keep the exact ratios"
    )
    return (
        f" The WFQ weight{'s' if capped.height > 1 else ''} of {names} "
        f"{'are' if capped.height > 1 else 'is'} capped at {format_count(AGIOS_MAX_WEIGHT)} bytes per round "
        f"(AGIOS keeps a weight in a C int): the priorities span {format_number(span)} times, and capped sets get "
        f"less WFQ service than their priority asks; {advice}."
    )
