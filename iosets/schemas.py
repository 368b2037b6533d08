"""Every interchange table of iosets: its columns, their Polars types, what they mean, and one validator.

Readers, rooms and the command line all call :meth:`TableSchema.validate`, so a
table is checked the same way wherever it comes from. ``python -m iosets.schemas``
prints ``docs/formats.md``.

Examples
--------
>>> import polars as pl
>>> ops = pl.DataFrame({"job_id": ["j"], "rank": [0], "op": ["write"], "offset": [0], "size": [4096], "start": [1.5]})
>>> REQUESTS.validate(ops).columns
['job_id', 'rank', 'op', 'offset', 'size', 'start', 'end', 'file']
>>> REQUESTS.validate(ops.with_columns(pl.lit("erase").alias("op")), source="ops.csv")
Traceback (most recent call last):
...
iosets.errors.InputError: ops.csv row 0: op: expected 'read'|'write', got 'erase'
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from .errors import InputError

__all__ = [
    "ANALYSIS_ERRORS",
    "JOBS",
    "JOB_ACTIVITY",
    "JOB_DETAIL",
    "JOB_SIZES",
    "MODULE_TOTALS",
    "NOT_PERIODIC_CODES",
    "NOT_PERIODIC_MEANINGS",
    "REQUESTS",
    "RECOMMENDATION",
    "RECOMMENDED_JOBS",
    "REQUEST_CLASSES",
    "REQUEST_RESULTS",
    "SCHEMAS",
    "SET_SUMMARY",
    "SITE_FILES",
    "SITE_REQUESTS",
    "TIMELINE",
    "TRACE_REPLAY_JOBS",
    "TRACE_REPLAY_PHASES",
    "TRACE_REPLAY_SCHEDULERS",
    "TRACE_REPLAY_SHARES",
    "TUNE_RANKING",
    "WORKLOAD_JOBS",
    "WORKLOAD_PHASES",
    "Column",
    "TableSchema",
    "columns_table",
    "formats_markdown",
]


@dataclass(frozen=True)
class Column:
    """One column: name, Polars type, whether it must be present and may hold nulls, and the rule its values obey.

    ``check`` is a Polars expression true for a valid non-null value, ``expect`` says
    the rule in words (it completes "expected ..."); a Float64 value must also be
    finite. ``dtype`` None: any type (the type of another column, such as a
    request's class). ``filled``: an optional column the validator adds as nulls
    when it is absent.
    """

    name: str
    dtype: pl.DataType | type[pl.DataType] | None
    doc: str
    required: bool = True
    nullable: bool = False
    check: pl.Expr | None = None
    expect: str = ""
    filled: bool = True


@dataclass(frozen=True)
class TableSchema:
    """A table's columns and its one validator."""

    name: str
    doc: str
    columns: tuple[Column, ...]
    formats: str = "Parquet or CSV"
    _by_name: dict[str, Column] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {c.name: c for c in self.columns})

    def __getitem__(self, name: str) -> Column:
        return self._by_name[name]

    @property
    def names(self) -> list[str]:
        """Column names in order."""
        return [c.name for c in self.columns]

    @property
    def required(self) -> tuple[str, ...]:
        """Columns every table must have."""
        return tuple(c.name for c in self.columns if c.required)

    @property
    def polars(self) -> dict[Any, Any]:
        """``{name: Polars type}`` of the typed columns (for ``schema=`` and ``schema_overrides=``)."""
        return {c.name: c.dtype for c in self.columns if c.dtype is not None}

    def empty(self) -> pl.DataFrame:
        """A table with these columns and no row."""
        return pl.DataFrame(schema=self.polars)

    def validate(
        self,
        frame: pl.DataFrame,
        *,
        source: str | None = None,
        require: tuple[str, ...] | list[str] = (),
        fill_optional: bool = True,
        row_offset: int = 0,
    ) -> pl.DataFrame:
        """Check and type ``frame``; return it with the schema's types (extra columns kept as they are).

        Raises :class:`~iosets.errors.InputError` naming ``source`` (default: the table's
        name), the first bad row (0-based, plus ``row_offset``), the column, the rule
        and the value found. ``require`` adds optional columns a caller needs;
        ``fill_optional`` adds the optional columns that are missing, as nulls.
        """
        where = source or self.name
        if not isinstance(frame, pl.DataFrame):
            raise InputError(f"{where}: expected a polars DataFrame, got {type(frame).__name__}")
        needed = [*self.required, *(n for n in require if n not in self.required)]
        missing = [n for n in needed if n not in frame.columns]
        if missing:
            raise InputError(
                f"{where}: missing column(s) {', '.join(missing)}; expected {', '.join(needed)}"
                f" (has {', '.join(frame.columns) or 'none'})"
            )
        frame = self._cast(frame, where)
        if fill_optional:
            absent = [c for c in self.columns if c.filled and c.dtype is not None and c.name not in frame.columns]
            if absent:
                frame = frame.with_columns(pl.lit(None, c.dtype).alias(c.name) for c in absent)
        self._check_values(frame, where, row_offset)
        return frame

    def _cast(self, frame: pl.DataFrame, where: str) -> pl.DataFrame:
        wanted = {c.name: c.dtype for c in self.columns if c.dtype is not None and c.name in frame.columns}
        changed = {n: t for n, t in wanted.items() if frame.schema[n] != t}
        for name, dtype in changed.items():
            before = frame[name]
            try:
                after = before.cast(dtype, strict=False)
            except (pl.exceptions.PolarsError, OverflowError):
                raise InputError(f"{where}: column {name}: expected {_type_name(dtype)}, got {before.dtype}") from None
            lost = after.is_null() & before.is_not_null()
            if dtype == pl.Int64 and before.dtype.is_float():
                lost = lost | (before.is_finite() & (before != before.floor()))
            if lost.any():
                row = int(lost.arg_true()[0])
                raise InputError(f"{where} row {row}: {name}: expected {_type_name(dtype)}, got {_show(before[row])}")
            frame = frame.with_columns(after)
        return frame

    def _check_values(self, frame: pl.DataFrame, where: str, row_offset: int) -> None:
        rules = []
        for column in self.columns:
            if column.name not in frame.columns:
                continue
            value = pl.col(column.name)
            if not column.nullable:
                rules.append((column, value.is_not_null(), "a value (not null)"))
            if column.dtype == pl.Float64:
                rules.append((column, value.is_null() | value.is_finite(), "a finite number"))
            if column.check is not None:
                rules.append((column, value.is_null() | column.check.fill_null(False), column.expect))
        if not rules or frame.height == 0:
            return
        ok = frame.select(rule.alias(f"_{i}") for i, (_, rule, _) in enumerate(rules))
        failed = [i for i, all_ok in enumerate(ok.select(pl.all().all()).row(0)) if not all_ok]
        if not failed:
            return
        first = min(failed, key=lambda i: (int(ok[:, i].not_().arg_true()[0]), i))
        column, _, expect = rules[first]
        row = int(ok[:, first].not_().arg_true()[0])
        raise InputError(
            f"{where} row {row + row_offset}: {column.name}: expected {expect}, got {_show(frame[column.name][row])}"
        )


