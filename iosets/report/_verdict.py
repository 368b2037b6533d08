"""Section "Verdict", the first of the page: which mapping, what it would change against the policy the site runs
today, on how much evidence, how far the model is trusted, and what to beware of.

Every number is read from the inputs as the other sections read them: the platform's metrics from the replay's
per-scheduler table, the model check through :func:`iosets.replay.model_check` on the rows the model-check section
reads, the evidence from the recommendation's ``conservative`` flag (the recommender's thin-evidence rule). What an
absent input leaves unjudged is said, with the command that gives it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ._baseline import (
    NO_CHANGE,
    NO_CHANGE_TEXT,
    RECOMMENDED_SCHEDULERS,
    baseline_of,
    baseline_words,
    judge,
    recommended_scheduler,
    relative_change,
    scheduler_order,
)
from ._busy import overlapped_share
from ._document import ReportInputs, Section, Table
from ._format import counted, format_change, format_count, format_date, format_ratio, format_share, listed
from ._plots import epoch_dated
from ._recommendation import conservative_set, mapping_of
from ._scheduler import COMPARED_METRICS, candidate_sets, tuning_best

if TYPE_CHECKING:
    from ..replay import ModelCheck

SECTION_ID = "verdict"
TITLE = "Verdict"

BARELY_OVERLAP = 0.25
"""Share of the jobs' run time spent with another job running below which the jobs barely overlap."""

FEW_TUNED = 0.5
"""Share of the jobs a tuning replays below which the verdict warns that it used few jobs."""

APPLIED_BY = {
    "iosets-wfq": "one class per set, weighted by its WFQ weight",
    "rbfq": "one class per set, with its RBFQ weight, reservation and limit",
}
"""How each recommended scheduler applies the recommendation's sets in the replay."""


def verdict_section(inputs: ReportInputs) -> Section:
    """Build the "Verdict" section from every input it can read.

    Parameters
    ----------
    inputs : ReportInputs
        Reads ``recommendation``, ``replay_schedulers``, ``replay_jobs``, ``replay_phases``, ``tune``, ``jobs`` and
        ``baseline``; each one absent leaves a part unjudged, said in the reading with the command that gives it.

    Returns
    -------
    Section
        Id ``"verdict"``: a reading in paragraphs (mapping, predicted change, evidence, model check, tuning,
        warnings) and, with a replay that applies the recommendation, the table of the five metrics under the
        baseline and the recommended scheduler.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.report._inputs import read_inputs
    >>> section = verdict_section(read_inputs(pl.DataFrame({"job_id": ["a"], "w_iter": [8.0]})))
    >>> section.id, section.missing, "Not judged" in section.reading
    ('verdict', None, True)
    """
    prediction, table = _prediction(inputs)
    paragraphs = [_headline(inputs, table), _mapping(inputs)]
    paragraphs += [prediction, _evidence(inputs), _model(inputs), _tuning(inputs)]
    warnings = _warnings(inputs)
    if warnings:
        paragraphs.append("Warnings. " + " ".join(warnings))
    return Section(
        SECTION_ID,
        TITLE,
        reading="\n\n".join(paragraph for paragraph in paragraphs if paragraph),
        tables=() if table is None else (table,),
    )


# ------------------------------------------------------------------------------------------ the headline


def _headline(inputs: ReportInputs, table: Table | None) -> str:
    """The verdict in one or two sentences: what changes, and what weakens it."""
    if table is None:
        return (
            "In short: the inputs given hold no replay of the recommendation; each part below says what it could not "
            "judge and the command that gives it."
        )
    frame = table.frame
    readings = frame["reading"].to_list()
    judged = sum(reading != "undefined" for reading in readings)
    better, worse = readings.count("better"), readings.count("worse")
    text = f"In short: {table.title}: "
    if better == worse == 0:
        text += f"no change on any of the {judged} metrics (a tie)."
    else:
        text += f"better on {better} of {judged} metrics, worse on {worse or 'none'}."
    caveats = []
    check = _checked(inputs)
    if check is not None and not check.trusted:
        caveats.append("the model check does not trust these predictions")
    rec = inputs.recommendation
    if rec is not None and rec.height and int((~rec["conservative"]).sum()) < rec.height / 2:
        caveats.append("most jobs are on thin evidence")
    overlap = _overlap(inputs)
    if overlap is not None and overlap < BARELY_OVERLAP:
        caveats.append("the jobs barely overlap")
    if caveats:
        text += f" Read it with care: {listed(caveats)} (below)."
    return text


