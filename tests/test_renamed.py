"""Former names (before the glossary settled one word per concept) still work for one release, with a warning."""

import importlib

import pytest

RENAMED = [
    ("iosets.analyzer", "read_ops", "read_requests"),
    ("iosets.analyzer", "write_ops", "write_requests"),
    ("iosets.analyzer", "analyze_ops", "analyze_requests"),
    ("iosets.analyzer", "SAME_JOB_WITHIN", "SAME_JOB_GAP"),
    ("iosets.replay", "compare_policies", "compare_schedulers"),
    ("iosets.replay", "PolicyComparison", "SchedulerComparison"),
    ("iosets.replay", "RequestTrace", "RequestArrays"),
    ("iosets.replay", "SiteTuning", "Tuning"),
    ("iosets.datasets", "make_periodic_ops", "make_periodic_requests"),
    ("iosets.datasets", "workload_site_ops", "workload_site_requests"),
    ("iosets.schemas", "OPS", "REQUESTS"),
    ("iosets.schemas", "SITE_OPS", "SITE_REQUESTS"),
    ("iosets.schemas", "TRACE_REPLAY_POLICIES", "TRACE_REPLAY_SCHEDULERS"),
]


@pytest.mark.parametrize(("module", "old", "new"), RENAMED)
def test_a_former_name_gives_the_new_object_with_a_deprecation_warning(module, old, new):
    room = importlib.import_module(module)
    with pytest.warns(
        DeprecationWarning, match=rf"^{module}\.{old} is now {new}; the old name goes in the next release$"
    ):
        value = getattr(room, old)
    assert value is getattr(room, new)
    assert old not in getattr(room, "__all__", ())
