"""``read_validation`` and ``Validation.from_dict``: a written result reads back equal, errors name the source."""

from __future__ import annotations

import pytest

from iosets.errors import InputError
from iosets.replay import PhaseMetrics
from iosets.validate import PolicyValidation, Validation, make_fig4_workload, read_validation


def a_validation() -> Validation:
    workload = make_fig4_workload(2, horizon=10.0, bandwidth=1e8)
    system = {"utilization": [0.6, 0.65], "io_slowdown": [None, 3.5], "max_stretch": [1.4, 1.5]}
    set10 = {"utilization": [0.81, 0.8], "io_slowdown": [1.5, 1.6], "max_stretch": [1.2, 1.19]}
    return Validation(
        workload,
        1.25e8,
        {
            "system": PolicyValidation("system", "fair-share", system, PhaseMetrics(0.55, None, 1.6)),
            "set-10": PolicyValidation("set-10", "set-10", set10, PhaseMetrics(0.8, 1.55, 1.2)),
        },
    )


def test_a_written_validation_reads_back_equal(tmp_path):
    written = a_validation()
    read = read_validation(written.write(tmp_path / "validation.json"))
    assert read.to_dict() == written.to_dict()
    assert read.bandwidth == 1.25e8 and read.throttle is None
    assert read.workload.ids == written.workload.ids and read.workload.window == written.workload.window
    assert [(p.policy, p.simulated_policy) for p in read.policies.values()] == [
        ("system", "fair-share"),
        ("set-10", "set-10"),
    ]
    assert read.policies["system"].simulated.io_slowdown is None
    assert read.policies["set-10"].summary() == written.policies["set-10"].summary()
    # 0.81 and 0.8 within 3.5 % of 0.8; 1.2 and 1.19 within 1.5 % of 1.2 (|1.19 - 1.2| = 0.01 <= 0.018)
    assert read.policies["set-10"].meets_criterion() and not read.policies["system"].meets_criterion()


def test_a_mapping_names_its_source_in_errors():
    data = a_validation().to_dict()
    del data["policies"]["set-10"]["measured"]["io_slowdown"]
    with pytest.raises(InputError) as error:
        Validation.from_dict(data, source="GET /results")
    assert str(error.value) == "GET /results: policies.set-10.measured.io_slowdown: missing"
    with pytest.raises(InputError) as error:
        Validation.from_dict(None)
    assert str(error.value) == "validation: expected a JSON object, got None"
