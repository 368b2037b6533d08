"""The "Simulator against real runs" section: ``iosets validate``'s numbers in the page, the paper's criterion by hand,
the missing box, and a malformed validation file refused with its name and key."""

import json

import pytest
from reading import read_page
from test_build import JOBS
from typer.testing import CliRunner

from iosets.cli import app
from iosets.errors import InputError
from iosets.report import build_report, read_inputs
from iosets.report._validation import VALIDATE_COMMAND, validation_section

WORKLOAD = {
    "bandwidth": 2e8,
    "horizon": 10.0,
    "window": [2.0, 9.0],
    "jobs": [{"id": "h0", "release": 0.0, "phases": [[0.5, 1e7], [0.5, 1e7]]}, {"id": "l0", "phases": [[1.0, 2e7]]}],
}
VALIDATION = {
    "workload": WORKLOAD,
    "bandwidth": 1.9e8,
    "policies": {
        # Utilization: 0.8 +- 3.5 % = [0.772, 0.828]: 0.8 and 0.81 in, 0.9 out. Max Stretch: 1.2 +- 1.5 % = [1.182,
        # 1.218]: 1.2 and 1.21 in, 1.3 out. 2 of 3 runs (67 %) within each: short of the paper's 80 %.
        "set-10": {
            "measured": {
                "utilization": [0.8, 0.81, 0.9],
                "io_slowdown": [1.5, 1.55, 1.6],
                "max_stretch": [1.3, 1.2, 1.21],
            },
            "simulated": {"utilization": 0.8, "io_slowdown": 1.52, "max_stretch": 1.2},
        },
        # Every run within both tolerances of 0.6 (+- 0.021) and 1.5 (+- 0.0225); the second run gave no IO-slowdown.
        "system": {
            "measured": {"utilization": [0.6, 0.61, 0.59, 0.62], "io_slowdown": [2.0, None, 2.5, 3.0]}
            | {"max_stretch": [1.5, 1.51, 1.49, 1.52]},
            "simulated": {"utilization": 0.6, "io_slowdown": 2.2, "max_stretch": 1.5},
        },
    },
}
METRICS = [("utilization", "Utilization"), ("io_slowdown", "IO-slowdown"), ("max_stretch", "Max Stretch")]


@pytest.fixture
def validation_file(tmp_path):
    path = tmp_path / "validation.json"
    path.write_text(json.dumps(VALIDATION), encoding="utf-8")
    return path


@pytest.fixture
def page(validation_file):
    return read_page(build_report(JOBS, validation=validation_file).html)


