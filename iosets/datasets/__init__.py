"""Datasets: the paper's workload generator, its experiment presets and request workloads."""

from ._figures import FIGURES, FigureSweep, figure_seed, make_figure_workload
from ._generators import make_iosets_workload
from ._history import make_job_history
from ._requests import (
    make_backlogged_requests,
    make_bursty_requests,
    make_hotspot_requests,
    make_periodic_requests,
    make_phase_requests,
    make_strided_writers,
)

__all__ = [
    "FIGURES",
    "FigureSweep",
    "figure_seed",
    "make_backlogged_requests",
    "make_bursty_requests",
    "make_figure_workload",
    "make_hotspot_requests",
    "make_iosets_workload",
    "make_job_history",
    "make_periodic_requests",
    "make_phase_requests",
    "make_strided_writers",
]
