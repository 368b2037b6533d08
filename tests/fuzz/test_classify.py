"""classify.py contains and labels how reading a log ends: ok, exception, signal, timeout."""

import json

import pytest
from classify import classify_paths
from corpus import apply_edits, default_sources

SOURCES = {p.name: p for p in default_sources()}


@pytest.mark.timing
def test_outcomes_of_a_good_log_and_of_known_bad_ones(tmp_path):
    dxt = SOURCES["dxt.darshan"].read_bytes()
    ior = SOURCES["ior_hdf5_example.darshan"].read_bytes()
    example = SOURCES["example.darshan"].read_bytes()
    logs = {
        "good": dxt,
        "bad_version": apply_edits(dxt, [(0, b"3.10", b"9.99")]),  # darshan_log_open refuses it
        "comp_none": apply_edits(ior, [(16, b"\x00", b"\x02")]),  # assert(buf_len == 0) in darshan-util
        "bgq_loop": apply_edits(example, [(0, b"3.10", b"3.21")]),  # BG/Q v1 records that never end
    }
    paths = []
    for name, data in logs.items():
        paths.append(tmp_path / f"{name}.darshan")
        paths[-1].write_bytes(data)
    good, bad_version, comp_none = classify_paths(paths[:3], timeout=60.0)  # a bound on a hang: each one ends
    (bgq_loop,) = classify_paths(paths[3:], timeout=2.0)  # it never ends: only the timeout ends it
    assert good["outcome"] == "ok" and good["signal"] is None and good["stage"] == "done"
    assert json.loads(good["records"]) == {"POSIX": 214, "STDIO": 1, "DXT_POSIX": 169}
    assert bad_version["outcome"] == "exception"
    assert bad_version["message"] == "RuntimeError: darshan_log_open failed"
    assert "expected version" in bad_version["darshan_stderr"]
    assert (comp_none["outcome"], comp_none["signal"], comp_none["stage"]) == ("signal", "SIGABRT", "name_records")
    assert comp_none["returncode"] == -6
    assert "buf_len == 0" in comp_none["darshan_stderr"]
    assert (bgq_loop["outcome"], bgq_loop["stage"]) == ("timeout", "records BG/Q")
    assert bgq_loop["seconds"] >= 2.0