def test_the_tables_hold_the_files_numbers(page):
    for policy, entry in VALIDATION["policies"].items():
        rows = page.tables[f"validation-{policy}-table"].records()
        assert [row["metric"] for row in rows] == [label for _, label in METRICS]
        for (metric, _), row in zip(METRICS, rows, strict=True):
            runs = [v for v in entry["measured"][metric] if v is not None]
            ordered = sorted(runs)
            median = ordered[len(ordered) // 2] if len(ordered) % 2 else (ordered[1] + ordered[2]) / 2
            simulated = entry["simulated"][metric]
            assert row["runs"] == str(len(entry["measured"][metric]))
            assert [float(row[name]) for name in ("min", "median", "max", "simulated")] == pytest.approx(
                [min(runs), median, max(runs), simulated], rel=1e-15
            )
            assert float(row["difference"]) == pytest.approx((median - simulated) / simulated)
    set10 = {row["metric"]: row for row in page.tables["validation-set-10-table"].records()}
    assert (set10["Utilization"]["within"], set10["Max Stretch"]["within"]) == (repr(2 / 3), repr(2 / 3))
    assert (set10["Utilization"]["tolerance"], set10["Max Stretch"]["tolerance"]) == ("0.035", "0.015")
    assert set10["IO-slowdown"]["within"] == set10["IO-slowdown"]["tolerance"] == ""  # the paper sets none
    shown = page.tables["validation-set-10-table"].column("within")
    assert [text for _, text in shown] == ["66.7 %", "", "66.7 %"]


def test_a_figure_per_metric_draws_each_policys_runs_box_and_simulated_line(page):
    for metric, label in METRICS:
        figure = page.figure(f"validation-{metric.replace('_', '-')}")
        assert figure["layout"]["yaxis"]["title"]["text"] == label
        for policy, entry in VALIDATION["policies"].items():
            traces = [trace for trace in figure["data"] if trace["x"][0] == policy]
            box, runs, simulated = traces
            values = [v for v in entry["measured"][metric] if v is not None]
            assert box["type"] == "box" and box["lowerfence"] == [min(values)] and box["upperfence"] == [max(values)]
            assert runs["y"] == values and runs["x"] == [policy] * len(values)
            assert simulated["y"] == [entry["simulated"][metric]]
            tolerance = {"utilization": 0.035, "max_stretch": 0.015}.get(metric)
            if tolerance is None:
                assert "error_y" not in simulated
            else:
                assert simulated["error_y"]["array"] == [pytest.approx(tolerance * entry["simulated"][metric])]
    system_io = page.figure("validation-io-slowdown")["data"][4]
    assert system_io["customdata"] == [1, 3, 4]  # run 2 gave no IO-slowdown


def test_the_reading_says_which_policies_meet_the_papers_criterion(page):
    readings = page.sections["validation"]["readings"]
    assert readings[0].startswith(
        "The workload ran for real on the storage, 2 jobs at the measured bandwidth B = 190 MB/s"
    )
    assert (
        "at least 80.0 % of the real runs lay within 3.5 % of the simulated Utilization and within 1.5 %" in readings[0]
    )
    assert readings[1] == (
        "set-10 misses the paper's criterion: 2 of its 3 runs lie within 3.5 % of the simulated Utilization "
        "(66.7 %) and 2 within 1.5 % of its Max Stretch (66.7 %). system, compared with the phase engine's "
        "fair-share, meets the paper's criterion: 4 of its 4 runs lie within 3.5 % of the simulated Utilization "
        "(100.0 %) and 4 within 1.5 % of its Max Stretch (100.0 %)."
    )
    assert readings[2] == "Meet the paper's criterion: system; miss it: set-10."
    assert page.sections["validation"]["missing"] is None


def test_without_a_validation_the_section_names_the_command():
    section = validation_section(read_inputs(JOBS))
    assert section.figures == () and section.tables == ()
    assert f"`{VALIDATE_COMMAND}`" in section.missing and "--validation validation.json" in section.missing
    page = read_page(build_report(JOBS).html)
    assert "iosets validate --dir DIR -o validation.json" in page.sections["validation"]["missing"]


def test_a_mapping_and_the_validate_rooms_result_give_the_same_section(validation_file):
    from iosets.validate import read_validation

    from_file = validation_section(read_inputs(JOBS, validation=validation_file))
    from_mapping = validation_section(read_inputs(JOBS, validation=VALIDATION))
    from_result = validation_section(read_inputs(JOBS, validation=read_validation(validation_file)))
    assert from_file.reading == from_mapping.reading == from_result.reading
    assert [t.frame.rows() for t in from_file.tables] == [t.frame.rows() for t in from_mapping.tables]
    assert read_inputs(JOBS, validation=validation_file).sources["validation"] == str(validation_file)
    with pytest.raises(InputError, match="validation: expected a validation.json path, its JSON mapping or a Valid"):
        read_inputs(JOBS, validation=[1, 2])


def _with(path, change):
    """``VALIDATION`` changed by ``change(data)``, written at ``path``."""
    data = json.loads(json.dumps(VALIDATION))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")  # NaN and Infinity as JSON's extension writes them
    return path


def _set(*keys, value):
    def change(data):
        for key in keys[:-1]:
            data = data[key]
        data[keys[-1]] = value

    return change


def _drop(*keys):
    def change(data):
        for key in keys[:-1]:
            data = data[key]
        del data[keys[-1]]

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_drop("bandwidth"), "bandwidth: missing"),
        (_drop("policies", "set-10", "simulated"), "policies.set-10.simulated: missing"),
        (_drop("policies", "system", "measured", "max_stretch"), "policies.system.measured.max_stretch: missing"),
        (
            _set("policies", "set-10", "measured", "utilization", 1, value="0.81"),
            "policies.set-10.measured.utilization[1]: expected a finite number >= 0 or null, got '0.81'",
        ),
        (
            _set("policies", "set-10", "measured", "max_stretch", 2, value=float("nan")),
            "policies.set-10.measured.max_stretch[2]: expected a finite number >= 0 or null, got nan",
        ),
        (
            _set("policies", "system", "simulated", "utilization", value=float("inf")),
            "policies.system.simulated.utilization: expected a finite number >= 0 or null, got inf",
        ),
        (
            _set("policies", "system", "measured", "io_slowdown", 0, value=-2.0),
            "policies.system.measured.io_slowdown[0]: expected a finite number >= 0 or null, got -2.0",
        ),
        (_set("bandwidth", value=0), "bandwidth: expected a finite number > 0, got 0"),
        (_set("bandwidth", value=True), "bandwidth: expected a finite number > 0, got True"),
        (
            _set("policies", "set-10", "measured", "utilization", value=[0.8] * 10_001),
            "policies.set-10.measured.utilization: expected 1 to 10,000 runs, got 10,001",
        ),
        (
            _set("policies", "set-10", "measured", "utilization", value=[]),
            "policies.set-10.measured.utilization: expected 1 to 10,000 runs, got 0",
        ),
        (
            _set("policies", "set-10", "measured", "io_slowdown", value=[1.5, 1.6]),
            "policies.set-10.measured: expected one value per run in each metric, got utilization 3, io_slowdown 2, "
            "max_stretch 3",
        ),
        (
            _set("policies", "set-100", value={}),
            "policies: unknown policy 'set-100'; expected one of system, set-10, fair-share, exclusive-fcfs, "
            "share-priority",
        ),
        (_set("policies", value={}), "policies: expected at least one of system, set-10"),
        (_set("policies", value=[]), "policies: expected a JSON object, got []"),
        (_set("policies", "system", "measured", value=7), "policies.system.measured: expected a JSON object, got 7"),
        (
            _set("workload", "jobs", 0, "release", value=-1.0),
            "workload: jobs[0].release: expected a number >= 0, got -1.0",
        ),
        (
            _set("workload", "jobs", value=[{}] * 10_001),
            "workload.jobs: 10,001 jobs; a validation holds at most 10,000",
        ),
    ],
)
def test_a_malformed_validation_file_is_refused_naming_the_file_and_the_key(tmp_path, change, message):
    path = _with(tmp_path / "validation.json", change)
    with pytest.raises(InputError) as error:
        build_report(JOBS, validation=path)
    assert str(error.value).startswith(f"{path}: {message}")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
        ("[1, 2]", "expected a JSON object, got [1, 2]"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON (nested too deeply)"),
    ],
)
def test_a_file_that_is_no_validation_object_is_refused(tmp_path, text, message):
    path = tmp_path / "validation.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as error:
        build_report(JOBS, validation=path)
    assert str(error.value) == f"{path}: {message}"


