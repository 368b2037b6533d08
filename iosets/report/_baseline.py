"""The baseline the report compares policies with (the policy the site runs today), and when a change is none.

The verdict, the scheduler comparison and the impact by user and app all compare a replayed policy with one
baseline: the scheduler ``iosets report --baseline NAME`` names (default fcfs). A change within
:data:`NO_CHANGE` of the baseline's value is reported as no change, in every section alike.
"""

from __future__ import annotations

from ..errors import InputError
from ._document import ReportInputs
from ._format import format_number

DEFAULT_BASELINE = "fcfs"
"""The baseline when none is named and the replay holds it (else the replay's first scheduler)."""

NO_CHANGE = 0.01
"""A relative change at most this large (1 %), or none, is reported as no change: a tie."""

NO_CHANGE_BAND = f"±{format_number(100 * NO_CHANGE)} %"
"""The tolerance as the readings write it (``"±1 %"``)."""

NO_CHANGE_TEXT = f"within {NO_CHANGE_BAND} of the baseline's value"
"""How the readings state the tolerance."""


def scheduler_order(inputs: ReportInputs) -> list[str]:
    """The replay's schedulers in the order given (the per-scheduler table's, then the per-job and per-phase ones)."""
    order: list[str] = []
    for frame in (inputs.replay_schedulers, inputs.replay_jobs, inputs.replay_phases):
        if frame is not None:
            order += [p for p in frame["scheduler"].unique(maintain_order=True).to_list() if p not in order]
    return order


def check_baseline(inputs: ReportInputs, baseline: str | None) -> str | None:
    """``baseline`` when the replay holds it (or when there is no replay and it is a scheduler iosets knows).

    Raises
    ------
    InputError
        ``baseline`` is not a scheduler of the trace replay (the message lists those it holds), or, without a
        replay, not a scheduler iosets replays.
    """
    if baseline is None:
        return None
    order = scheduler_order(inputs)
    if order:
        if baseline not in order:
            where = inputs.sources.get("replay_jobs", "the trace replay")
            raise InputError(f"baseline {baseline!r}: not a scheduler of {where}; it holds {', '.join(order)}")
        return baseline
    from ..replay import SCHEDULERS

    if baseline not in SCHEDULERS:
        known = ", ".join(SCHEDULERS)
        raise InputError(f"baseline {baseline!r}: not a scheduler iosets replays; expected one of {known}")
    return baseline


def baseline_of(inputs: ReportInputs) -> str | None:
    """The scheduler others are compared with: the named baseline, else fcfs when the replay holds it, else the
    replay's first scheduler; None without a replay."""
    order = scheduler_order(inputs)
    if not order:
        return None
    if inputs.baseline is not None and inputs.baseline in order:
        return inputs.baseline
    return DEFAULT_BASELINE if DEFAULT_BASELINE in order else order[0]


def baseline_words(inputs: ReportInputs) -> str:
    """How the readings name the baseline: ``"fcfs (the baseline: the policy the site runs today)"`` and why."""
    baseline = baseline_of(inputs)
    if inputs.baseline is not None:
        return f"{baseline} (the baseline named by --baseline: the policy the site runs today)"
    if baseline == DEFAULT_BASELINE:
        return f"{baseline} (the default baseline; name the policy the site runs today with --baseline NAME)"
    return (
        f"{baseline} (the replay's first scheduler: it holds no {DEFAULT_BASELINE}; name the policy the site runs "
        "today with --baseline NAME)"
    )


def relative_change(value: float | None, base: float | None) -> float | None:
    """``value / base - 1``; 0 when both are equal (0 included), None when either is undefined or base is 0.

    Examples
    --------
    >>> relative_change(1.1, 1.0), relative_change(0.0, 0.0), relative_change(1.0, None)
    (0.10000000000000009, 0.0, None)
    """
    if value is None or base is None:
        return None
    if value == base:
        return 0.0
    return None if base == 0 else value / base - 1


def judge(change: float | None, *, higher_is_better: bool) -> str:
    """``"better"``, ``"worse"`` or ``"no change"`` (within :data:`NO_CHANGE`) for a relative change;
    ``"undefined"`` for None.

    Examples
    --------
    >>> judge(-0.05, higher_is_better=False), judge(0.005, higher_is_better=False), judge(None, higher_is_better=True)
    ('better', 'no change', 'undefined')
    """
    if change is None:
        return "undefined"
    if abs(change) <= NO_CHANGE:
        return "no change"
    return "better" if (change > 0) == higher_is_better else "worse"


RECOMMENDED_SCHEDULERS = ("iosets-wfq", "rbfq")
"""The replay's schedulers that apply a recommendation's sets (iosets-wfq its WFQ weights, rbfq its RBFQ
parameters; ``iosets.replay``'s set schedulers), in the order the verdict prefers them."""


def recommended_scheduler(inputs: ReportInputs) -> str | None:
    """The replayed scheduler that applies the recommendation: the first of :data:`RECOMMENDED_SCHEDULERS` the
    replay holds other than the baseline; None when it holds none."""
    order, baseline = scheduler_order(inputs), baseline_of(inputs)
    return next((name for name in RECOMMENDED_SCHEDULERS if name in order and name != baseline), None)
