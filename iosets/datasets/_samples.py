"""Small bundled samples, loaded as scikit-learn loads its datasets: data plus a description."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import polars as pl

DATA_MODULE = "iosets.datasets.data"
DESCR_MODULE = "iosets.datasets.descr"
SAMPLE_TRACES = {"blkparse": "sample.blkparse.txt", "msr": "sample.msr.csv", "spc": "sample.spc.csv"}
"""File of each bundled block trace, by format."""


def _read_descr(name: str) -> str:
    """The text of ``descr/<name>``."""
    return (resources.files(DESCR_MODULE) / name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class SampleTraces:
    """The bundled block traces (see :func:`load_sample_traces`)."""

    requests: dict[str, pl.DataFrame]
    """The requests table of each trace, by format."""
    paths: dict[str, Path]
    """The file of each trace, by format."""
    descr: str
    """What the traces hold."""


@dataclass(frozen=True)
class DarshanExamples:
    """The Darshan logs shipped with pydarshan (see :func:`load_darshan_examples`)."""

    paths: dict[str, Path]
    """Each log, by file name."""
    descr: str
    """What the logs hold."""


def load_sample_traces() -> SampleTraces:
    """Load the three bundled block traces (blkparse, MSR Cambridge, SPC), each with a periodic writer.

    Returns
    -------
    SampleTraces
        ``requests``: format -> requests table (columns ``job_id, rank, op, offset, size, start, end, file``;
        66 blkparse, 320 MSR and 400 SPC requests, two jobs each), ``paths``: format -> file,
        ``descr``: the description of the traces.

    Examples
    --------
    >>> from iosets.datasets import load_sample_traces
    >>> samples = load_sample_traces()
    >>> {name: ops.shape for name, ops in samples.requests.items()}
    {'blkparse': (66, 8), 'msr': (320, 8), 'spc': (400, 8)}
    >>> samples.paths["msr"].name
    'sample.msr.csv'
    """
    from ..analyzer import read_blocktrace

    paths = {fmt: Path(str(resources.files(DATA_MODULE) / name)) for fmt, name in SAMPLE_TRACES.items()}
    ops = {fmt: cast("pl.DataFrame", read_blocktrace(path, format=fmt)) for fmt, path in paths.items()}
    return SampleTraces(requests=ops, paths=paths, descr=_read_descr("sample_traces.rst"))


def load_darshan_examples() -> DarshanExamples:
    """Load the paths of the example Darshan logs shipped with pydarshan (``darshan/examples/example_logs``).

    Returns
    -------
    DarshanExamples
        ``paths``: file name -> log (six logs with pydarshan 3.5; two carry DXT traces),
        ``descr``: the description of the logs.

    Examples
    --------
    >>> from iosets.datasets import load_darshan_examples
    >>> examples = load_darshan_examples()
    >>> sorted(examples.paths)[:3]
    ['dxt.darshan', 'example.darshan', 'ior_hdf5_example.darshan']
    """
    spec = find_spec("darshan")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("load_darshan_examples needs pydarshan: pip install darshan")
    folder = Path(spec.submodule_search_locations[0]) / "examples" / "example_logs"
    paths = {path.name: path for path in sorted(folder.glob("*.darshan"))}
    return DarshanExamples(paths=paths, descr=_read_descr("darshan_examples.rst"))