# ------------------------------------------------------------------------------------------ the mapping


def _source(inputs: ReportInputs, name: str, default: str) -> str:
    """The file name an input was read from, else ``default`` (as the commands name it)."""
    return Path(inputs.sources[name]).name if name in inputs.sources else default


def _mapping(inputs: ReportInputs) -> str:
    """Which mapping the recommendation uses, its sets and its conservative set."""
    rec = inputs.recommendation
    if rec is None:
        if not _analyzed(inputs.jobs):
            return (
                "Not judged: which mapping. The jobs table has no w_iter: `iosets analyze LOGS -o jobs.parquet` "
                "finds each job's period, then `iosets recommend jobs.parquet -o rec.parquet` maps the jobs to sets "
                "(give `--rec rec.parquet`)."
            )
        jobs = _source(inputs, "jobs", "jobs.parquet")
        return (
            f"Not judged: which mapping. No recommendation given: `iosets recommend {jobs} -o rec.parquet` maps the "
            "jobs to sets (give `--rec rec.parquet`)."
        )
    if rec.height == 0:
        return "The recommendation holds no job: there is no mapping to judge."
    counts = rec.group_by("set").len().sort("set")
    mapping = mapping_of(rec)
    named = f"{mapping.upper()} (set s has priority {mapping.removeprefix('set-')}^-s)" if mapping else None
    if counts.height == 1:
        how = named or "one set"
        text = f"Recommended: {how}, {_all_in(rec.height)} set {counts['set'][0]}."
    else:
        how = named or "a mapping whose priorities follow no base (gmm)"
        shown = [f"set {s} ({counted(n, 'job')})" for s, n in counts.head(8).iter_rows()]
        more = f" and {counted(counts.height - 8, 'more set')}" if counts.height > 8 else ""
        text = (
            f"Recommended: {how}, {counted(rec.height, 'job')} in {counted(counts.height, 'set')}: "
            f"{listed(shown)}{more}."
        )
    chosen = conservative_set(rec)
    if chosen is not None:
        thin = int(rec["conservative"].sum())
        text += (
            f" Set {chosen} is the conservative set: {counted(thin, 'job')} on thin evidence "
            f"{'goes' if thin == 1 else 'go'} there or lower, never ahead of a job whose rhythm is known."
        )
    return text


def _analyzed(jobs: pl.DataFrame) -> bool:
    """Whether a jobs table holds any analysis (a w_iter, a confidence or a not_periodic code)."""
    names = [name for name in ("w_iter", "w_iter_confidence", "not_periodic") if name in jobs.columns]
    return any(jobs[name].is_not_null().any() for name in names)


def _all_in(n: int) -> str:
    """ "its one job in", "both jobs in", "all 3 jobs in"."""
    if n == 1:
        return "its one job in"
    return "both jobs in" if n == 2 else f"all {counted(n, 'job')} in"


# ------------------------------------------------------------------------------------- the prediction


def _replay_steps(inputs: ReportInputs) -> str:
    """The commands that give a trace replay of the recommendation from what is given."""
    baseline = inputs.baseline or "fcfs"
    compare = ",".join(dict.fromkeys([baseline, "wfq", "iosets-wfq"]))
    rec = _source(inputs, "recommendation", "rec.parquet")
    steps = []
    if inputs.recommendation is None and not _analyzed(inputs.jobs):
        steps.append("`iosets analyze LOGS -o jobs.parquet`, `iosets recommend jobs.parquet -o rec.parquet`")
    elif inputs.recommendation is None:
        steps.append(f"`iosets recommend {_source(inputs, 'jobs', 'jobs.parquet')} -o rec.parquet`")
    site = _source(inputs, "site", "site.parquet")
    if inputs.site is None:
        steps.append("`iosets ingest LOGS --site -o site.parquet`")
    steps.append(f"`iosets replay-trace {site} --rec {rec} --compare {compare} -o perjob.parquet`")
    return ", then ".join(steps) + " (give `--replay perjob.parquet`)"


