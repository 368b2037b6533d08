"""Recommender: from per-job w_iter to sets, priorities, enforcement parameters and their export."""

from ._enforcement import AGIOS_MAX_WEIGHT, rbfq_reservations, wfq_weights
from ._export import EXPORT_FORMATS, export
from ._export_agios import agios_queues
from ._export_cgroup import SLURM_CGROUP_ROOT, cgroup_weights
from ._export_slurm import recommendation_document
from ._export_tbf import TBF_TARGET, tbf_rates
from ._history import WIterEstimator
from ._mappings import cluster_sets, map_sets, set_priorities
from ._new_job import recommend_new_job
from ._recommend import MAPPINGS, RECOMMENDATION_COLUMNS, assign_sets, recommend, set_summary

__all__ = [
    "AGIOS_MAX_WEIGHT",
    "EXPORT_FORMATS",
    "MAPPINGS",
    "RECOMMENDATION_COLUMNS",
    "SLURM_CGROUP_ROOT",
    "TBF_TARGET",
    "WIterEstimator",
    "agios_queues",
    "assign_sets",
    "cgroup_weights",
    "cluster_sets",
    "export",
    "map_sets",
    "rbfq_reservations",
    "recommend",
    "recommend_new_job",
    "recommendation_document",
    "set_priorities",
    "set_summary",
    "tbf_rates",
    "wfq_weights",
]
