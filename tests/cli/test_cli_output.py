"""The command line's output helpers: valid JSON, tables from frames, text printed as it is."""

import json
import math

import polars as pl
import pytest

from iosets.cli._output import echo, print_json, show, show_error, show_warning, warnings_to_stderr
from iosets.cli._parse import parse_fields, parse_numbers, parse_pairs, parse_profile, parse_window
from iosets.cli._tables import Column, field, render_table
from iosets.errors import InputError


def test_json_maps_every_non_finite_number_to_null(capsys):
    print_json({"a": math.nan, "b": [1.0, math.inf, {"c": -math.inf}], "d": (2, "x"), "e": None})
    out = capsys.readouterr().out
    assert out == '{"a": null, "b": [1.0, null, {"c": null}], "d": [2, "x"], "e": null}\n'
    assert json.loads(out)["b"] == [1.0, None, {"c": None}]


def test_a_table_renders_a_frame_and_records_alike(capsys):
    columns = (Column("job", field("job_id"), justify="left"), Column("w_iter s", field("w_iter", "{:.2f}")))
    frame = pl.DataFrame({"job_id": ["a", "b"], "w_iter": [1.234, None]})
    show(render_table(frame, columns, title="From a frame"))
    show(render_table(frame.to_dicts(), columns, title="From records"))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "From a frame" and out[7] == "From records"
    assert out[:7] == [out[0], *out[8:14]] and len(out) == 14
    assert out[4:6] == ["│ a   │     1.23 │", "│ b   │        - │"]


def test_table_cells_titles_and_captions_are_verbatim_and_unwrapped(capsys):
    title = "/" + "/".join(["a-long-folder"] * 30) + "/x[bold red]y.csv"
    columns = (Column("[b]name[/b]", field("name"), justify="left"),)
    show(render_table([{"name": "[/]x"}], columns, title=title, caption="caption [i]kept[/i]"))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == title
    assert out[2] == "┃ [b]name[/b] ┃" and out[4] == "│ [/]x        │"
    assert out[-1].strip() == "caption [i]kept[/i]"


def test_messages_are_plain_lines_on_stderr(capsys):
    show_error("bad [red]value[/]")
    show_warning("[/] odd")
    echo("wrote x[1].csv")
    echo("on stdout", stderr=False)
    captured = capsys.readouterr()
    assert captured.err == "error: bad [red]value[/]\nwarning: [/] odd\nwrote x[1].csv\n"
    assert captured.out == "on stdout\n"


def test_library_warnings_become_warning_lines(capsys):
    import warnings

    with warnings_to_stderr():
        warnings.warn("weights capped at [2^31 - 1]", UserWarning, stacklevel=1)
    assert capsys.readouterr().err == "warning: weights capped at [2^31 - 1]\n"


@pytest.mark.parametrize(
    "parse, message",
    [
        (lambda: parse_numbers("2,,x", "--bases"), "--bases: expected a number, got 'x'"),
        (lambda: parse_numbers(" , ", "--bases"), "--bases: expected comma-separated numbers, got ' , '"),
        (lambda: parse_pairs(["c0:1"], "--weight"), "--weight: expected key=value, got 'c0:1'"),
        (lambda: parse_pairs(["c0=x"], "--limit"), "--limit c0: expected a number, got 'x'"),
        (lambda: parse_pairs(["c0=1"], "--weight", int), "--weight: unexpected key 'c0' in 'c0=1'"),
        (
            lambda: parse_fields("app=a,user", "--for"),
            "--for: expected key=value items separated by commas, got 'user'",
        ),
        (lambda: parse_profile("20,100"), "--profile: expected COUNT,MU,SIGMA such as 20,100,10, got '20,100'"),
        (
            lambda: parse_profile("20.5,100,10"),
            "--profile: expected COUNT,MU,SIGMA such as 20,100,10, got '20.5,100,10'",
        ),
    ],
)
def test_malformed_options_raise_input_errors_naming_the_option(parse, message):
    with pytest.raises(InputError) as raised:
        parse()
    assert str(raised.value) == message


def test_options_parse_to_values():
    assert parse_numbers("2, 10,", "--bases") == [2.0, 10.0]
    assert parse_pairs(["3=1.5", "4=2"], "--weight", int) == {3: 1.5, 4: 2.0}
    assert parse_fields("app=lammps, user=1001", "--for") == {"app": "lammps", "user": "1001"}
    assert parse_profile("20,100,10") == (20, 100.0, 10.0)


def test_on_a_terminal_messages_go_through_rich_still_verbatim(monkeypatch, capsys):
    from iosets.cli import _output

    monkeypatch.setattr(_output, "_is_terminal", lambda stderr: True)
    long_reason = "x[bold red]y.csv line 3: got '[/]x' " + "and more " * 20
    show_error(long_reason)
    assert capsys.readouterr().err == f"error: {long_reason}\n"


def test_a_progress_description_is_printed_verbatim(monkeypatch, capsys):
    from iosets.cli import _output

    monkeypatch.setattr(_output, "_is_terminal", lambda stderr: True)
    assert list(_output.progress([1, 2], description="x[bold]y[/]")) == [1, 2]
    assert capsys.readouterr().err.startswith("x[bold]y[/] ━")


def test_a_table_cell_of_a_number_that_could_not_be_computed_is_missing():
    cell = field("io_slowdown", "{:.3f}")
    assert [cell({"io_slowdown": v}) for v in (math.nan, math.inf, None, 1.5)] == ["-", "-", "-", "1.500"]
    assert field("w_iter", missing="not periodic")({"w_iter": -math.inf}) == "not periodic"


def test_a_repeated_key_is_an_error():
    with pytest.raises(InputError, match="^--weight: c0 given twice$"):
        parse_pairs(["c0=1", "c1=2", "c0=3"], "--weight")
    with pytest.raises(InputError, match="^--weight: 03 given twice$"):
        parse_pairs(["3=1", "03=2"], "--weight", int)  # the same class once converted


@pytest.mark.parametrize("text", ["600", "1,2,3", ","])
def test_a_window_is_two_numbers(text):
    with pytest.raises(InputError) as raised:
        parse_window(text)
    assert str(raised.value).startswith("--window: expected ")
    assert parse_window(" 600, 1400 ") == (600.0, 1400.0)