def _prediction(inputs: ReportInputs) -> tuple[str, Table | None]:
    """The predicted change of the five metrics, recommended scheduler against the baseline, in words and a table."""
    order = scheduler_order(inputs)
    if not order:
        steps = _replay_steps(inputs)
        return f"Not judged: what the recommendation would change. It needs a trace replay: {steps}.", None
    baseline = baseline_of(inputs)
    assert baseline is not None  # the replay holds a scheduler
    chosen = recommended_scheduler(inputs)
    if chosen is None and baseline in RECOMMENDED_SCHEDULERS:
        return (
            f"Not judged: what the recommendation would change. The baseline, {baseline}, is itself the scheduler that "
            "applies the recommendation's sets: the site runs it today, and the replay holds no other that does. "
            "The scheduler comparison below says what the other policies would change.",
            None,
        )
    if chosen is None:
        return (
            f"Not judged: what the recommendation would change. The replay holds {listed(order)}: none applies "
            f"the recommendation's sets (iosets-wfq or rbfq). {_replay_steps(inputs).capitalize()}.",
            None,
        )
    schedulers = inputs.replay_schedulers
    if schedulers is None:
        return (
            "Not judged: the platform's metrics. The replay's per-scheduler table (written beside the per-job one, "
            "`perjob.schedulers.parquet`) was not found; replay again: " + _replay_steps(inputs) + ".",
            None,
        )
    rows = {row["scheduler"]: row for row in schedulers.iter_rows(named=True)}
    if baseline not in rows or chosen not in rows:
        absent = baseline if baseline not in rows else chosen
        return f"Not judged: the platform's metrics. The replay's per-scheduler table has no row for {absent}.", None
    frame = _metrics_frame(rows[baseline], rows[chosen])
    table = Table(
        "verdict-metrics",
        f"{chosen} (the recommendation) against {baseline} (the baseline)",
        frame,
        formats={"baseline": "ratio", "recommended": "ratio", "change": "change"},
        note=f"change = recommended / baseline - 1; no change: {NO_CHANGE_TEXT}. Higher Utilization is better, lower "
        "IO-slowdown and stretches are better.",
    )
    return _prediction_text(inputs, frame, chosen), table


def _metrics_frame(base: dict, mine: dict) -> pl.DataFrame:
    """Per metric: baseline and recommended values, relative change, and the reading (better, worse, no change)."""
    records = []
    for column, label, higher_is_better in COMPARED_METRICS:
        change = relative_change(mine[column], base[column])
        records.append(
            {
                "metric": label,
                "baseline": base[column],
                "recommended": mine[column],
                "change": change,
                "reading": judge(change, higher_is_better=higher_is_better),
            }
        )
    schema = {"metric": pl.String, "baseline": pl.Float64, "recommended": pl.Float64, "change": pl.Float64}
    return pl.DataFrame(records, schema=schema | {"reading": pl.String})


def _prediction_text(inputs: ReportInputs, frame: pl.DataFrame, chosen: str) -> str:
    """The change of each metric, then both sides: better, no change, worse."""
    clauses = []
    for row in frame.iter_rows(named=True):
        if row["reading"] == "undefined":
            clauses.append(f"{row['metric']} undefined in the replay's window")
            continue
        clauses.append(
            f"{row['metric']} {format_ratio(row['baseline'])} → {format_ratio(row['recommended'])} "
            f"({format_change(row['change'])}, {row['reading']})"
        )
    text = (
        f"Predicted change. Against {baseline_words(inputs)}, {chosen} ({APPLIED_BY[chosen]}) gives: "
        f"{'; '.join(clauses)}."
    )
    readings = frame["reading"].to_list()
    better = [m for m, r in zip(frame["metric"], readings, strict=True) if r == "better"]
    worse = [m for m, r in zip(frame["metric"], readings, strict=True) if r == "worse"]
    same = [m for m, r in zip(frame["metric"], readings, strict=True) if r == "no change"]
    judged = len(better) + len(worse) + len(same)
    if judged and not better and not worse:
        return text + f" No metric changes ({NO_CHANGE_TEXT}): a tie; the replay tells the two policies apart on none."
    text += f" Better on {len(better)} of {judged} metrics"
    text += f" ({listed(better)})" if better else ""
    text += f", worse on {listed(worse)}" if worse else ", worse on none"
    text += f", no change on {listed(same)} ({NO_CHANGE_TEXT})." if same else "."
    return text


