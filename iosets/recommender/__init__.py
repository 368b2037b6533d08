"""Recommender: from per-job w_iter to sets, priorities and enforcement parameters."""

from ._enforcement import AGIOS_MAX_WEIGHT, rbfq_reservations, wfq_weights
from ._mappings import cluster_sets, map_sets, set_priorities
from ._recommend import MAPPINGS, RECOMMENDATION_COLUMNS, assign_sets, recommend, set_summary

__all__ = [
    "AGIOS_MAX_WEIGHT",
    "MAPPINGS",
    "RECOMMENDATION_COLUMNS",
    "assign_sets",
    "cluster_sets",
    "map_sets",
    "rbfq_reservations",
    "recommend",
    "set_priorities",
    "set_summary",
    "wfq_weights",
]
