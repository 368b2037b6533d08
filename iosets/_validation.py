"""Shared parameter checks, called once at each public entry point."""

import math
from numbers import Integral, Real

from .errors import InputError


def check_positive(value, name: str, *, strict: bool = True) -> float:
    """Return ``value`` as float if it is a finite number > 0 (>= 0 if not strict)."""
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (strict and value == 0):
        bound = "> 0" if strict else ">= 0"
        raise InputError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


def check_count(value, name: str, *, minimum: int = 0) -> int:
    """Return ``value`` if it is an integer >= ``minimum``."""
    if not isinstance(value, Integral) or isinstance(value, bool) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_choice(value, name: str, choices) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise InputError(f"unknown {name} {value!r}; expected one of {', '.join(choices)}")
    return value