# ------------------------------------------------------------------------------------------ the evidence


def _share(value: float) -> str:
    """A share as :func:`format_share` writes it, but "under 0.1 %" for a share it would round to 0.0 %."""
    return "under 0.1 %" if 0 < value < 0.0005 else format_share(value)


def _job_bytes(frame: pl.DataFrame) -> pl.Series | None:
    """Bytes read plus written per job; None when the table has neither column or they are all null."""
    names = [name for name in ("bytes_read", "bytes_written") if name in frame.columns]
    if not names or all(frame[name].is_null().all() for name in names):
        return None
    return frame.select(pl.sum_horizontal(pl.col(names).fill_null(0.0)).alias("bytes")).to_series()


def _evidence(inputs: ReportInputs) -> str:
    """The share of jobs and of bytes whose set rests on a confident period, and where those periods came from."""
    rec = inputs.recommendation
    if rec is None or rec.height == 0:
        return "Not judged: how many jobs rest on a confident period (it needs the recommendation, above)."
    confident = ~rec["conservative"]
    n = int(confident.sum())
    text = (
        f"Evidence. {format_share(n / rec.height)} of the jobs ({format_count(n)} of {counted(rec.height, 'job')}) "
        "rest on a confident period: a w_iter whose confidence passes the recommender's min_confidence (0.5 unless "
        "set) and no not_periodic code"
    )
    sizes = _job_bytes(rec)
    total = None if sizes is None else float(sizes.sum())
    if total and sizes is not None:
        moved = float(sizes.filter(confident).sum()) / total
        text += f"; they move {_share(moved)} of the bytes"
    text += "."
    if "source" in rec.columns and n:
        sources = rec.filter(confident).group_by("source").len().sort("len", "source", descending=[True, False])
        named = [f"{source} ({counted(k, 'job')})" for source, k in sources.iter_rows() if source is not None]
        if named:
            text += f" Their periods come from {listed(named)}."
    thin = rec.filter(rec["conservative"])
    if thin.height:
        text += " The other job is" if thin.height == 1 else f" The {thin.height:,} others are"
        text += " on thin evidence"
        if "not_periodic" in thin.columns:
            codes = thin.select(pl.col("not_periodic").fill_null("low confidence or no w_iter")).to_series()
            counts = codes.value_counts(sort=True, name="n").sort("n", "not_periodic", descending=[True, False])
            text += " (" + ", ".join(f"{code} {format_count(k)}" for code, k in counts.iter_rows()) + ")"
        text += ": their set is the conservative one, chosen for safety, not read from a known rhythm."
    return text


# --------------------------------------------------------------------------------------- the model check


def _checked(inputs: ReportInputs) -> ModelCheck | None:
    """The model check of the replay's first scheduler's rows (the model-check section's); None without a replay."""
    from ..replay import model_check

    jobs = inputs.replay_jobs
    if jobs is None or jobs.height == 0:
        return None
    first = str(jobs["scheduler"][0])
    return model_check(jobs.filter(pl.col("scheduler") == first))


def _model(inputs: ReportInputs) -> str:
    """The model check's grade, read as the model-check section reads it."""
    from ._model_check import CALIBRATE_COMMAND

    check = _checked(inputs)
    if check is None:
        return "Not judged: the model check (it needs the trace replay, above)."
    if check.n_jobs == 0:
        return f"Model check: not trusted. {check.warning}."
    numbers = (
        f"over {counted(check.n_jobs, 'job')} replayed alone, |alone / recorded - 1| has median "
        f"{format_share(check.median)} and p90 {format_share(check.p90)} (threshold {format_share(check.threshold)})"
    )
    if check.trusted:
        text = f"Model check: trusted; {numbers}: the predicted changes rest on a model that reproduces these jobs."
        if check.median is not None and check.median > NO_CHANGE:
            text += " Its median error is larger than the verdict's tolerance: read changes of a few per cent as ties."
        return text
    return (
        f"Model check: not trusted; {numbers}: the predicted changes above rest on a model that does not reproduce "
        f"these jobs alone. Calibrate the device (`{CALIBRATE_COMMAND}`) and replay with `--device dev.json`."
    )