def _type_name(dtype) -> str:
    return {pl.Int64: "an integer", pl.Float64: "a number", pl.String: "text", pl.Boolean: "true or false"}.get(
        dtype, str(dtype)
    )


def _show(value) -> str:
    return "null" if value is None else repr(value)


def _type_label(column: Column) -> str:
    return "any" if column.dtype is None else str(column.dtype).replace("String", "str").lower()


# ---------------------------------------------------------------------------------------------- ops

REQUESTS = TableSchema(
    "ops",
    "Request-level trace: one row per I/O request. Every ingester produces it; the request "
    "replay and the periodicity detector read it. Times are seconds since the job's start "
    "(Darshan DXT) or since the trace's start (block traces).",
    (
        Column("job_id", pl.String, "Job (or trace) the request belongs to."),
        Column(
            "rank",
            pl.Int64,
            "MPI rank, process, or device/stream id for block traces.",
            check=pl.col("rank") >= 0,
            expect="an integer >= 0",
        ),
        Column(
            "op",
            pl.String,
            "'read' or 'write'.",
            check=pl.col("op").is_in(["read", "write"]),
            expect="'read'|'write'",
        ),
        Column(
            "offset", pl.Int64, "Byte offset in the file or device.", check=pl.col("offset") >= 0, expect="bytes >= 0"
        ),
        Column(
            "size",
            pl.Int64,
            "Bytes moved; 0 for a request that moves no data (a flush).",
            check=pl.col("size") >= 0,
            expect="bytes >= 0",
        ),
        Column(
            "start",
            pl.Float64,
            "Issue date (s).",
            check=(pl.col("start") >= 0),
            expect="a date >= 0",
        ),
        Column(
            "end",
            pl.Float64,
            "Completion date (s); null where the source records none (SPC).",
            required=False,
            nullable=True,
            check=(pl.col("end") >= pl.col("start")),
            expect="a date >= start",
        ),
        Column("file", pl.String, "File name, when the source has one.", required=False, nullable=True),
        Column(
            "phase",
            pl.Int64,
            "I/O phase index within the job (iosets-wfq serves one phase per set at a time).",
            required=False,
            nullable=True,
            check=pl.col("phase") >= 0,
            expect="an integer >= 0",
            filled=False,
        ),
    ),
)

SITE_REQUESTS = TableSchema(
    "site ops",
    "Many jobs' requests on one clock (`iosets ingest LOGS... --site`, `site_trace`), sorted by start: a Darshan "
    "job's requests at its start date + their DXT offset (s since the epoch), block traces at their own dates. "
    "A job without DXT gets one request per HEATMAP bin with bytes and per direction, spread over the bin "
    "(`synthetic`).",
    (
        Column("job_id", pl.String, "Job, as in the jobs table (the logs of one job merged)."),
        Column(
            "rank",
            pl.Int64,
            "MPI rank, process, or device/stream id; -1 for a synthesised request.",
            check=pl.col("rank") >= -1,
            expect="an integer >= -1",
        ),
        REQUESTS["op"],
        Column(
            "offset",
            pl.Int64,
            "Byte offset in the file or device; null for a synthesised request.",
            nullable=True,
            check=pl.col("offset") >= 0,
            expect="bytes >= 0",
        ),
        REQUESTS["size"],
        REQUESTS["start"],
        REQUESTS["end"],
        Column("file", pl.String, "File name, when the source has one (null when synthesised).", nullable=True),
        Column(
            "phase",
            pl.Int64,
            "Index of the request's I/O phase in its job, from the analyzer's segmentation (the jobs table's "
            "n_phases); null for a synthesised request in a HEATMAP bin outside every phase.",
            nullable=True,
            check=pl.col("phase") >= 0,
            expect="an integer >= 0",
        ),
        Column("synthetic", pl.Boolean, "True for a request synthesised from HEATMAP bins."),
    ),
)

SITE_FILES = TableSchema(
    "file layouts",
    "How the files of a site trace's jobs are striped over the file system's storage targets (Lustre OSTs), from "
    "their Darshan logs' LUSTRE records (written beside the site trace as `<name>.files.<ext>`; absent when no log "
    "has LUSTRE records). One row per file and job; a file whose records are unsound or disagree has no row, and "
    "the site trace's skip list says why. For a composite (PFL) layout, its first component's.",
    (
        Column("file", pl.String, "File name, as the site trace's `file` column holds it."),
        Column("job_id", pl.String, "Job, as in the site trace."),
        Column(
            "stripe_size",
            pl.Int64,
            "Bytes per stripe (LUSTRE_STRIPE_SIZE).",
            check=pl.col("stripe_size") > 0,
            expect="bytes > 0",
        ),
        Column(
            "stripe_count",
            pl.Int64,
            "Targets the file is striped over (LUSTRE_STRIPE_WIDTH).",
            check=pl.col("stripe_count") >= 1,
            expect="an integer >= 1",
        ),
        Column(
            "first_target",
            pl.Int64,
            "Target (OST index) of the file's first stripe (LUSTRE_OST_ID_0); null when the record lists none.",
            nullable=True,
            check=(pl.col("first_target") >= 0)
            & (pl.col("fs_targets").is_null() | (pl.col("first_target") < pl.col("fs_targets"))),
            expect="an integer >= 0, below fs_targets",
        ),
        Column(
            "fs_targets",
            pl.Int64,
            "Targets (OSTs) of the file system (LUSTRE_OSTS); null when the record has none (darshan 3.5 records).",
            nullable=True,
            check=pl.col("fs_targets") >= 1,
            expect="an integer >= 1",
        ),
    ),
)

