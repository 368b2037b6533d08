"""Section "Simulator against real runs": ``iosets validate``'s runs against the phase engine, as the IO-SETS paper's
Fig. 4 (a box per policy over the runs, the simulated value as a line), and the paper's criterion per policy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from ..validate import CRITERION, CRITERION_SHARE, METRICS, POLICIES
from ._document import Figure, ReportInputs, Section, Table
from ._format import counted, format_rate, format_share
from ._palette import policy_colour as _palette_colour
from ._plots import box_trace, category_axis, figure_layout, fraction_axis, json_values, stretch_axis

if TYPE_CHECKING:
    from ..validate import PolicyValidation, Validation

SECTION_ID = "validation"
TITLE = "Simulator against real runs"

VALIDATE_COMMAND = "iosets validate --dir DIR -o validation.json"

METRIC_LABELS = {"utilization": "Utilization", "io_slowdown": "IO-slowdown", "max_stretch": "Max Stretch"}
"""How the section names each of the validation's metrics."""

BOX_WIDTH = 0.5
"""A box's width, in policies (the gap between two policies' boxes is 1 - BOX_WIDTH)."""

SIMULATED_COLOUR = "#000000"
"""The simulated value's mark and its tolerance whiskers."""


def policy_colour(policy: str) -> str:
    """The colour of a validated policy in every plot of the section: the report's neutral policy colour of its place
    among the validate room's policies (never a set's colour)."""
    return _palette_colour(POLICIES.index(policy))


def validation_section(inputs: ReportInputs) -> Section:
    """Build the "Simulator against real runs" section from ``iosets validate``'s result.

    Parameters
    ----------
    inputs : ReportInputs
        Reads ``validation`` (``iosets validate -o validation.json``).

    Returns
    -------
    Section
        Id ``"validation"``: one figure per metric (a box per policy over its runs, the simulated value as a
        black line with the paper's tolerance), one table per policy; a missing box naming ``iosets validate``
        when no validation is given.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.report._inputs import read_inputs
    >>> section = validation_section(read_inputs(pl.DataFrame({"job_id": ["a"]})))
    >>> section.missing.startswith("No validation given")
    True
    """
    validation = inputs.validation
    if validation is None:
        return Section(
            SECTION_ID,
            TITLE,
            reading="This section checks the phase engine against real runs of a workload on the site's own storage, "
            "as the IO-SETS paper did before trusting its simulator; it needs the result of `iosets validate`.",
            missing=(
                f"No validation given. Run a workload for real on the storage under each policy: `{VALIDATE_COMMAND}`, "
                "and give `--validation validation.json` to `iosets report`."
            ),
        )
    figures = tuple(figure for metric in METRICS if (figure := _metric_figure(validation, metric)) is not None)
    tables = tuple(_policy_table(outcome) for outcome in validation.policies.values())
    return Section(SECTION_ID, TITLE, _reading(validation), figures=figures, tables=tables)


# ------------------------------------------------------------------------------------------- reading


def _reading(validation: Validation) -> str:
    """What ran, the paper's criterion, and each policy's share of runs within its tolerances, in words."""
    utilization, stretch = format_share(CRITERION["utilization"]), format_share(CRITERION["max_stretch"])
    workload = validation.workload
    opening = (
        f"The workload ran for real on the storage, {counted(workload.n_jobs, 'job')} at the measured bandwidth "
        f"B = {format_rate(validation.bandwidth)}, and the phase engine replayed it at that B. The IO-SETS paper "
        f"(section VI-A, Fig. 4) trusted its simulator because at least {format_share(CRITERION_SHARE)} of the real "
        f"runs lay within {utilization} of the simulated Utilization and within {stretch} of its Max Stretch."
    )
    sentences = [_policy_reading(outcome) for outcome in validation.policies.values()]
    meet = [policy for policy, outcome in validation.policies.items() if outcome.meets_criterion()]
    miss = [policy for policy in validation.policies if policy not in meet]
    if not miss:
        verdict = f"Every policy validated meets the paper's criterion: {', '.join(meet)}."
    elif not meet:
        verdict = f"No policy validated meets the paper's criterion ({', '.join(miss)})."
    else:
        verdict = f"Meet the paper's criterion: {', '.join(meet)}; miss it: {', '.join(miss)}."
    return "\n\n".join([opening, " ".join(sentences), verdict])


def _policy_reading(outcome: PolicyValidation) -> str:
    """``set-10 meets the paper's criterion: 3 of its 3 runs lie within 3.5 % of the simulated Utilization (100.0 %)
    and 3 within 1.5 % of its Max Stretch (100.0 %).``"""
    runs = len(outcome.measured["utilization"])
    compared = (
        ""
        if outcome.simulated_policy == outcome.policy
        else f", compared with the phase engine's {outcome.simulated_policy},"
    )
    verdict = "meets the paper's criterion" if outcome.meets_criterion() else "misses the paper's criterion"
    utilization, stretch = outcome.within("utilization"), outcome.within("max_stretch")
    return (
        f"{outcome.policy}{compared} {verdict}: {round(utilization * runs)} of its {counted(runs, 'run')} lie within "
        f"{format_share(CRITERION['utilization'])} of the simulated Utilization ({format_share(utilization)}) and "
        f"{round(stretch * runs)} within {format_share(CRITERION['max_stretch'])} of its Max Stretch "
        f"({format_share(stretch)})."
    )


