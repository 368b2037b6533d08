"""The choices that help texts list, written out so that ``iosets --help`` imports no room.

``tests/cli/test_choices.py`` checks each one against the room's own constant.
"""

TRACE_FORMATS = ("auto", "darshan", "blkparse", "ops", "msr", "spc")
"""'auto' and the names of iosets.analyzer.INGESTERS"""

POLICIES = ("exclusive-fcfs", "fair-share", "set-10", "set-fairshare", "share-priority", "clairvoyant", "explicit")
"""iosets.replay.POLICIES"""

VALIDATE_POLICIES = ("system", "set-10", "fair-share", "exclusive-fcfs", "share-priority")
"""iosets.validate.POLICIES"""

SCHEDULERS = ("fcfs", "time-order", "wfq", "iosets-wfq", "rbfq", "fairio", "aioli")
"""iosets.replay.SCHEDULERS"""

DEVICE_PARAMETERS = (
    "queue_depth",
    "bandwidth",
    "overhead",
    "seek",
    "iops",
    "targets",
    "concurrency",
    "stripe_size",
    "stripe_count",
    "client_bandwidth",
    "ranks_per_node",
    "rate",
    "burst",
    "slice",
)
"""The fields of iosets.replay.Device"""

FIGURES = ("fig6", "fig7", "fig8", "fig9", "fig10")
"""iosets.datasets.FIGURES (also the experiments of iosets.replay.EXPERIMENT_REFERENCE)"""

TUNE_BASES = "2,3,5,10,20,50,100"
"""iosets.recommender.TUNE_BASES"""

MAPPINGS = ("set-10", "set-b", "gmm")
"""iosets.recommender.MAPPINGS"""

EXPORT_FORMATS = ("agios", "tbf", "cgroup", "json", "lua")
"""iosets.recommender.EXPORT_FORMATS"""

ARBITER_POLICIES = ("set-10", "exclusive-fcfs", "fair-share", "share-priority")
"""iosets.arbiter.ARBITER_POLICIES"""

TBF_TARGET = "ost.OSS.ost_io"
"""iosets.recommender.TBF_TARGET"""


def one_of(choices: tuple[str, ...]) -> str:
    """``"One of: a, b, c."`` for a help text."""
    return f"One of: {', '.join(choices)}."
