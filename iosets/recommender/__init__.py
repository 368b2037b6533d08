"""Recommender: from per-job w_iter to sets, priorities and enforcement parameters."""

from ._mappings import map_sets, set_priorities

__all__ = ["map_sets", "set_priorities"]
