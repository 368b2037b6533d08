"""Option strings into values; a malformed one raises InputError naming the option and the text."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import InputError


def parse_number(text: str, option: str) -> float:
    """``text`` as a float."""
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{option}: expected a number, got {text!r}") from None


def parse_numbers(text: str, option: str) -> list[float]:
    """Comma-separated numbers (``"2,10"``); blank items are ignored, but at least one is needed."""
    numbers = [parse_number(item.strip(), option) for item in text.split(",") if item.strip()]
    if not numbers:
        raise InputError(f"{option}: expected comma-separated numbers, got {text!r}")
    return numbers


def parse_window(text: str) -> tuple[float, float]:
    """``T_BEGIN,T_END`` (``"600,1400"``) of ``--window``."""
    numbers = parse_numbers(text, "--window")
    if len(numbers) != 2:
        raise InputError(f"--window: expected T_BEGIN,T_END such as 600,1400, got {text!r}")
    return numbers[0], numbers[1]


def parse_names(text: str) -> list[str]:
    """Comma-separated names (``"j0,j20"``), blanks dropped."""
    return [name.strip() for name in text.split(",") if name.strip()]


def parse_pairs(items: list[str] | None, option: str, key: Callable[[str], object] = str) -> dict:
    """Repeated ``key=number`` strings into a dict, each key converted by ``key``."""
    pairs = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"{option}: expected key=value, got {item!r}")
        try:
            converted = key(name)
        except ValueError:
            raise InputError(f"{option}: unexpected key {name!r} in {item!r}") from None
        if converted in pairs:
            raise InputError(f"{option}: {name} given twice")
        pairs[converted] = parse_number(value, f"{option} {name}")
    return pairs


def parse_fields(text: str, option: str) -> dict[str, str]:
    """``app=a,user=u,nprocs=64`` into a dict of strings."""
    fields = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InputError(f"{option}: expected key=value items separated by commas, got {item!r}")
        fields[name.strip()] = value.strip()
    return fields


def parse_profile(text: str) -> tuple[int, float, float]:
    """``COUNT,MU,SIGMA`` (``"20,100,10"``) of ``--profile``."""
    parts = text.split(",")
    try:
        if len(parts) != 3:
            raise ValueError
        return int(parts[0]), float(parts[1]), float(parts[2])
    except ValueError:
        raise InputError(f"--profile: expected COUNT,MU,SIGMA such as 20,100,10, got {text!r}") from None


def renamed_option(value, old_value, *, new: str, old: str):
    """The value of option ``new``, or of its former spelling ``old`` (kept hidden for one release, with a note)."""
    if old_value is None:
        return value
    if value is not None:
        raise InputError(f"give {new} once ({old} is its former spelling)")
    from ._output import show_note

    show_note(f"{old} is now {new}; the old spelling goes in the next release")
    return old_value
