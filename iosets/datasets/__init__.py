"""Datasets: the paper's workload generator, its experiment presets, request workloads and bundled samples.

``make_*`` generate, ``load_*`` read what ships with the package. Names are imported on
first use (:mod:`iosets._lazy`).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers see; F401 is off for __init__ files
    from ._figures import FIGURES, FigureSweep, figure_seed, make_figure_workload
    from ._generators import make_iosets_workload
    from ._history import make_job_history
    from ._periodic_requests import make_periodic_requests
    from ._phase_to_site import workload_site_requests
    from ._requests import (
        make_backlogged_requests,
        make_phase_requests,
    )
    from ._samples import DarshanExamples, SampleTraces, load_darshan_examples, load_sample_traces
    from ._site_sample import LargeSite, make_large_site

_EXPORTS = {
    "FIGURES": "._figures",
    "FigureSweep": "._figures",
    "figure_seed": "._figures",
    "make_figure_workload": "._figures",
    "make_iosets_workload": "._generators",
    "make_job_history": "._history",
    "make_periodic_requests": "._periodic_requests",
    "workload_site_requests": "._phase_to_site",
    "make_backlogged_requests": "._requests",
    "make_phase_requests": "._requests",
    "DarshanExamples": "._samples",
    "SampleTraces": "._samples",
    "load_darshan_examples": "._samples",
    "load_sample_traces": "._samples",
    "LargeSite": "._site_sample",
    "make_large_site": "._site_sample",
}
_RENAMED = {"make_periodic_ops": "make_periodic_requests", "workload_site_ops": "workload_site_requests"}
"""Former names (one release, with a DeprecationWarning): the glossary's words (docs/glossary.md)."""
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _RENAMED)
__all__ = sorted(_EXPORTS)
