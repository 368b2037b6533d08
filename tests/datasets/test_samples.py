"""The bundled samples: exact shapes and contents of every loader."""

import dataclasses

import pytest

from iosets.datasets import DarshanExamples, SampleTraces, load_darshan_examples, load_sample_traces

OPS_COLUMNS = ["job_id", "rank", "op", "offset", "size", "start", "end", "file"]


def test_sample_traces_hold_two_jobs_each():
    samples = load_sample_traces()
    assert isinstance(samples, SampleTraces)
    assert list(samples.requests) == list(samples.paths) == ["blkparse", "msr", "spc"]
    assert {name: path.name for name, path in samples.paths.items()} == {
        "blkparse": "sample.blkparse.txt",
        "msr": "sample.msr.csv",
        "spc": "sample.spc.csv",
    }
    assert all(path.is_file() for path in samples.paths.values())
    assert {name: ops.shape for name, ops in samples.requests.items()} == {
        "blkparse": (66, 8),
        "msr": (320, 8),
        "spc": (400, 8),
    }
    assert all(ops.columns == OPS_COLUMNS for ops in samples.requests.values())
    counts = {
        name: {(row["job_id"], row["op"]): row["len"] for row in ops.group_by("job_id", "op").len().to_dicts()}
        for name, ops in samples.requests.items()
    }
    assert counts == {
        "blkparse": {("8,0", "read"): 30, ("8,16", "write"): 36},
        "msr": {("hm_0", "read"): 128, ("hm_1", "write"): 192},
        "spc": {("1", "read"): 150, ("0", "write"): 250},
    }


@pytest.mark.parametrize(
    "name, writer, size, total",
    [("blkparse", "8,16", 512 * 1024, 36), ("msr", "hm_1", 65536, 192), ("spc", "0", 4096, 250)],
)
def test_each_writer_writes_equal_requests(name, writer, size, total):
    ops = load_sample_traces().requests[name].filter(job_id=writer)
    assert ops["size"].unique().to_list() == [size] and ops.height == total


def test_sample_descriptions_name_every_file_and_count():
    descr = load_sample_traces().descr
    assert descr.splitlines()[2:4] == ["Sample block traces", "-------------------"]
    for text in ("sample.blkparse.txt", "sample.msr.csv", "sample.spc.csv", "66", "320", "400"):
        assert text in descr


def test_darshan_examples_are_pydarshans_six_logs():
    examples = load_darshan_examples()
    assert isinstance(examples, DarshanExamples)
    assert list(examples.paths) == [
        "dxt.darshan",
        "example.darshan",
        "ior_hdf5_example.darshan",
        "noposix.darshan",
        "sample-badost.darshan",
        "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan",
    ]
    assert all(path.is_file() and path.parent.name == "example_logs" for path in examples.paths.values())
    assert all(f"``{name}``" in examples.descr for name in examples.paths)


def test_loaded_datasets_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        load_darshan_examples().descr = ""
