"""Workload presets of the experiments of the IO-SETS paper (Figs. 6-10)."""

import zlib
from dataclasses import dataclass

import numpy as np

from .._validation import check_choice
from ..workload import Workload
from ._generators import make_iosets_workload


@dataclass(frozen=True)
class FigureSweep:
    """One experiment of the paper: what is swept and over which points."""

    name: str
    parameter: str
    points: tuple[float, ...]
    description: str

    def profiles(self, point: float) -> list[tuple[int, float, float]]:
        """The (count, mu, sigma) job profiles at ``point``."""
        if self.parameter == "n_high":
            n_high = int(point)
            return [(n_high, 10.0, 1.0), (20, 100.0, 10.0), (40 - n_high, 1000.0, 100.0)]
        if self.parameter == "eta":
            return [(20, 10.0, 10.0 * point), (20, 100.0, 100.0 * point), (20, 1000.0, 1000.0 * point)]
        if self.parameter == "mu":
            return [(15, 10.0, 1.0), (15, 100.0, 10.0), (15, 1000.0, 100.0), (15, point, 0.1 * point)]
        return [(20, 10.0, 1.0), (20, 100.0, 10.0), (20, 1000.0, 100.0)]  # noise sweep

    def noise(self, point: float) -> float:
        """The noise bound b at ``point``."""
        return float(point) if self.parameter == "noise" else 0.1


_N_HIGH = tuple(float(n) for n in range(41))
FIGURES: dict[str, FigureSweep] = {
    "fig6": FigureSweep("fig6", "n_high", _N_HIGH, "n_H high-frequency jobs N(10,1), 20 N(100,10), 40-n_H N(1000,100)"),
    "fig7": FigureSweep("fig7", "n_high", _N_HIGH, "Fig. 6's workloads: set mapping vs priorities"),
    "fig8": FigureSweep(
        "fig8", "noise", tuple(round(0.1 * k, 1) for k in range(10)), "20 jobs per profile, noise b swept"
    ),
    "fig9": FigureSweep(
        "fig9",
        "eta",
        (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
        "20 jobs of N(mu, eta mu), mu = 10, 100, 1000",
    ),
    "fig10": FigureSweep(
        "fig10",
        "mu",
        (5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0),
        "15 jobs each of N(10,1), N(100,10), N(1000,100) and a fourth profile N(mu, 0.1 mu)",
    ),
}
"""The paper's sweeps; fig7 replays fig6's workloads."""


def figure_seed(figure: str, point: float, seed: int) -> np.random.SeedSequence:
    """The seed of one workload of a sweep (fig6 and fig7 share theirs)."""
    family = "fig6" if figure == "fig7" else figure
    index = FIGURES[family].points.index(point) if point in FIGURES[family].points else int(point * 1000)
    return np.random.SeedSequence([zlib.crc32(family.encode()), index, seed])


def make_figure_workload(
    figure: str,
    point: float,
    *,
    omega: float = 0.8,
    horizon: float = 20000.0,
    window: tuple[float, float] | None = None,
    random_state=None,
) -> Workload:
    """A workload of the paper's sweep ``figure`` at ``point``.

    Parameters
    ----------
    figure : {"fig6", "fig7", "fig8", "fig9", "fig10"}
    point : float
        The swept value: n_H (fig6, fig7), noise b (fig8), eta = sigma/mu (fig9),
        the fourth profile's mu (fig10).
    omega : float, default=0.8
    horizon : float, default=20000.0
        h in seconds (the paper's).
    window : tuple of float, default=None
        Metric window; by default (0.3 h, 0.7 h), the paper's (6000, 14000) for h = 20 000 s.
    random_state : int, Generator, SeedSequence or None, default=None

    Examples
    --------
    >>> make_figure_workload("fig6", 5, random_state=0).n_jobs
    60
    """
    sweep = FIGURES[check_choice(figure, "figure", tuple(FIGURES))]
    return make_iosets_workload(
        sweep.profiles(point),
        omega=omega,
        noise=sweep.noise(point),
        horizon=horizon,
        window=window,
        random_state=random_state,
    )