# ------------------------------------------------------------------------------------------- the tuning


def _tuning(inputs: ReportInputs) -> str:
    """Whether the tuning's best mapping is the recommendation's; which one the verdict uses and why."""
    tune, rec = inputs.tune, inputs.recommendation
    if tune is None:
        if _tunable(inputs.jobs) == 0:
            return (
                "Not judged: whether another mapping would do better. The tuning replays periodic jobs with an "
                "alpha_io, and this jobs table has none: a tuning would have nothing to rank."
            )
        jobs = _source(inputs, "jobs", "jobs.parquet")
        return (
            "Not judged: whether another mapping would do better. "
            f"`iosets tune {jobs} -o ranking.parquet` ranks the candidate mappings (give `--tune ranking.parquet`)."
        )
    if tune.height == 0 or rec is None or rec.height == 0:
        return ""
    best = tuning_best(tune)
    names = best["mapping"].to_list()
    first = names[0] if len(names) == 1 else f"{listed(names)} (tied)"
    mapping = mapping_of(rec)
    n_sets = rec["set"].n_unique()
    confident_sets = rec.filter(~pl.col("conservative"))["set"].n_unique()
    if mapping is not None and mapping in names:
        text = f"Tuning: it ranks {first} first; the recommendation's {mapping} is among them: they agree."
        tuned = best.filter(pl.col("mapping") == mapping)["n_sets"][0]
        if tuned != n_sets:
            text += " " + _set_counts(int(tuned), n_sets, confident_sets)
        return text
    top = best.row(0, named=True)
    where = "does not rank the recommendation's mapping"
    if mapping is not None and mapping in tune["mapping"].to_list():
        where = f"ranks the recommendation's {mapping} {_tied_rank(tune, mapping)}"
    text = (
        f"Tuning and recommendation disagree: the tuning ranks {first} first ({candidate_sets(top)}) and "
        f"{where}, while the recommendation has {counted(n_sets, 'set')}. The verdict judges the recommendation, "
        "because the trace replay replayed its sets on the site's own requests"
    )
    used = _tunable(inputs.jobs)
    site_tuned = "idealised_rank" in tune.columns and tune["idealised_rank"].is_not_null().any()
    if used and not site_tuned:  # `iosets tune --site` ranks by the trace replay of every site job
        given = counted(inputs.jobs.height, "job")
        text += f"; the tuning replayed {format_count(used)} of {given} as idealised periodic jobs"
    text += "."
    if top["mapping"] == "fair-share":
        text += " FAIR-SHARE is no mapping to recommend: the replay's wfq (one class per job) runs it."
    else:
        jobs = _source(inputs, "jobs", "jobs.parquet")
        text += (
            f" To judge {top['mapping']}: `iosets recommend {jobs} --mapping {top['mapping']} -o rec.parquet`, "
            "replay and report again."
        )
    return text


def _tied_rank(tune: pl.DataFrame, mapping: str) -> str:
    """``"at rank 3"``: a mapping's rank in the tuning, ties sharing one (:func:`tied_ranks`)."""
    from ._scheduler import tied_ranks

    rank = int(tied_ranks(tune).filter(pl.col("mapping") == mapping)["tied_rank"][0])
    return f"at rank {rank}"


def _set_counts(tuned: int, n_sets: int, confident_sets: int) -> str:
    """Why the tuning's count of sets differs from the recommendation's."""
    if tuned == confident_sets:
        return (
            f"The tuning counts {counted(tuned, 'set')} and the recommendation {n_sets}: the tuning replays only "
            f"jobs with a known period, which fall in {counted(confident_sets, 'set')}; the recommendation adds the "
            "conservative set of the jobs on thin evidence."
        )
    return (
        f"The tuning counts {counted(tuned, 'set')} and the recommendation {n_sets}: the tuning counts the sets of "
        "the jobs it replayed, the recommendation those of every job."
    )