# --------------------------------------------------------------------------------------------- jobs

NOT_PERIODIC_MEANINGS = {
    "no_io": "moved no byte",
    "no_timeline": "has counters only (no DXT, no HEATMAP): nothing says when it did I/O",
    "few_bytes": "moved too few bytes for its rhythm to matter (console output, a config file)",
    "io_bound": "does I/O most of its run: no compute between its phases",
    "few_phases": "has too few I/O phases for a period",
    "irregular": "has phases, but no period explains their spacing with enough confidence",
    "short_run": "ran for too few periods for its period to be trusted",
}
"""What each ``not_periodic`` code says about a job ("the job ..."), in the order the analyzer's gates try them."""
NOT_PERIODIC_CODES = tuple(NOT_PERIODIC_MEANINGS)
"""Why a job has no period (the jobs table's ``not_periodic``), in the order the analyzer's gates try them."""

_JOB_COLUMNS = (
    Column("job_id", pl.String, "Job id (scheduler's id, or the trace's name)."),
    Column("user", pl.String, "User (uid or name).", required=False, nullable=True),
    Column("app", pl.String, "Application: executable basename or job name.", required=False, nullable=True),
    Column("nprocs", pl.Int64, "Processes.", required=False, nullable=True, check=pl.col("nprocs") >= 1, expect=">= 1"),
    Column(
        "nodes",
        pl.Int64,
        "Nodes the job ran on, as its scheduler counts them (null in a Darshan log's row).",
        required=False,
        nullable=True,
        check=pl.col("nodes") >= 1,
        expect="an integer >= 1",
    ),
    Column(
        "start",
        pl.Float64,
        "Start date (s since the epoch).",
        required=False,
        nullable=True,
    ),
    Column(
        "end",
        pl.Float64,
        "End date (s since the epoch).",
        required=False,
        nullable=True,
        check=(pl.col("start").is_null() | (pl.col("end") >= pl.col("start"))),
        expect="a date >= start",
    ),
    Column(
        "runtime",
        pl.Float64,
        "end - start (s).",
        required=False,
        nullable=True,
        check=pl.col("runtime") >= 0,
        expect="seconds >= 0",
    ),
    Column(
        "bytes_read",
        pl.Float64,
        "Bytes read.",
        required=False,
        nullable=True,
        check=pl.col("bytes_read") >= 0,
        expect="bytes >= 0",
    ),
    Column(
        "bytes_written",
        pl.Float64,
        "Bytes written.",
        required=False,
        nullable=True,
        check=pl.col("bytes_written") >= 0,
        expect="bytes >= 0",
    ),
    Column(
        "io_time",
        pl.Float64,
        "Time spent in I/O: read, write and metadata, every module (s, mean over ranks).",
        required=False,
        nullable=True,
        check=pl.col("io_time") >= 0,
        expect="seconds >= 0",
    ),
    Column(
        "reads",
        pl.Int64,
        "Read operations (every module, none counted twice).",
        required=False,
        nullable=True,
        check=pl.col("reads") >= 0,
        expect="an integer >= 0",
    ),
    Column(
        "writes",
        pl.Int64,
        "Write operations (every module, none counted twice).",
        required=False,
        nullable=True,
        check=pl.col("writes") >= 0,
        expect="an integer >= 0",
    ),
    Column(
        "modules",
        pl.String,
        "Instrumentation modules with traffic, top layer first: 'H5D>MPI-IO>POSIX,STDIO'.",
        required=False,
        nullable=True,
    ),
    Column(
        "w_iter",
        pl.Float64,
        "Characteristic time: mean time between the starts of two I/O phases (s); null when not periodic.",
        required=False,
        nullable=True,
        check=(pl.col("w_iter") > 0),
        expect="seconds > 0",
    ),
    Column(
        "w_iter_confidence",
        pl.Float64,
        "Confidence in w_iter, 0..1.",
        required=False,
        nullable=True,
        check=pl.col("w_iter_confidence").is_between(0, 1),
        expect="a number in [0, 1]",
    ),
    Column(
        "alpha_io",
        pl.Float64,
        "Fraction of the runtime spent doing I/O, 0..1.",
        required=False,
        nullable=True,
        check=pl.col("alpha_io").is_between(0, 1),
        expect="a number in [0, 1]",
    ),
    Column(
        "n_phases",
        pl.Int64,
        "I/O phases found.",
        required=False,
        nullable=True,
        check=pl.col("n_phases") >= 0,
        expect=">= 0",
    ),
    Column(
        "not_periodic",
        pl.String,
        "Why w_iter is null: "
        + ", ".join(NOT_PERIODIC_CODES)
        + " (docs: guides/analyze.md, 'Reading the jobs table').",
        required=False,
        nullable=True,
        check=pl.col("not_periodic").is_in(NOT_PERIODIC_CODES),
        expect="one of " + ", ".join(NOT_PERIODIC_CODES),
    ),
    Column(
        "explanation",
        pl.String,
        "One sentence: the period found, or why there is none.",
        required=False,
        nullable=True,
    ),
    Column(
        "source",
        pl.String,
        "Where the rhythm came from: 'dxt', 'heatmap', 'counters' or 'ops'.",
        required=False,
        nullable=True,
    ),
    Column(
        "rhythm_from",
        pl.String,
        "Modules the rhythm was read from: 'DXT_MPIIO+DXT_POSIX', 'DXT_POSIX', 'HEATMAP', 'counters', 'ops'.",
        required=False,
        nullable=True,
    ),
    Column(
        "resolution",
        pl.Float64,
        "Time resolution of that source (s): 1e-6 for DXT, the bin width for HEATMAP; null for counters.",
        required=False,
        nullable=True,
        check=pl.col("resolution") >= 0,
        expect="seconds >= 0",
    ),
    Column(
        "partial",
        pl.Boolean,
        "True when a DXT trace was truncated (Darshan ran out of DXT memory): it covers the run's start only.",
        required=False,
        nullable=True,
    ),
    Column(
        "n_logs",
        pl.Int64,
        "Logs merged into this job (one per process or job step); null for other traces.",
        required=False,
        nullable=True,
        check=pl.col("n_logs") >= 1,
        expect="an integer >= 1",
    ),
    Column(
        "step",
        pl.String,
        "Job step, when the logs record one or one job id holds runs that started apart.",
        required=False,
        nullable=True,
    ),
    Column(
        "path",
        pl.String,
        "Log the row came from (analyze; the first of a merged job's logs).",
        required=False,
        nullable=True,
    ),
)