# ------------------------------------------------------------------------------------------- tables


def _policy_table(outcome: PolicyValidation) -> Table:
    """Per metric: the runs, the measured min, median and max, the simulated value, the median's difference, the
    paper's tolerance and the share of runs within it."""
    rows = outcome.summary()
    frame = pl.DataFrame(
        {
            "metric": [METRIC_LABELS[row["metric"]] for row in rows],
            "runs": [len(outcome.measured[row["metric"]]) for row in rows],
            **{column: [row[column] for row in rows] for column in ("min", "median", "max", "simulated")},
            "difference": [row["difference"] for row in rows],
            "tolerance": [CRITERION.get(row["metric"]) for row in rows],
            "within": [row["within"] for row in rows],
        },
        schema_overrides={
            name: pl.Float64 for name in ("min", "median", "max", "simulated", "difference", "tolerance", "within")
        },
    )
    return Table(
        f"validation-{outcome.policy}-table",
        f"{outcome.policy}: measured runs against the phase engine's {outcome.simulated_policy}",
        frame,
        formats={"difference": "change", "tolerance": "share", "within": "share"},
        note="difference = (median - simulated) / simulated; within: the share of runs whose value lies within the "
        "tolerance of the simulated one (a run without a value counts as outside). The paper sets no tolerance "
        "for IO-slowdown.",
    )


# ------------------------------------------------------------------------------------------- figures


def _metric_figure(validation: Validation, metric: str) -> Figure | None:
    """A box per policy over its runs, the runs as dots, and the simulated value as a black line with the paper's
    tolerance as whiskers (the paper's Fig. 4)."""
    label = METRIC_LABELS[metric]
    tolerance = CRITERION.get(metric)
    data: list[dict[str, Any]] = []
    values: list[float] = []
    for policy, outcome in validation.policies.items():
        colour = policy_colour(policy)
        runs = [(i + 1, v) for i, v in enumerate(outcome.measured[metric]) if v is not None]
        values += [v for _, v in runs]
        if runs:
            data.append({**box_trace([v for _, v in runs], name=policy, colour=colour), "width": BOX_WIDTH})
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "x": [policy] * len(runs),
                    "y": json_values([v for _, v in runs]),
                    "customdata": [i for i, _ in runs],
                    "marker": {"color": colour, "size": 7, "line": {"color": "#ffffff", "width": 1}},
                    "name": f"{policy} runs",
                    "hovertemplate": f"{policy} run %{{customdata}}<br>{label} %{{y:.4f}}<extra></extra>",
                }
            )
        simulated = getattr(outcome.simulated, metric)
        if simulated is not None:
            values += [simulated * (1 - (tolerance or 0)), simulated * (1 + (tolerance or 0))]
            data.append(_simulated_trace(policy, outcome.simulated_policy, simulated, label, tolerance))
    if not data:
        return None
    within = "" if tolerance is None else f", its whiskers the paper's tolerance (±{format_share(tolerance)})"
    note = (
        "A box per policy over its runs (quartiles; whiskers: min and max; dashed: mean), each run as a dot. "
        f"The black line is the phase engine's {label} of the same workload{within}."
    )
    return Figure(
        f"validation-{metric.replace('_', '-')}",
        f"{label}: real runs against the phase engine",
        data,
        figure_layout(
            xaxis=category_axis("policy"), yaxis=_metric_axis(metric, label, values), legend=False, height=360
        ),
        note=note,
    )


def _metric_axis(metric: str, label: str, values: list[float]) -> dict[str, Any]:
    """Utilization on a fraction's axis (0 to 1); IO-slowdown and Max Stretch on a stretch's axis (from 1)."""
    if metric == "utilization":
        return fraction_axis(label)
    return stretch_axis(label, values)


def _simulated_trace(
    policy: str, simulated_policy: str, value: float, label: str, tolerance: float | None
) -> dict[str, Any]:
    """The simulated value as a black line across the policy's place, with ± the tolerance as whiskers."""
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "markers",
        "x": [policy],
        "y": [value],
        "marker": {"symbol": "line-ew-open", "size": 48, "color": SIMULATED_COLOUR, "line": {"width": 3}},
        "name": f"{policy} simulated",
        "hovertemplate": f"{policy}: simulated ({simulated_policy}) {label} %{{y:.4f}}<extra></extra>",
    }
    if tolerance is not None:
        trace["error_y"] = {
            "type": "data",
            "array": [tolerance * abs(value)],
            "color": SIMULATED_COLOUR,
            "thickness": 1,
            "width": 10,
        }
    return trace