def _tunable(jobs: pl.DataFrame) -> int:
    """Jobs :func:`iosets.replay.tune_selection` keeps (0 when the table lacks w_iter or alpha_io)."""
    if "w_iter" not in jobs.columns or "alpha_io" not in jobs.columns:
        return 0
    from ..replay import tune_selection

    return tune_selection(jobs).jobs.height


# ------------------------------------------------------------------------------------------- warnings


def _runs(inputs: ReportInputs) -> tuple[np.ndarray, np.ndarray] | None:
    """Each job's ``(start, end)``: the trace replay's recorded phases when given (the clock its predictions are
    made on), else the jobs table's dates (those since the epoch when any is); None without."""
    phases = inputs.replay_phases
    if phases is not None and phases.height > 0:
        first = phases["scheduler"][0]
        spans = (
            phases.filter(pl.col("scheduler") == first)
            .group_by("job_id")
            .agg(pl.col("recorded_start").min(), pl.col("recorded_end").max())
        )
        return spans["recorded_start"].to_numpy(), spans["recorded_end"].to_numpy()
    jobs = inputs.jobs
    if "start" in jobs.columns and "end" in jobs.columns:
        dated = epoch_dated(jobs)
        if dated.height >= 2:
            return tuple(dated[name].cast(pl.Float64).fill_null(np.nan).to_numpy() for name in ("start", "end"))  # type: ignore[return-value]
    return None


def _overlap(inputs: ReportInputs) -> float | None:
    """:func:`overlapped_share` of the jobs' runs (:func:`_runs`); None without two runs of some length."""
    runs = _runs(inputs)
    if runs is None or np.isfinite(runs[0]).sum() < 2:
        return None
    start, end = (pl.Series(values, dtype=pl.Float64, nan_to_null=True) for values in runs)
    timed = pl.DataFrame({"start": start, "end": end}).filter(pl.col("end") > pl.col("start"))
    return overlapped_share(timed) if timed.height >= 2 else None


def _warnings(inputs: ReportInputs) -> list[str]:
    """Jobs barely overlapping, a tuning on few jobs, capped WFQ weights."""
    warnings = []
    runs = _runs(inputs)
    share = _overlap(inputs)
    if runs is not None and share is not None and share < BARELY_OVERLAP:
        dated, ended = runs[0][np.isfinite(runs[0])], runs[1][np.isfinite(runs[1])]
        warnings.append(
            f"The jobs barely overlap: {_share(share)} of their run time is spent with another job running "
            f"(under {format_share(BARELY_OVERLAP)}), between {format_date(float(dated.min()))} and "
            f"{format_date(float(ended.max()))}. A scheduler changes only what runs at the same time: the "
            "predicted changes concern a small part of the site's time."
        )
    if inputs.tune is not None:
        used, given = _tunable(inputs.jobs), inputs.jobs.height
        if used < FEW_TUNED * given:
            warnings.append(
                "The tuning used few jobs: it replays only the periodic jobs with an alpha_io, "
                f"{format_count(used)} of {counted(given, 'job')} of the jobs table (fewer with `--overlap`); its "
                "ranking speaks for those."
            )
    rec = inputs.recommendation
    if rec is not None:
        from ..recommender import AGIOS_MAX_WEIGHT

        capped = rec.filter(pl.col("wfq_weight") >= AGIOS_MAX_WEIGHT)["set"].unique().sort().to_list()
        if capped:
            names = listed([f"set {s}" for s in capped])
            replayed = ""
            if "iosets-wfq" in scheduler_order(inputs):
                replayed = " (the replay's iosets-wfq used them as they are)"
            warnings.append(
                f"WFQ weights saturate: {names} {'hits' if len(capped) == 1 else 'hit'} "
                f"{format_count(AGIOS_MAX_WEIGHT)} bytes per round, the largest AGIOS holds{replayed}, so WFQ serves "
                "them less than their priorities ask (the recommendation section says how to keep the ratios)."
            )
    return warnings