JOBS = TableSchema(
    "jobs",
    "One row per job: what `iosets analyze` writes and `iosets recommend` and `iosets tune` read.",
    _JOB_COLUMNS,
)

_RECOMMENDATION_COLUMNS = (
    Column("set", pl.Int64, "IO-SETS set; a smaller set has a higher priority (SET-10: round(log10 w_iter))."),
    Column(
        "priority",
        pl.Float64,
        "Bandwidth priority of the set (SET-10: 10^-set).",
        check=(pl.col("priority") > 0),
        expect="a number > 0",
    ),
    Column(
        "conservative",
        pl.Boolean,
        "True when the job's evidence is thin (no confident w_iter, or a not_periodic code): it is then in the "
        "conservative set or a lower-priority one.",
    ),
    Column(
        "wfq_weight",
        pl.Int64,
        "AGIOS WFQ weight: bytes per round.",
        check=pl.col("wfq_weight") >= 1,
        expect="an integer >= 1",
    ),
    Column(
        "rbfq_reservation",
        pl.Float64,
        "RBFQ reservation (bytes/s); null without a bandwidth.",
        nullable=True,
        check=(pl.col("rbfq_reservation") >= 0),
        expect="bytes/s >= 0",
    ),
    Column(
        "rbfq_weight",
        pl.Float64,
        "RBFQ weight: priority / the lowest priority.",
        check=(pl.col("rbfq_weight") > 0),
        expect="a number > 0",
    ),
    Column(
        "rbfq_limit",
        pl.Float64,
        "RBFQ upper bound (bytes/s); null for none.",
        nullable=True,
        check=(pl.col("rbfq_limit") > 0),
        expect="bytes/s > 0",
    ),
)

RECOMMENDATION = TableSchema(
    "recommendation columns",
    "The columns the recommender adds to a jobs table.",
    _RECOMMENDATION_COLUMNS,
)

RECOMMENDED_JOBS = TableSchema(
    "recommended jobs",
    "A jobs table with its recommendation: what `iosets recommend -o` writes and `iosets export` reads.",
    _JOB_COLUMNS + _RECOMMENDATION_COLUMNS,
)

SET_SUMMARY = TableSchema(
    "set summary",
    "One row per set of a recommendation (a set's reservation is its largest job's: one job of a set does I/O at a "
    "time).",
    (
        Column("set", pl.Int64, "Set."),
        Column("priority", pl.Float64, "Priority."),
        Column("n_jobs", pl.UInt32, "Jobs in the set."),
        Column("w_iter_min", pl.Float64, "Smallest w_iter of the set (s).", nullable=True),
        Column("w_iter_max", pl.Float64, "Largest w_iter of the set (s).", nullable=True),
        Column("wfq_weight", pl.Int64, "WFQ weight (bytes per round)."),
        Column("rbfq_weight", pl.Float64, "RBFQ weight."),
        Column(
            "rbfq_reservation",
            pl.Float64,
            "RBFQ reservation of the set (bytes/s): the largest of its jobs' (one job of a set does I/O at a time); "
            "the sets' reservations sum to at most the bandwidth. Null without a bandwidth.",
            nullable=True,
        ),
        Column("rbfq_limit", pl.Float64, "RBFQ limit per job (bytes/s).", nullable=True),
    ),
)

MODULE_TOTALS = TableSchema(
    "module totals",
    "Each Darshan log's traffic per instrumentation module (written beside the jobs table as "
    "`<name>.modules.<ext>`): the breakdown of the jobs table's bytes, operations and I/O time.",
    (
        Column("job_id", pl.String, "Job (row of the jobs table) the log went into."),
        Column("path", pl.String, "The log."),
        Column(
            "module",
            pl.String,
            "Darshan module: POSIX, MPI-IO, STDIO, H5F, H5D, PNETCDF_FILE, PNETCDF_VAR, DFS, DAOS; 'STDIO streams' "
            "for STDIO's <STDIN>, <STDOUT> and <STDERR> (console text, never counted).",
        ),
        Column("bytes_read", pl.Int64, "Bytes read through the module."),
        Column("bytes_written", pl.Int64, "Bytes written through the module."),
        Column("reads", pl.Int64, "Read operations."),
        Column("writes", pl.Int64, "Write operations."),
        Column("io_time", pl.Float64, "Read, write and metadata time, summed over ranks (s)."),
        Column(
            "counted",
            pl.Boolean,
            "True when the module's traffic reaches the job's totals (the stacking rule: docs/guides/analyze.md, "
            "'Reading the jobs table'); False for a layer above one that counts it already.",
        ),
    ),
)

