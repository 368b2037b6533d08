"""One-line texts of the replay room's results: a fraction in per cent."""

from __future__ import annotations

import math


def percent(value: float | None) -> str:
    """A fraction in per cent as the project writes it (``"4.9 %"``); ``"undefined"`` for None or NaN.

    Examples
    --------
    >>> percent(0.049), percent(0.25), percent(float("nan"))
    ('4.9 %', '25 %', 'undefined')
    """
    if value is None or not math.isfinite(value):
        return "undefined"
    return f"{value * 100:.3g} %"