def test_a_missing_or_oversized_file_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    with pytest.raises(InputError) as missing:
        build_report(JOBS, validation=tmp_path / "none.json")
    assert str(missing.value) == f"{tmp_path / 'none.json'}: no such file"
    import iosets.validate._read as reader

    monkeypatch.setattr(reader, "MAX_FILE_BYTES", 100)
    path = tmp_path / "big.json"
    path.write_text(" " * 101, encoding="utf-8")
    with pytest.raises(InputError) as large:
        build_report(JOBS, validation=path)
    assert str(large.value) == f"{path}: 101 bytes; a validation file holds at most 100"


def test_iosets_report_shows_a_validation_file(tmp_path, validation_file):
    JOBS.write_parquet(tmp_path / "jobs.parquet")
    output = tmp_path / "r.html"
    runner = CliRunner()
    result = runner.invoke(
        app, ["report", str(tmp_path / "jobs.parquet"), "--validation", str(validation_file), "-o", str(output)]
    )
    assert result.exit_code == 0, result.output
    size = output.stat().st_size / 1e6
    assert result.stderr == (
        f"wrote {output} ({size:.1f} MB): sections verdict, overview, validation, jobs; "
        "missing: recommendation, scheduler, impact, model-check, timelines, requests\n"
    )
    page = read_page(output.read_text(encoding="utf-8"))
    assert page.tables["validation-system-table"].column("simulated") == [
        ("0.6", "0.6"),
        ("2.2", "2.2"),
        ("1.5", "1.5"),
    ]
    broken = _with(tmp_path / "broken.json", _drop("policies", "system", "simulated"))
    failed = runner.invoke(
        app, ["report", str(tmp_path / "jobs.parquet"), "--validation", str(broken), "-o", str(output)]
    )
    assert failed.exit_code == 1
    assert failed.stderr == f"error: {broken}: policies.system.simulated: missing\n"


def test_the_policies_keep_the_files_order_and_colours_across_figures(page):
    colours = [
        {
            trace["x"][0]: trace["marker"]["color"]
            for trace in page.figure(f"validation-{name}")["data"]
            if trace["type"] == "box"
        }
        for name in ("utilization", "io-slowdown", "max-stretch")
    ]
    assert colours[0] == colours[1] == colours[2] and list(colours[0]) == ["set-10", "system"]
    assert colours[0]["set-10"] != colours[0]["system"]
    assert sum(name.startswith("validation-") for name in page.tables) == 2


def test_axes_fit_each_metric(page):
    from iosets.report._palette import POLICY_PALETTE

    assert page.figure("validation-utilization")["layout"]["yaxis"]["range"] == [0, 1]  # a fraction
    for name in ("io-slowdown", "max-stretch"):
        figure = page.figure(f"validation-{name}")
        low, high = figure["layout"]["yaxis"]["range"]
        drawn = [v for trace in figure["data"] if trace["type"] == "scatter" for v in trace["y"]]
        assert low == 1.0 and high > max(drawn)  # a stretch grows from 1, every value in view
        assert {trace["marker"]["color"] for trace in figure["data"] if trace["type"] == "box"} <= set(POLICY_PALETTE)
