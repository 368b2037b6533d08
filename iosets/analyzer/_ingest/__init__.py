"""Ingest: every trace format into the requests table (:data:`iosets.schemas.REQUESTS`); public in iosets.analyzer.

One module per format (``_darshan``, ``_blkparse``, ``_msr``, ``_spc``, ``_ops``) defines an
:class:`Ingester`: its name, the suffixes and first bytes that identify it, what may become
``job_id``, and a reader that returns the requests table. :data:`INGESTERS` in ``_registry`` lists
them; :func:`ingest` reads any of them (``format="auto"`` asks :func:`sniff_format`) and checks
the result with ``REQUESTS.validate``.

Adding a format is one module that defines ``INGESTER`` and one line in the ``INGESTERS`` tuple.
"""

from ._base import Ingester, SkipReport
from ._darshan import DarshanJob, read_darshan
from ._darshan_counters import ModuleTotals
from ._darshan_lustre import FileLayouts
from ._ops import write_requests
from ._registry import BLOCK_FORMATS, INGESTERS, ingest, read_blocktrace, read_requests, sniff_format

__all__ = [
    "BLOCK_FORMATS",
    "INGESTERS",
    "DarshanJob",
    "FileLayouts",
    "Ingester",
    "ModuleTotals",
    "SkipReport",
    "ingest",
    "read_blocktrace",
    "read_darshan",
    "read_requests",
    "sniff_format",
    "write_requests",
]
