"""Datasets: the paper's workload generator and its experiment presets."""

from ._figures import FIGURES, FigureSweep, figure_seed, make_figure_workload
from ._generators import make_iosets_workload

__all__ = ["FIGURES", "FigureSweep", "figure_seed", "make_figure_workload", "make_iosets_workload"]