_SIZE_BUCKET_NAMES = (
    "0_100",
    "100_1K",
    "1K_10K",
    "10K_100K",
    "100K_1M",
    "1M_4M",
    "4M_10M",
    "10M_100M",
    "100M_1G",
    "1G_PLUS",
)


def _at_least(name: str, what: str = "an integer >= 0", bound: float = 0) -> dict:
    """The check and the words of a column whose values are at least ``bound``."""
    return {"check": pl.col(name) >= bound, "expect": what}


JOB_DETAIL = TableSchema(
    "job detail",
    "Each job's requests beyond its totals (written beside the jobs table as `<name>.detail.<ext>`): what the "
    "report's job detail reads its flags from (small requests, random access, metadata-heavy, unbalanced ranks). "
    "From a Darshan log's counters (POSIX's, MPI-IO's for sizes when POSIX has none), or from the requests of "
    "another trace; a job of several logs sums its logs'.",
    (
        Column("job_id", pl.String, "Job, as in the jobs table."),
        Column("detail_from", pl.String, "'counters' (Darshan) or 'requests' (block traces, requests tables)."),
        Column(
            "size_module",
            pl.String,
            "Module whose request sizes `requests` and `small_requests` count: POSIX, 'requests', MPI-IO; null "
            "when none has sizes (STDIO only).",
            nullable=True,
        ),
        Column(
            "requests",
            pl.Int64,
            "Requests with a size (the histogram's total).",
            nullable=True,
            **_at_least("requests"),
        ),
        Column(
            "small_requests",
            pl.Int64,
            "Requests of at most 100 KiB (Darshan's buckets 0_100 to 10K_100K).",
            nullable=True,
            **_at_least("small_requests"),
        ),
        Column(
            "sequential",
            pl.Int64,
            "POSIX requests at a higher offset than the previous one of their file and rank (Darshan's "
            "POSIX_SEQ_READS + POSIX_SEQ_WRITES; from requests, a rank's first request of a file counts too); the "
            "others are random.",
            nullable=True,
            **_at_least("sequential"),
        ),
        Column(
            "accesses",
            pl.Int64,
            "The requests `sequential` is counted among (POSIX_READS + POSIX_WRITES, or every request).",
            nullable=True,
            **_at_least("accesses"),
        ),
        Column(
            "meta_time",
            pl.Float64,
            "Metadata time (open, stat, seek, close...) of POSIX and STDIO, summed over ranks (s); null from "
            "requests (a trace of reads and writes has none).",
            nullable=True,
            **_at_least("meta_time", "seconds >= 0"),
        ),
        Column(
            "io_time",
            pl.Float64,
            "Read, write and metadata time of POSIX and STDIO, summed over ranks (s); from requests, their durations.",
            **_at_least("io_time", "seconds >= 0"),
        ),
        Column("ranks", pl.Int64, "Processes the rank spread is over.", nullable=True, **_at_least("ranks")),
        Column(
            "slowest_rank_time",
            pl.Float64,
            "I/O time of the rank that spent the most (s): its own records, and for a shared record Darshan's "
            "POSIX_F_SLOWEST_RANK_TIME on POSIX_SLOWEST_RANK (the rest spread over the other ranks); null for one "
            "process.",
            nullable=True,
            **_at_least("slowest_rank_time", "seconds >= 0"),
        ),
        Column(
            "fastest_rank_time",
            pl.Float64,
            "I/O time of the rank that spent the least (s), as above (POSIX_F_FASTEST_RANK_TIME).",
            nullable=True,
            **_at_least("fastest_rank_time", "seconds >= 0"),
        ),
        Column(
            "slowest_rank_bytes",
            pl.Float64,
            "Bytes of the rank that moved the most, as above (POSIX_SLOWEST_RANK_BYTES).",
            nullable=True,
            **_at_least("slowest_rank_bytes", "bytes >= 0"),
        ),
        Column(
            "fastest_rank_bytes",
            pl.Float64,
            "Bytes of the rank that moved the least, as above (POSIX_FASTEST_RANK_BYTES).",
            nullable=True,
            **_at_least("fastest_rank_bytes", "bytes >= 0"),
        ),
        Column(
            "activity_bin",
            pl.Float64,
            "Width of the job's time bins in the activity table (s): its run over 48; null without a timeline "
            "(counters only).",
            nullable=True,
            **_at_least("activity_bin", "seconds >= 0"),
        ),
    ),
)

JOB_SIZES = TableSchema(
    "job request sizes",
    "Each job's requests per size bucket (written beside the jobs table as `<name>.sizes.<ext>`; buckets without "
    "requests have no row): Darshan's POSIX_SIZE_READ_*/WRITE_* and MPIIO_SIZE_READ_AGG_*/WRITE_AGG_* counters, or "
    "the requests of another trace.",
    (
        Column("job_id", pl.String, "Job, as in the jobs table."),
        Column("module", pl.String, "POSIX, MPI-IO (its aggregate sizes), or 'requests' (counted from requests)."),
        Column(
            "op", pl.String, "'read' or 'write'.", check=pl.col("op").is_in(["read", "write"]), expect="'read'|'write'"
        ),
        Column(
            "bucket",
            pl.String,
            "Darshan's bucket: " + ", ".join(_SIZE_BUCKET_NAMES) + ".",
            check=pl.col("bucket").is_in(_SIZE_BUCKET_NAMES),
            expect="one of " + ", ".join(_SIZE_BUCKET_NAMES),
        ),
        Column("smallest", pl.Int64, "Smallest size in the bucket (bytes).", **_at_least("smallest", "bytes >= 0")),
        Column(
            "largest",
            pl.Int64,
            "Largest size in the bucket (bytes; a 1 MiB request is in 100K_1M); null for 1G_PLUS.",
            nullable=True,
            check=pl.col("largest") >= pl.col("smallest"),
            expect="bytes >= smallest",
        ),
        Column("requests", pl.Int64, "Requests of the bucket.", **_at_least("requests", "an integer >= 1", 1)),
        Column(
            "bytes",
            pl.Float64,
            "Bytes the bucket's requests moved; null from counters (Darshan counts requests per bucket, not bytes).",
            nullable=True,
            **_at_least("bytes", "bytes >= 0"),
        ),
    ),
)

