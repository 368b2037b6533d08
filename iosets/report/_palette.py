"""The report's one palette: one colour per set in every plot, neutral colours for what is not a set.

Sets are drawn in :data:`SET_PALETTE` wherever they appear (jobs, phases, shares, request classes that are sets);
policies and schedulers in :data:`POLICY_PALETTE`, bytes read and written in :data:`READ_COLOUR` and
:data:`WRITE_COLOUR`, so that a colour that means a set never means anything else.
"""

from __future__ import annotations

SET_PALETTE = (
    "#0072b2",
    "#e69f00",
    "#009e73",
    "#cc79a7",
    "#56b4e9",
    "#d55e00",
    "#f0e442",
    "#882255",
    "#44aa99",
    "#117733",
)
"""Colours of sets 0, 1, 2, ... (cycled; Okabe-Ito's colour-blind-safe hues, then Tol's)."""

UNSET_COLOUR = "#b0b0b0"
"""Colour of jobs without a set (no recommendation given)."""

POLICY_PALETTE = ("#2e3440", "#6b7785", "#a7b0bb", "#4c566a", "#8a94a0", "#c4cad2")
"""Neutral colours of policies and schedulers, in the order a figure lists them (cycled)."""

READ_COLOUR = "#4c566a"
"""Bytes read."""

WRITE_COLOUR = "#a7b0bb"
"""Bytes written."""

ACCENT_COLOUR = "#3b4252"
"""One series that is neither a set nor a policy (a ratio, a count over time)."""


def set_colour(set_id: int | None) -> str:
    """The colour of ``set_id`` in every plot; grey for None (a job without a set).

    A negative set is a set like any other (SET-10 gives set -1 to w_iter below 0.316 s), coloured from the
    end of the palette, never grey.

    Examples
    --------
    >>> set_colour(0), set_colour(10), set_colour(-1), set_colour(None)
    ('#0072b2', '#0072b2', '#117733', '#b0b0b0')
    """
    return UNSET_COLOUR if set_id is None else SET_PALETTE[set_id % len(SET_PALETTE)]


def policy_colour(index: int) -> str:
    """The colour of the ``index``-th policy of a figure.

    Examples
    --------
    >>> policy_colour(0), policy_colour(6)
    ('#2e3440', '#2e3440')
    """
    return POLICY_PALETTE[index % len(POLICY_PALETTE)]
