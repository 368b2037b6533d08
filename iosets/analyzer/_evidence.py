"""Is a job's rhythm evidence enough for a period? The gates, in order, each with a short code and a sentence.

A period is declared only when every gate passes; otherwise the job is "not periodic" with the first
gate it failed. The codes are what the jobs table's ``not_periodic`` column holds:

======================  =====================================================================
code                    the job ...
======================  =====================================================================
``no_io``               moved no byte
``no_timeline``         has counters only (no DXT, no HEATMAP): nothing says *when* it did I/O
``few_bytes``           moved less than :data:`BYTE_FLOOR` bytes (console output, a config file)
``io_bound``            does I/O at least :data:`IO_BOUND` of its run: no compute between phases, by its
                        timeline's alpha_io or by its counters (:func:`counters_io_bound`)
``few_phases``          has fewer than :data:`MIN_PHASES` I/O phases
``irregular``           has phases, but no period explains their spacing with enough confidence
``short_run``           ran for fewer than :data:`MIN_PERIODS` periods
======================  =====================================================================
"""

from __future__ import annotations

from ..schemas import NOT_PERIODIC_CODES

MIN_PHASES = 3
"""I/O phases a period needs (two phases give one spacing, which anything can explain)."""
MIN_PERIODS = 3.0
"""Periods the run must last for its period to be trusted."""
BYTE_FLOOR = float(256 << 10)
"""Bytes under which a job's I/O is too little for its rhythm to matter (256 KiB: console output, a config file)."""
IO_BOUND = 0.9
COUNTERS_OVERLAP = 1.05
"""Counters' I/O time above this share of the run overlaps itself (threads, shared records): not a share of the run."""
"""alpha_io at and above which a job is I/O-bound rather than periodic."""

CODES = NOT_PERIODIC_CODES
"""Every ``not_periodic`` code, in the order the gates are tried."""


def size_text(n_bytes: float) -> str:
    """Bytes in the largest binary unit that keeps a number >= 1: ``1.5 MiB``."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.4g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def verdict(
    *,
    total_bytes: float,
    alpha_io: float,
    n_phases: int,
    w_iter: float | None,
    confidence: float,
    min_confidence: float,
    run: float,
) -> tuple[str | None, str]:
    """The first gate the rhythm fails (its code and a sentence), or ``(None, sentence)`` when it is periodic."""
    if total_bytes <= 0:
        return "no_io", "no I/O recorded"
    if total_bytes < BYTE_FLOOR:
        return "few_bytes", f"only {size_text(total_bytes)} of I/O, under the {size_text(BYTE_FLOOR)} floor"
    bound = _io_bound(alpha_io, None)
    if bound is not None:
        return bound
    if n_phases < MIN_PHASES:
        return "few_phases", f"{n_phases} I/O phase{'s' if n_phases != 1 else ''}; a period needs {MIN_PHASES}"
    if w_iter is None or confidence < min_confidence:
        return "irregular", (
            f"{n_phases} I/O phases, not regular enough (confidence {confidence:.2f} < {min_confidence:.2f})"
        )
    if run < MIN_PERIODS * w_iter:
        return (
            "short_run",
            f"the run lasts {run / w_iter:.1f} periods of {w_iter:.3g} s; a period needs {MIN_PERIODS:g}",
        )
    return None, f"periodic: {n_phases} I/O phases every {w_iter:.3g} s (confidence {confidence:.2f})"


def _io_bound(alpha_io: float, counters_share: float | None) -> tuple[str, str] | None:
    """The io_bound gate on its two measures, and the sentence naming the one that decided; None when it passes."""
    if alpha_io >= IO_BOUND:
        return "io_bound", f"does I/O {alpha_io:.0%} of its run by its timeline: I/O-bound, no compute between its I/O"
    if counters_share is not None and IO_BOUND <= counters_share <= COUNTERS_OVERLAP:
        return "io_bound", (
            f"does I/O {counters_share:.0%} of its run by its counters (its slowest process's read, write, "
            f"metadata and sync time; {alpha_io:.0%} by its timeline): I/O-bound, no compute between its I/O"
        )
    return None


def counters_io_bound(
    reason: str | None, text: str, *, alpha_io: float, counters_share: float
) -> tuple[str | None, str]:
    """A timeline's verdict with the counters' I/O share as a second measure in its ``io_bound`` gate.

    The timeline's alpha_io misses what DXT does not trace (open, close, sync calls); the counters'
    slowest-process I/O time over the run (``counters_share``) holds them. A verdict that got past the
    ``io_bound`` gate (periodic, or a later gate failed) becomes ``io_bound`` when that share reaches
    :data:`IO_BOUND`; earlier verdicts (``no_io``, ``few_bytes``, ``io_bound``) stay. A share past
    :data:`COUNTERS_OVERLAP` counts time that overlaps itself (concurrent calls, a shared record's
    ranks summed): it measures no share of the run and decides nothing.
    """
    if reason is not None and CODES.index(reason) <= CODES.index("io_bound"):
        return reason, text
    return _io_bound(alpha_io, counters_share) or (reason, text)


def counters_verdict(*, total_bytes: float, alpha_io: float | None) -> tuple[str, str]:
    """Why a job with counters only (no timeline) has no period: as :func:`verdict`, without the timeline's gates."""
    if total_bytes <= 0:
        return "no_io", "no I/O recorded"
    if total_bytes < BYTE_FLOOR:
        return "few_bytes", f"only {size_text(total_bytes)} of I/O, under the {size_text(BYTE_FLOOR)} floor"
    if alpha_io is not None and alpha_io >= IO_BOUND:
        return "io_bound", f"does I/O {alpha_io:.0%} of its run: I/O-bound, no compute between its I/O"
    return "no_timeline", "counters only: no DXT or HEATMAP timeline tells when the I/O happened"
