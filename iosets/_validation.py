"""Shared parameter checks, called once at each public entry point."""

import math
from numbers import Integral, Real

from .errors import InputError

C_INT_MAX = 2**31 - 1
"""The largest value a C ``int`` of the engine holds (``check_count(..., maximum=C_INT_MAX)``)."""


def check_positive(value, name: str, *, strict: bool = True) -> float:
    """Return ``value`` as float if it is a finite number > 0 (>= 0 if not strict)."""
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (strict and value == 0):
        bound = "> 0" if strict else ">= 0"
        raise InputError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


def check_fraction(value, name: str) -> float:
    """``value`` as float if it is a number in [0, 1]; else an InputError naming ``name``."""
    if not 0 <= check_positive(value, name, strict=False) <= 1:
        raise InputError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


def check_count(value, name: str, *, minimum: int = 0, maximum: int | None = None) -> int:
    """Return ``value`` if it is an integer >= ``minimum`` (and <= ``maximum``)."""
    ok = isinstance(value, Integral) and not isinstance(value, bool)
    if not ok or int(value) < minimum or (maximum is not None and int(value) > maximum):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise InputError(f"{name} must be an integer {bound}, got {value!r}")
    return int(value)


def check_choice(value, name: str, choices) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise InputError(f"unknown {name} {value!r}; expected one of {', '.join(choices)}")
    return value
