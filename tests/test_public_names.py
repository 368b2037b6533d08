"""Every room's lazy public names resolve, and nothing heavy is imported before a name is used."""

import importlib
import subprocess
import sys

import pytest

ROOMS = [
    "iosets",
    "iosets.analyzer",
    "iosets.recommender",
    "iosets.replay",
    "iosets.datasets",
    "iosets.report",
    "iosets.arbiter",
    "iosets.validate",
]


@pytest.mark.parametrize("room", ROOMS)
def test_every_public_name_resolves_to_an_object_of_that_name(room):
    module = importlib.import_module(room)
    for name in module.__all__:
        value = getattr(module, name)
        if callable(value) and hasattr(value, "__name__"):
            assert value.__name__ == name, f"{room}.{name} is {value.__name__}"
    assert set(module.__all__) <= set(dir(module))


def test_importing_the_rooms_loads_no_heavy_library():
    rooms = (
        "iosets, iosets.analyzer, iosets.recommender, iosets.replay, iosets.datasets, iosets.report, iosets.arbiter, "
        "iosets.validate, iosets.cli"
    )
    code = f"import sys, {rooms}; " + (
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'numpy', 'polars', 'pyarrow', 'scipy', 'sklearn', 'darshan', 'pydantic', 'jinja2', 'plotly'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_unknown_name_is_an_attribute_error():
    import iosets.replay

    with pytest.raises(AttributeError, match="module 'iosets.replay' has no attribute 'nope'"):
        iosets.replay.nope  # noqa: B018
