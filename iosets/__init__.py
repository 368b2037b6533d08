"""iosets: decide how a shared parallel file system shares its bandwidth.

Rooms: :mod:`iosets.analyzer` (traces -> jobs), :mod:`iosets.recommender`
(jobs -> sets, priorities, weights), :mod:`iosets.replay` (predict the gain),
:mod:`iosets.datasets` (workload generators and samples).
"""

from importlib.metadata import PackageNotFoundError, version

from .errors import InputError, IosetsError, ReplayError
from .workload import Workload, read_workload, write_workload

try:
    __version__ = version("iosets")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

__all__ = [
    "InputError",
    "IosetsError",
    "ReplayError",
    "Workload",
    "read_workload",
    "write_workload",
    "__version__",
]