JOB_ACTIVITY = TableSchema(
    "job activity",
    "Each job's I/O over time (written beside the jobs table as `<name>.activity.<ext>`): its run cut in 48 equal "
    "bins, the bytes read and written in each (a request's bytes spread evenly over its duration; HEATMAP bins "
    "over theirs); bins without bytes have no row. From DXT requests, HEATMAP bins or a trace's requests; none "
    "for a job with counters only.",
    (
        Column("job_id", pl.String, "Job, as in the jobs table."),
        Column("start", pl.Float64, "Bin start (s after the job's start).", **_at_least("start", "seconds >= 0")),
        Column(
            "end",
            pl.Float64,
            "Bin end (s after the job's start).",
            check=pl.col("end") >= pl.col("start"),
            expect="seconds >= start",
        ),
        Column("bytes_read", pl.Float64, "Bytes read in the bin.", **_at_least("bytes_read", "bytes >= 0")),
        Column("bytes_written", pl.Float64, "Bytes written in the bin.", **_at_least("bytes_written", "bytes >= 0")),
    ),
)

ANALYSIS_ERRORS = TableSchema(
    "analysis errors",
    "Inputs `iosets analyze` could not read (written beside the jobs table as `<name>.errors.<ext>`).",
    (
        Column("path", pl.String, "The input."),
        Column("reason", pl.String, "Why it failed."),
    ),
)

# ----------------------------------------------------------------------------------------- workload

WORKLOAD_JOBS = TableSchema(
    "workload jobs",
    "Phase-level replay input, jobs part (`jobs.parquet` of a workload folder, or the `jobs` list of its JSON).",
    (
        Column("id", pl.String, "Job id."),
        Column(
            "release",
            pl.Float64,
            "Date the first compute phase starts (s).",
            check=(pl.col("release") >= 0),
            expect="a date >= 0",
        ),
        Column("set", pl.Int64, "Explicit set (policy 'explicit'); any integer.", required=False, nullable=True),
        Column(
            "priority",
            pl.Float64,
            "Explicit priority.",
            required=False,
            nullable=True,
            check=(pl.col("priority") > 0),
            expect="a number > 0",
        ),
        Column(
            "w_iter",
            pl.Float64,
            "Characteristic time (s); default: mean(t_cpu + io_bytes / B).",
            required=False,
            nullable=True,
            check=(pl.col("w_iter") > 0),
            expect="seconds > 0",
        ),
        Column(
            "profile",
            pl.Int64,
            "Generator profile index (CLAIRVOYANT).",
            required=False,
            nullable=True,
            check=pl.col("profile") >= 0,
            expect="an integer >= 0",
        ),
    ),
)

WORKLOAD_PHASES = TableSchema(
    "workload phases",
    "Phase-level replay input, phases part: one row per (compute, I/O) phase, grouped by job in job order.",
    (
        Column("job", pl.Int64, "Row of the job in the jobs part.", check=pl.col("job") >= 0, expect="an integer >= 0"),
        Column(
            "t_cpu",
            pl.Float64,
            "Compute time before the I/O phase (s).",
            check=(pl.col("t_cpu") >= 0),
            expect="seconds >= 0",
        ),
        Column("io_bytes", pl.Float64, "Bytes of the I/O phase.", check=(pl.col("io_bytes") >= 0), expect="bytes >= 0"),
    ),
)

# ------------------------------------------------------------------------------------------- replay

TIMELINE = TableSchema(
    "timeline",
    "Per-phase timeline of a phase replay (`iosets replay --timeline`).",
    (
        Column("job_id", pl.String, "Job id."),
        Column("phase", pl.Int64, "Phase index within the job."),
        Column("cpu_start", pl.Float64, "Compute phase start (s)."),
        Column("cpu_end", pl.Float64, "Compute phase end = I/O request date (s)."),
        Column("io_start", pl.Float64, "Date the job's set admitted the I/O phase (s)."),
        Column("io_end", pl.Float64, "I/O phase end (s)."),
    ),
)

REQUEST_RESULTS = TableSchema(
    "request results",
    "Per request of a request replay (`iosets replay-requests -o`, `RequestReplay.requests()`; read back with "
    "`RequestResults.read`).",
    (
        Column("row", pl.Int64, "Row of the request in the source requests table."),
        Column("class", None, "The request's class (value of the class_by column)."),
        Column("arrival", pl.Float64, "Arrival date (s)."),
        Column("dispatch", pl.Float64, "Date the scheduler sent it to the device (s)."),
        Column("complete", pl.Float64, "Completion date (s)."),
        Column("unit", pl.Int64, "Dispatched unit (several requests aggregated by aIOLi share one)."),
        Column("size", pl.Int64, "Bytes the request moved.", check=pl.col("size") >= 0, expect="bytes >= 0"),
        Column("scheduler", pl.String, "Scheduler replayed."),
    ),
)

REQUEST_CLASSES = TableSchema(
    "request classes",
    "Per class of a request replay (written beside the request results as `<name>.classes.<ext>`; "
    "`RequestReplay.results.classes`; `RequestReplay.metrics.classes` and `iosets replay-requests --json` give "
    "all but `scheduler`).",
    (
        Column("class", None, "Class."),
        Column(
            "set",
            pl.Int64,
            "The class's IO-SETS set when the classes are sets (classed by a `set` column, as "
            "`iosets replay-requests --rec REC --class-by set` does): draw it in the set's colour; null otherwise.",
            required=False,
            nullable=True,
        ),
        Column("bytes", pl.Float64, "Bytes served."),
        Column("requests", pl.Int64, "Requests served."),
        Column("share", pl.Float64, "Share of all bytes; null when no request moved a byte.", nullable=True),
        Column(
            "throughput",
            pl.Float64,
            "Bytes / (last completion - first arrival) (bytes/s); null over a zero span.",
            nullable=True,
        ),
        Column("latency_p50", pl.Float64, "Median latency, completion - arrival (s)."),
        Column("latency_p99", pl.Float64, "99th percentile latency (s)."),
        Column("reservation", pl.Float64, "RBFQ reservation, null if none.", nullable=True),
        Column("reservation_met", pl.Boolean, "Served at least 99 % of the reservation; null if none.", nullable=True),
        Column("scheduler", pl.String, "Scheduler replayed."),
    ),
)

