"""iosets: decide how a shared parallel file system shares its bandwidth.

Rooms: :mod:`iosets.analyzer` (traces -> jobs), :mod:`iosets.recommender`
(jobs -> sets, priorities, weights), :mod:`iosets.replay` (predict the gain),
:mod:`iosets.datasets` (workload generators and samples).
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from .errors import InputError, IosetsError, ReplayError

if TYPE_CHECKING:
    from .workload import Workload, read_workload, write_workload

__getattr__, __dir__ = lazy_exports(
    __name__,
    {"Workload": ".workload", "read_workload": ".workload", "write_workload": ".workload", "__version__": "._version"},
)

__all__ = [
    "InputError",
    "IosetsError",
    "ReplayError",
    "Workload",
    "read_workload",
    "write_workload",
    "__version__",
]
