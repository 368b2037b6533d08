"""The request replay of a site trace (``RequestArrays.from_site``): what HEATMAP-rebuilt requests (rank -1, no
offset) mean to the engine, and each request's set from a recommendation (``request_sets``)."""

import polars as pl
import pytest
from site_rows import site

from iosets.errors import InputError
from iosets.replay import Device, RequestArrays, replay_requests, request_sets

SLOW = Device(bandwidth=1000.0, overhead=0.0, seek=0.5)
"""1000 bytes take 1 s, a unit that continues nothing pays 0.5 s more."""


def test_a_heatmap_rebuilt_request_continues_nothing_and_pays_the_seek():
    # two bins of 1000 bytes of job h (rank -1, no offset), the second arriving while the first is served
    rebuilt = site([("h", -1, 0.0, 1.0, 1000, 0, None, None), ("h", -1, 0.1, 1.1, 1000, 0, None, None)])
    result = replay_requests(rebuilt, "fcfs", device=SLOW)
    # seek + transfer each, one after the other: 0.5 + 1, then 1.5 + 0.5 + 1
    assert result.complete.tolist() == pytest.approx([1.5, 3.0])
    assert (result.trace.no_rank, result.trace.no_offset) == (2, 2)
    # the same bytes recorded by DXT at contiguous offsets of one file: the second continues the first
    recorded = site([("h", 0, 0.0, 1.0, 1000, 0, 0, "f"), ("h", 0, 0.1, 1.1, 1000, 0, 1000, "f")])
    again = replay_requests(recorded, "fcfs", device=SLOW)
    assert again.complete.tolist() == pytest.approx([1.5, 2.5])
    assert (again.trace.no_rank, again.trace.no_offset) == (0, 0)


def test_each_job_s_rebuilt_requests_are_one_stream_of_their_own():
    rows = [
        ("a", -1, 0.0, 1.0, 10, 0, None, None),
        ("b", -1, 0.5, 1.5, 10, 0, None, None),
        ("a", -1, 1.0, 2.0, 10, 1, None, None),
        ("a", 0, 1.5, 2.5, 10, 1, 0, None),  # a recorded rank of a: a stream apart from a's bins
        ("b", 0, 2.0, 3.0, 10, 1, 0, None),  # rank 0 of b is not rank 0 of a
        ("b", 0, 2.5, 3.5, 10, 1, 10, "g"),  # a file names its stream, whatever the rank
    ]
    trace = RequestArrays.from_site(site(rows))
    by_row = dict(zip(trace.order.tolist(), trace.stream.tolist(), strict=True))
    assert by_row[0] == by_row[2]
    assert len({by_row[0], by_row[1], by_row[3], by_row[4], by_row[5]}) == 5
    assert trace.n_streams == 5
    assert trace.offset[trace.order == 0].tolist() == [-1]


def test_a_request_outside_every_phase_is_a_phase_of_its_own():
    rows = [
        ("a", -1, 0.0, 1.0, 10, None, None, None),
        ("a", -1, 1.0, 2.0, 10, None, None, None),
        ("a", 0, 2.0, 3.0, 10, 0, 0, "f"),
        ("a", 0, 3.0, 4.0, 10, 0, 10, "f"),
        ("b", 0, 3.0, 4.0, 10, 0, 0, "g"),
    ]
    trace = RequestArrays.from_site(site(rows))
    phase = dict(zip(trace.order.tolist(), trace.phase.tolist(), strict=True))
    assert phase[2] == phase[3]  # a's phase 0
    assert len({phase[0], phase[1], phase[2], phase[4]}) == 4  # two lone bins, a's phase 0, b's phase 0
    assert trace.n_phases == 4


def test_a_site_trace_without_end_dates_replays_in_the_open_loop():
    # a block trace's requests (SPC records no completion): rank = device, offsets known
    rows = site([("d", 3, 0.0, 0.0, 1000, 0, 0, None), ("d", 3, 0.0, 0.0, 1000, 0, 1000, None)])
    result = replay_requests(rows.with_columns(pl.lit(None, pl.Float64).alias("end")), "fcfs", device=SLOW)
    assert result.complete.tolist() == pytest.approx([1.5, 2.5])


def test_a_site_trace_s_bad_row_is_named():
    rows = site([("a", -2, 0.0, 1.0, 10, 0, None, None)])
    with pytest.raises(InputError, match=r"^site trace row 0: rank: expected an integer >= -1, got -2$"):
        replay_requests(rows)
    with pytest.raises(InputError, match=r"^site trace: missing columns \['set'\]"):
        replay_requests(site([("a", 0, 0.0, 1.0, 10, 0, 0, "f")]), class_by="set")


def recommendation(jobs, sets):
    """A recommendation of ``jobs`` in ``sets``; a set's weights grow with its priority."""
    return pl.DataFrame(
        {
            "job_id": jobs,
            "set": sets,
            "priority": [10.0**-s for s in sets],
            "conservative": False,
            "wfq_weight": [10 ** (3 - s) for s in sets],
            "rbfq_reservation": [None] * len(jobs),
            "rbfq_weight": [10.0 ** (2 - s) for s in sets],
            "rbfq_limit": [None] * len(jobs),
        },
        schema_overrides={"rbfq_reservation": pl.Float64, "rbfq_limit": pl.Float64},
    )


def test_requests_take_their_job_s_set_and_a_job_absent_goes_to_the_conservative_set():
    rows = site([("a", 0, 0.0, 1.0, 10, 0, 0, "f"), ("b", -1, 0.0, 1.0, 20, 0, None, None)])
    rows = rows.vstack(site([("c", 0, 1.0, 2.0, 40, 0, 0, "h")]))
    rec = recommendation(["a", "b", "z"], [0, 1, 2])  # z: not in the trace; c: not in the recommendation
    with pytest.warns(UserWarning, match=r"^1 job\(s\) of the requests not in the recommendation go to its "):
        sets = request_sets(rows, rec)
    assert sets.requests["set"].to_list() == [0, 1, 2]
    assert (sets.absent, sets.conservative) == (["c"], 2)
    assert sets.parameters("fcfs") == {}
    assert sets.parameters("iosets-wfq") == {"weights": {0: 1000.0, 1: 100.0, 2: 10.0}}
    assert sets.parameters("rbfq") == {
        "weights": {0: 100.0, 1: 10.0, 2: 1.0},
        "reservations": {0: 0.0, 1: 0.0, 2: 0.0},
        "limits": {0: 0.0, 1: 0.0, 2: 0.0},
    }
    result = replay_requests(sets.requests, "fcfs", class_by="set")
    classes = result.metrics.classes
    assert classes.select("class", "set", "bytes").rows() == [(0, 0, 10.0), (1, 1, 20.0), (2, 2, 40.0)]
    # classes that are not sets say so
    assert replay_requests(sets.requests, "fcfs").metrics.classes["set"].to_list() == [None, None, None]


def test_a_set_column_already_there_or_no_job_id_is_refused():
    rows = site([("a", 0, 0.0, 1.0, 10, 0, 0, "f")])
    with pytest.raises(InputError, match="^requests: already have a set column"):
        request_sets(rows.with_columns(set=pl.lit(0)), recommendation(["a"], [0]))
    with pytest.raises(InputError, match="^requests: no job_id column"):
        request_sets(rows.drop("job_id"), recommendation(["a"], [0]))
    with pytest.raises(InputError, match="^recommendation: missing column"):
        request_sets(rows, recommendation(["a"], [0]).drop("wfq_weight"))