TUNE_RANKING = TableSchema(
    "tune ranking",
    "Candidate mappings replayed and ranked by `iosets tune -o`, best first: by the idealised phase replay, or with "
    "`--site` by the closed-loop replay of the site's trace (its metrics are then the trace replay's). The jobs "
    "replayed (periodic, with an alpha_io; with `--overlap` those running at the busiest instant) are those "
    "`tune_selection` keeps and counts.",
    (
        Column("rank", pl.UInt32, "1 = recommended."),
        Column("mapping", pl.String, "Mapping: set-<b>, gmm or fair-share."),
        Column("n_sets", pl.Int64, "Sets the mapping uses."),
        Column("utilization", pl.Float64, "Utilization over the window; null when no job worked in it.", nullable=True),
        Column(
            "io_slowdown",
            pl.Float64,
            "IO-slowdown (geometric mean); null when no I/O phase ended in the window.",
            nullable=True,
        ),
        Column("max_stretch", pl.Float64, "Max Stretch; null when no job worked in the window.", nullable=True),
        Column(
            "idealised_rank",
            pl.UInt32,
            "`--site`: the candidate's rank in the idealised tuning of the same jobs; null for a candidate it does "
            "not hold, and in the idealised tuning itself.",
            required=False,
            nullable=True,
        ),
    ),
)

TRACE_REPLAY_JOBS = TableSchema(
    "trace replay jobs",
    "Per job and scheduler of a closed-loop trace replay (`iosets replay-trace -o`, `compare_schedulers`): what the "
    "scheduler would have done to each job of a site trace.",
    (
        Column("job_id", pl.String, "Job."),
        Column("scheduler", pl.String, "Scheduler replayed."),
        Column("recorded_runtime", pl.Float64, "First recorded request start to last recorded request end (s)."),
        Column("runtime", pl.Float64, "Replayed runtime under the scheduler (s)."),
        Column(
            "alone_runtime",
            pl.Float64,
            "Replayed runtime alone on the device, from the first request's recorded start (s).",
        ),
        Column(
            "alone_ratio",
            pl.Float64,
            "The model check: alone_runtime / recorded_runtime, both from the job's first request (compute before "
            "it is in no trace); near 1 when the device model reproduces the job alone. Null when "
            "recorded_runtime is 0; absent from tables written before it existed (the model check recomputes it).",
            required=False,
            nullable=True,
            check=pl.col("alone_ratio") >= 0,
            expect=">= 0",
            filled=False,
        ),
        Column("stretch", pl.Float64, "runtime / alone_runtime.", nullable=True),
        Column("io_slowdown", pl.Float64, "Time in I/O phases / the same alone.", nullable=True),
        Column("wait", pl.Float64, "runtime - alone_runtime (s)."),
    ),
)

TRACE_REPLAY_PHASES = TableSchema(
    "trace replay phases",
    "Per I/O phase and scheduler of a closed-loop trace replay (written beside the per-job table as "
    "`<name>.phases.<ext>`): when each phase could have started, started and ended under the scheduler. A request "
    "with no phase in the site trace is a phase of its own.",
    (
        Column("job_id", pl.String, "Job."),
        Column("scheduler", pl.String, "Scheduler replayed."),
        Column(
            "phase", pl.Int64, "Phase index within the job, in date order.", check=pl.col("phase") >= 0, expect=">= 0"
        ),
        Column("class", pl.String, "Class the scheduler served the phase's requests in: the set, or the job."),
        Column("set", pl.Int64, "The job's set in the recommendation; null when the job is not in it.", nullable=True),
        Column("bytes", pl.Int64, "Bytes the phase moved.", check=pl.col("bytes") >= 0, expect="bytes >= 0"),
        Column("recorded_start", pl.Float64, "First recorded request start (s)."),
        Column(
            "recorded_end",
            pl.Float64,
            "Last recorded request end (s).",
            check=pl.col("recorded_end") >= pl.col("recorded_start"),
            expect="a date >= recorded_start",
        ),
        Column(
            "ready",
            pl.Float64,
            "Date the phase became eligible in the replay: the previous phase's replayed end plus the recorded "
            "compute gap; the first phase's recorded start (s).",
        ),
        Column(
            "start",
            pl.Float64,
            "Date the device began serving its first request (s): the request's dispatch, or the previous unit's "
            "completion when that is later (fcfs sends every request to the device as it arrives; the device "
            "serves one unit at a time). start - ready is the phase's wait.",
            check=pl.col("start") >= pl.col("ready"),
            expect="a date >= ready",
        ),
        Column(
            "end",
            pl.Float64,
            "Date its last request completed (s).",
            check=pl.col("end") >= pl.col("start"),
            expect="a date >= start",
        ),
    ),
)

_TRACE_METRIC_DOCS = (
    ("utilization", "Utilization: compute seconds over the jobs' present seconds in the window."),
    ("utilization_bound", "Utilization the jobs would reach if none ever waited: compute over compute + alone I/O."),
    ("io_slowdown", "IO-slowdown: geometric mean over jobs of time in I/O over the same alone."),
    ("max_stretch", "Max Stretch: the largest present seconds over compute + alone I/O seconds."),
    ("mean_stretch", "Mean of the jobs' stretch (runtime / alone runtime) among those meeting the window."),
    ("p99_stretch", "99th percentile of that stretch."),
    ("throughput", "Bytes moved inside the window / its width (bytes/s)."),
)

