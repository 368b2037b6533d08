"""Arbiter: the IO-SETS paper's centralized scheduler, run for real.

``iosets arbiter`` is a daemon that jobs tell when an I/O phase begins and ends: at most one job
per set performs I/O at a time, FCFS within a set, and the performing jobs share the bandwidth by
priority, each told its rate. Its admission rules are the phase engine's, in C
(:class:`Admission` drives the same core on a virtual clock). Jobs talk to it through
:class:`Client` (Python, standard library only) or the C library ``iosets_arbiter.h``, and pace
their requests with :class:`Pacer`. Protocol and use: docs/guides/arbiter.md.

Names are imported on first use (:mod:`iosets._lazy`).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers see; F401 is off for __init__ files
    from ._admission import ARBITER_POLICIES, Admission, Applied
    from ._assignment import assignment
    from ._client import Client, parse_address
    from ._pacer import Pacer
    from ._serve import Arbiter, ArbiterSummary

_EXPORTS = {
    "ARBITER_POLICIES": "._admission",
    "Admission": "._admission",
    "Applied": "._admission",
    "Client": "._client",
    "assignment": "._assignment",
    "parse_address": "._client",
    "Pacer": "._pacer",
    "Arbiter": "._serve",
    "ArbiterSummary": "._serve",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
