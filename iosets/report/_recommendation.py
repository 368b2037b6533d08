"""The report's "Recommendation": each set's priority, WFQ and RBFQ parameters, and the files that apply them."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ._document import Figure, ReportInputs, Section, Table
from ._format import counted, format_bytes
from ._palette import set_colour
from ._plots import bar_trace, category_axis, figure_layout, number_axis

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
    "priority": "priority",
    "n_jobs": "jobs",
    "conservative jobs": "conservative jobs",
    "w_iter_min": "w_iter min (s)",
    "w_iter_max": "w_iter max (s)",
    "wfq_weight": "WFQ weight (B/round)",
    "rbfq_reservation": "RBFQ reservation (B/s)",
    "rbfq_weight": "RBFQ weight",
    "rbfq_limit": "RBFQ limit (B/s)",
}

_SET_FORMATS = {
    "priority": "{:.3g}",
    "w_iter min (s)": "{:.4g}",
    "w_iter max (s)": "{:.4g}",
    "WFQ weight (B/round)": "{:,}",
    "RBFQ reservation (B/s)": "{:,.0f}",
    "RBFQ weight": "{:.4g}",
    "RBFQ limit (B/s)": "{:,.0f}",
}

_BARS = (
    ("priority", "priority"),
    ("RBFQ weight", "RBFQ weight"),
    ("WFQ weight (B/round)", "WFQ weight (bytes per round)"),
)


def recommendation_section(inputs: ReportInputs) -> Section:
    """The "Recommendation" section: one row per set, the conservative set, and the export files.

    Parameters
    ----------
    inputs : ReportInputs
        ``recommendation`` (RECOMMENDED_JOBS) is read; without it the section says what to run.

    Returns
    -------
    Section
        Section ``recommendation``: the per-set table (``iosets.recommender.set_summary`` with each set's
        jobs on thin evidence), priorities and weights per set as bars on a log axis, and a table of
        ``iosets export`` formats, the files each writes and what applies them.
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
    rec_file = Path(inputs.sources.get("recommendation", "rec.parquet")).name
    exports = export_table(rec_file)
    return Section(
        id="recommendation",
        title=title,
        reading=_reading(recommended, sets, rec_file),
        figures=(_weights_figure(sets),),
        tables=(
            Table("recommendation-sets", "The recommendation per set", sets, formats=_SET_FORMATS),
            Table("recommendation-exports", "Files that apply it", exports),
        ),
    )


def set_table(recommended: pl.DataFrame) -> pl.DataFrame:
    """``iosets.recommender.set_summary`` with each set's jobs on thin evidence, columns named for a reader."""
    from ..recommender import set_summary

    thin = recommended.group_by("set").agg(pl.col("conservative").sum().cast(pl.UInt32).alias("conservative jobs"))
    summary = set_summary(recommended).join(thin, on="set", how="left", maintain_order="left")
    return summary.select(list(_SET_COLUMNS)).rename(_SET_COLUMNS)


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


def _weights_figure(sets: pl.DataFrame) -> Figure:
    """Per set, grouped bars of its priority, RBFQ weight and WFQ weight on one log axis."""
    labels = [label for _, label in _BARS]
    traces = []
    for row in sets.iter_rows(named=True):
        values = [row[column] for column, _ in _BARS]
        hover = [f"set {row['set']}<br>{label}: {value:.4g}" for label, value in zip(labels, values, strict=True)]
        traces.append(bar_trace(labels, values, name=f"set {row['set']}", colour=set_colour(row["set"]), hover=hover))
    layout = figure_layout(
        xaxis=category_axis("parameter"), yaxis=number_axis("value (log scale)", log=True), barmode="group"
    )
    note = "Values differ by orders of magnitude (the WFQ weight is in bytes): the axis is logarithmic."
    return Figure("recommendation-weights", "Priority and weights per set", traces, layout, note=note)


def _reading(recommended: pl.DataFrame, sets: pl.DataFrame, rec_file: str) -> str:
    """One paragraph: how many sets, the extremes' priorities, the conservative set, reservations, how to apply."""
    if sets.height == 0:
        return "The recommendation holds no job: there is no set to show."
    first, last = sets.row(0, named=True), sets.row(-1, named=True)
    text = (
        f"The recommendation puts {counted(recommended.height, 'job')} in {counted(sets.height, 'set')}. "
        "A smaller set number means a "
        f"shorter characteristic time and a higher priority: set {first['set']} gets priority {first['priority']:.3g} "
        f"and set {last['set']} {last['priority']:.3g}: when both do I/O at once, RBFQ weighs set {first['set']} "
        f"{first['RBFQ weight'] / last['RBFQ weight']:.4g} times set {last['set']}, and WFQ serves "
        f"{first['WFQ weight (B/round)']:,} against {last['WFQ weight (B/round)']:,} bytes per round. "
        "Within a set, one job does I/O at a time."
    )
    thin = int(recommended["conservative"].sum())
    chosen = conservative_set(recommended)
    if chosen is None:
        text += " No job is on thin evidence, so no job needed the conservative set."
    else:
        text += (
            f" {counted(thin, 'job')} {'is' if thin == 1 else 'are'} on thin evidence (no confident w_iter, or not"
            f" periodic): they go to set {chosen}, "
            "the conservative set, or a lower-priority one, never ahead of a job whose rhythm is known."
        )
    reserved = sets["RBFQ reservation (B/s)"]
    if reserved.null_count() < reserved.len():
        text += f" RBFQ reserves {format_bytes(float(reserved.sum()))}/s in all across the sets."
    return text + (
        f" `iosets export {rec_file} --format F` writes the files of the last table: each says what it assumes in its"
        " first lines."
    )