TRACE_REPLAY_SCHEDULERS = TableSchema(
    "trace replay schedulers",
    "One row per scheduler of a closed-loop trace replay (written beside the per-job table as "
    "`<name>.schedulers.<ext>`; `iosets replay-trace --json` prints the same numbers): the phase model's window "
    "metrics (`trace_metrics`). A metric is null where the window cannot give it.",
    (
        Column("scheduler", pl.String, "Scheduler replayed."),
        *(Column(name, pl.Float64, doc, nullable=True) for name, doc in _TRACE_METRIC_DOCS),
        Column("window_start", pl.Float64, "Start of the metrics' window (s)."),
        Column(
            "window_end",
            pl.Float64,
            "End of the metrics' window (s).",
            check=pl.col("window_end") >= pl.col("window_start"),
            expect="a date >= window_start",
        ),
        Column(
            "busy_periods",
            pl.Int64,
            "Busy periods of the trace as recorded: maximal stretches where >= 2 jobs run, each job from its start "
            "to its last request's end (the same for every scheduler); null in a replay written before them.",
            required=False,
            nullable=True,
        ),
        Column(
            "busy_seconds",
            pl.Float64,
            "Their summed width (s); 0 when no two jobs overlap.",
            required=False,
            nullable=True,
        ),
        *(
            Column(
                f"busy_{name}",
                pl.Float64,
                f"{name} over the busy periods only (summed over them).",
                required=False,
                nullable=True,
            )
            for name, _ in _TRACE_METRIC_DOCS
        ),
    ),
)

TRACE_REPLAY_SHARES = TableSchema(
    "trace replay shares",
    "Per scheduler and set of a closed-loop trace replay (written beside the per-job table as `<name>.shares.<ext>`): "
    "the bytes each set moved inside the metrics' window (a job not in the recommendation counts in its "
    "conservative set).",
    (
        Column("scheduler", pl.String, "Scheduler replayed."),
        Column("set", pl.Int64, "Set."),
        Column(
            "bytes",
            pl.Float64,
            "Bytes the set's jobs moved inside the window.",
            check=pl.col("bytes") >= 0,
            expect="bytes >= 0",
        ),
        Column(
            "share",
            pl.Float64,
            "Share of the bytes moved inside the window; null when none moved.",
            nullable=True,
            check=pl.col("share").is_between(0, 1),
            expect="a number in [0, 1]",
        ),
    ),
)

SCHEMAS: dict[str, TableSchema] = {
    s.name: s
    for s in (
        REQUESTS,
        SITE_REQUESTS,
        SITE_FILES,
        JOBS,
        RECOMMENDED_JOBS,
        SET_SUMMARY,
        ANALYSIS_ERRORS,
        MODULE_TOTALS,
        JOB_DETAIL,
        JOB_SIZES,
        JOB_ACTIVITY,
        WORKLOAD_JOBS,
        WORKLOAD_PHASES,
        TIMELINE,
        REQUEST_RESULTS,
        REQUEST_CLASSES,
        TUNE_RANKING,
        TRACE_REPLAY_JOBS,
        TRACE_REPLAY_PHASES,
        TRACE_REPLAY_SCHEDULERS,
        TRACE_REPLAY_SHARES,
    )
}
"""Every documented table, by name (the order of ``docs/formats.md``)."""

_WORKLOAD_JSON = """\
```json
{"bandwidth": 1e9, "horizon": 20000.0, "window": [6000.0, 14000.0],
 "jobs": [{"id": "j0", "release": 3.2, "set": 1, "priority": 0.1, "w_iter": 10.4, "profile": 0,
           "phases": [[9.5, 1.2e8], [9.7, 1.3e8]]}]}
```
"""


def columns_table(schema: TableSchema) -> list[str]:
    """The lines of a Markdown table of ``schema``'s columns: type, required, null, values, meaning."""
    lines = ["| column | type | required | null | values | meaning |", "|---|---|---|---|---|---|"]
    for c in schema.columns:
        expect, doc = (text.replace("|", "\\|") for text in (c.expect, c.doc))  # a | would end the cell
        lines.append(
            f"| `{c.name}` | {_type_label(c)} | {'yes' if c.required else 'no'} | "
            f"{'yes' if c.nullable else 'no'} | {expect or '-'} | {doc} |"
        )
    return lines


def formats_markdown() -> str:
    """``docs/formats.md``: every table of :data:`SCHEMAS` with its columns (generated; a test keeps it in sync)."""
    lines = [
        "# iosets file formats",
        "",
        "Generated by `python -m iosets.schemas > docs/formats.md` from `iosets/schemas.py`; "
        "a test checks that they match. Tables are Parquet or CSV (chosen by the file suffix). "
        "Numbers that cannot be computed are null (JSON `null`), never NaN.",
        "",
    ]
    for schema in SCHEMAS.values():
        lines += [f"## {schema.name}", "", schema.doc, ""]
        lines += [*columns_table(schema), ""]
        if schema is WORKLOAD_PHASES:
            lines += [
                "A small workload is one JSON file; `bandwidth` (bytes/s), `horizon` (s) and `window` "
                "(the metrics' [T_begin, T_end]) describe the platform, each job lists its phases as "
                "`[t_cpu, io_bytes]` pairs:",
                "",
                _WORKLOAD_JSON,
            ]
    return "\n".join(lines)


_RENAMED = {"OPS": "REQUESTS", "SITE_OPS": "SITE_REQUESTS", "TRACE_REPLAY_POLICIES": "TRACE_REPLAY_SCHEDULERS"}
"""Former names (one release, with a DeprecationWarning): the glossary's words (docs/glossary.md)."""


def __getattr__(name: str) -> TableSchema:
    if name in _RENAMED:
        import warnings

        new = _RENAMED[name]
        warnings.warn(
            f"iosets.schemas.{name} is now {new}; the old name goes in the next release", DeprecationWarning, 2
        )
        return globals()[new]
    raise AttributeError(f"module 'iosets.schemas' has no attribute {name!r}")


if __name__ == "__main__":
    sys.stdout.write(formats_markdown())
