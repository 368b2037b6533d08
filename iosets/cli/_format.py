"""One-line texts of the replay room's results: a device with its units, a fraction in per cent."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..replay import Device

DEVICE_UNITS = {
    "bandwidth": ("bandwidth", 1e-6, " MB/s"),
    "overhead": ("overhead", 1e6, " us"),
    "seek": ("seek", 1e3, " ms"),
    "queue_depth": ("queue depth", 1, ""),
    "iops": ("iops", 1, " /s"),
    "rate": ("rate", 1e-6, " MB/s"),
    "burst": ("burst", 1e-6, " MB"),
}
"""Per Device field: its label, the factor to its unit, and the unit (a count has none)."""


def describe_device(device: Device) -> str:
    """Every field of ``device`` with its unit, in the order of :data:`DEVICE_UNITS` then the dataclass's.

    Examples
    --------
    >>> from iosets.replay import Device
    >>> describe_device(Device(bandwidth=2.5e9, overhead=4e-5, seek=0.0))
    'bandwidth 2500 MB/s, overhead 40 us, seek 0 ms, queue depth 1, iops 0 /s'
    """
    names = [name for name in DEVICE_UNITS if hasattr(device, name)]
    names += [f.name for f in fields(device) if f.name not in DEVICE_UNITS]
    parts = []
    for name in names:
        label, factor, unit = DEVICE_UNITS.get(name, (name.replace("_", " "), 1, ""))
        parts.append(f"{label} {getattr(device, name) * factor:.4g}{unit}")
    return ", ".join(parts)


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
