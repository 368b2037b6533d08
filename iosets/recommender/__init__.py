"""Recommender: from per-job w_iter to sets, priorities, enforcement parameters and their export.

:class:`Recommender` learns a site's mapping from its job history once (``fit``), then
recommends tables of jobs (``predict``) and single jobs about to start (``predict_one``);
:func:`recommend` maps a table with the mapping learned from that table. Names are
imported on first use (:mod:`iosets._lazy`): ``import iosets.recommender`` loads
neither scikit-learn nor SciPy.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers see; F401 is off for __init__ files
    from ._enforcement import AGIOS_MAX_WEIGHT, rbfq_reservations, wfq_weights
    from ._evidence import Evidence
    from ._export import EXPORT_FORMATS, export, render_export
    from ._export_agios import agios_queues
    from ._export_cgroup import SLURM_CGROUP_ROOT, cgroup_weights
    from ._export_slurm import default_lua_document, recommendation_document
    from ._export_tbf import TBF_TARGET, tbf_rates
    from ._history import WIterEstimator, query_fields
    from ._mappings import MAPPINGS, TUNE_BASES, SetMapping, cluster_sets, map_sets, set_priorities
    from ._new_job import recommend_new_job
    from ._recommend import Recommendation, assign_sets, recommend, set_summary
    from ._recommender import Recommender

_EXPORTS = {
    "AGIOS_MAX_WEIGHT": "._enforcement",
    "rbfq_reservations": "._enforcement",
    "wfq_weights": "._enforcement",
    "EXPORT_FORMATS": "._export",
    "export": "._export",
    "render_export": "._export",
    "agios_queues": "._export_agios",
    "SLURM_CGROUP_ROOT": "._export_cgroup",
    "cgroup_weights": "._export_cgroup",
    "default_lua_document": "._export_slurm",
    "recommendation_document": "._export_slurm",
    "TBF_TARGET": "._export_tbf",
    "tbf_rates": "._export_tbf",
    "Evidence": "._evidence",
    "WIterEstimator": "._history",
    "query_fields": "._history",
    "MAPPINGS": "._mappings",
    "TUNE_BASES": "._mappings",
    "SetMapping": "._mappings",
    "cluster_sets": "._mappings",
    "map_sets": "._mappings",
    "set_priorities": "._mappings",
    "recommend_new_job": "._new_job",
    "Recommendation": "._recommend",
    "assign_sets": "._recommend",
    "recommend": "._recommend",
    "set_summary": "._recommend",
    "Recommender": "._recommender",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
