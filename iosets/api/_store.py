"""`Store`: jobs, policies and tokens in SQLite or PostgreSQL, through one SQLAlchemy Core code path.

The schema is versioned: ``schema_version`` holds the number of the last migration applied, and
:meth:`Store.migrate` applies the missing ones in order, one transaction each, so an upgrade keeps a
site's history. Each migration spells out its tables and columns and never changes once released: the
``jobs`` table follows :data:`iosets.schemas.JOBS`, so **a new JOBS column needs a numbered migration**
(appended to :data:`MIGRATIONS`, ``ALTER TABLE jobs ADD COLUMN ...``); a store lacking a column the
code uses is refused when it opens, naming the column. A job is inserted with
``INSERT ... ON CONFLICT (job_id) DO NOTHING``: a retried post finds the stored row and never writes a
second one.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from ..errors import InputError, IosetsError
from ..schemas import JOBS

_SQL_TYPES: dict[Any, Callable[[], Any]] = {
    pl.String: sa.Text,
    pl.Int64: sa.BigInteger,
    pl.Float64: sa.Float,
    pl.Boolean: sa.Boolean,
}
_NO_START = -1.7976931348623157e308  # the sort key of a job without a start: before every other job

metadata = sa.MetaData()
schema_version = sa.Table("schema_version", metadata, sa.Column("version", sa.Integer, nullable=False))
jobs = sa.Table(
    "jobs",
    metadata,
    *(sa.Column(c.name, _SQL_TYPES[c.dtype](), primary_key=c.name == "job_id") for c in JOBS.columns),
    sa.Column("received_at", sa.Float, nullable=False),
)
policies = sa.Table(
    "policies",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("params", sa.Text, nullable=False),
)
tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("scopes", sa.Text, nullable=False),
    sa.Column("note", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("revoked", sa.Boolean, nullable=False),
)
_JOB_KEY = sa.func.coalesce(jobs.c.start, _NO_START)


def _create_tables(conn: sa.Connection) -> None:
    """Migration 1: the jobs table (the JOBS columns of its release, frozen), the policies and the tokens."""
    frozen = sa.MetaData()
    sa.Table(
        "jobs",
        frozen,
        sa.Column("job_id", sa.Text, primary_key=True),
        sa.Column("user", sa.Text),
        sa.Column("app", sa.Text),
        sa.Column("nprocs", sa.BigInteger),
        sa.Column("start", sa.Float),
        sa.Column("end", sa.Float),
        sa.Column("runtime", sa.Float),
        sa.Column("bytes_read", sa.Float),
        sa.Column("bytes_written", sa.Float),
        sa.Column("io_time", sa.Float),
        sa.Column("reads", sa.BigInteger),
        sa.Column("writes", sa.BigInteger),
        sa.Column("modules", sa.Text),
        sa.Column("w_iter", sa.Float),
        sa.Column("w_iter_confidence", sa.Float),
        sa.Column("alpha_io", sa.Float),
        sa.Column("n_phases", sa.BigInteger),
        sa.Column("not_periodic", sa.Text),
        sa.Column("explanation", sa.Text),
        sa.Column("source", sa.Text),
        sa.Column("rhythm_from", sa.Text),
        sa.Column("resolution", sa.Float),
        sa.Column("partial", sa.Boolean),
        sa.Column("n_logs", sa.BigInteger),
        sa.Column("step", sa.Text),
        sa.Column("path", sa.Text),
        sa.Column("received_at", sa.Float, nullable=False),
    )
    sa.Table(
        "policies",
        frozen,
        sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("params", sa.Text, nullable=False),
    )
    sa.Table(
        "tokens",
        frozen,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("scopes", sa.Text, nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False),
    )
    frozen.create_all(conn)


def _index_jobs(conn: sa.Connection) -> None:
    conn.execute(sa.text("CREATE INDEX IF NOT EXISTS jobs_app ON jobs (app, start, job_id)"))
    conn.execute(sa.text("CREATE INDEX IF NOT EXISTS jobs_start ON jobs (start, job_id)"))


def _add_nodes(conn: sa.Connection) -> None:
    """Migration 3: the jobs' node count (JOBS ``nodes``), null for the jobs stored before."""
    conn.execute(sa.text("ALTER TABLE jobs ADD COLUMN nodes BIGINT"))


MIGRATIONS: tuple[Callable[[sa.Connection], None], ...] = (_create_tables, _index_jobs, _add_nodes)
"""Migration steps in order; step i (1-based) brings the schema to version i. Append, never edit: a new JOBS
column needs a numbered migration."""


def missing_columns(conn: sa.Connection) -> list[str]:
    """``table.column`` of each column the code reads or writes that the store's tables lack.

    The jobs table's columns are :data:`iosets.schemas.JOBS`'s and ``received_at``.
    """
    inspector = sa.inspect(conn)
    used = {"jobs": [*JOBS.names, "received_at"], **{t.name: [c.name for c in t.columns] for t in (policies, tokens)}}
    missing: list[str] = []
    for table, names in used.items():
        stored = {column["name"] for column in inspector.get_columns(table)}
        missing += [f"{table}.{name}" for name in names if name not in stored]
    return missing


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")  # WAL: a commit survives the process being killed
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


FOLDER_MODE = 0o700
"""The mode of a SQLite store's folder made by the service (it holds the database and the uploads)."""
DATABASE_MODE = 0o600
"""The mode of a SQLite database file made by the service (SQLite gives its -wal and -shm files the same)."""


def _private_database(database: str) -> None:
    """Make ``database``'s folder (:data:`FOLDER_MODE`) and the empty file (:data:`DATABASE_MODE`) if missing,
    whatever the umask; existing ones keep their modes (the site may have chosen them)."""
    path = Path(database)
    if not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, FOLDER_MODE)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DATABASE_MODE)
    except FileExistsError:
        return
    os.fchmod(fd, DATABASE_MODE)
    os.close(fd)


def open_engine(url: str) -> sa.Engine:
    """An engine for a ``sqlite:///`` or ``postgresql+psycopg://`` URL (SQLite: its folder and file made
    private, WAL on)."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            _private_database(parsed.database)
        engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return sa.create_engine(url, pool_pre_ping=True, pool_size=8, max_overflow=8)


class Store:
    """The service's tables; every method is one short transaction.

    Opening a store migrates it to the newest schema version; a new JOBS column needs a numbered migration.

    Parameters
    ----------
    url : str
        SQLAlchemy URL: ``sqlite:///DIR/iosets.db`` or ``postgresql+psycopg://user@host:port/db``.

    Examples
    --------
    >>> store = Store("sqlite://")
    >>> store.insert_job({"job_id": "j1", "user": "u", "app": "a"}, received_at=1.0)[1]
    True
    >>> store.insert_job({"job_id": "j1", "user": "u", "app": "other"}, received_at=2.0)[0]["app"]
    'a'
    """

    def __init__(self, url: str):
        self.url = url
        self.engine = open_engine(url)
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        self._write_lock = threading.Lock() if self.is_sqlite else None  # SQLite: one writer at a time
        dialect = sqlite if self.is_sqlite else postgresql
        self._insert_new = (  # built once: a batch of posts pays its execution only
            dialect.insert(jobs).on_conflict_do_nothing(index_elements=["job_id"]).returning(*jobs.c)
        )
        self.migrate()

    def close(self) -> None:
        """Release the connections."""
        self.engine.dispose()

    @contextmanager
    def _writing(self) -> Iterator[sa.Connection]:
        if self._write_lock is None:
            with self.engine.begin() as conn:
                yield conn
            return
        with self._write_lock, self.engine.begin() as conn:
            yield conn

    # ------------------------------------------------------------------------------------ schema

    def schema_version(self) -> int:
        """The number of migration steps applied (0 for a new store)."""
        with self.engine.connect() as conn:
            if not sa.inspect(conn).has_table("schema_version"):
                return 0
            return int(conn.execute(sa.select(sa.func.max(schema_version.c.version))).scalar() or 0)

    def migrate(self) -> int:
        """Apply the missing migration steps, one transaction each; return the schema version reached.

        IosetsError if the store still lacks a column the code uses (a JOBS column added without its migration).
        """
        with self._writing() as conn:
            metadata.create_all(conn, tables=[schema_version])
        for step, migration in enumerate(MIGRATIONS, start=1):
            with self._writing() as conn:
                if not self.is_sqlite:  # replicas starting together: one migrates, the others wait
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(7301)"))
                current = conn.execute(sa.select(sa.func.max(schema_version.c.version))).scalar() or 0
                if current >= step:
                    continue
                migration(conn)
                conn.execute(sa.delete(schema_version))
                conn.execute(sa.insert(schema_version).values(version=step))
        with self.engine.connect() as conn:
            missing = missing_columns(conn)
        if missing:
            store = self.engine.url.render_as_string(hide_password=True)
            raise IosetsError(
                f"store {store} at schema version {len(MIGRATIONS)} lacks column(s) {', '.join(missing)} that this"
                " iosets uses: a new JOBS column needs a numbered migration (iosets/api/_store.py MIGRATIONS)"
            )
        return len(MIGRATIONS)

    # -------------------------------------------------------------------------------------- jobs

    def insert_job(self, row: dict[str, Any], *, received_at: float | None = None) -> tuple[dict[str, Any], bool]:
        """Store a job unless its ``job_id`` is stored; return the stored row and whether it is new."""
        return self.insert_jobs([row], received_at=received_at)[0]

    def insert_jobs(
        self, rows: list[dict[str, Any]], *, received_at: float | None = None
    ) -> list[tuple[dict[str, Any], bool]]:
        """:meth:`insert_job` of each row, in order, in one transaction (one commit): ``(stored row, new)`` each.

        A job id given twice is new at its first row only; both answer the first row as stored.
        """
        received = time.time() if received_at is None else received_at
        values = [{**{name: row.get(name) for name in JOBS.names}, "received_at": received} for row in rows]
        with self._writing() as conn:
            stored = {row["job_id"]: dict(row) for row in conn.execute(self._insert_new, values).mappings()}
            inserted = set(stored)
            earlier = [job_id for job_id in dict.fromkeys(value["job_id"] for value in values) if job_id not in stored]
            if earlier:
                found = conn.execute(sa.select(jobs).where(jobs.c.job_id.in_(earlier))).mappings()
                stored.update((row["job_id"], dict(row)) for row in found)
        answers = []
        for value in values:
            job_id = value["job_id"]
            answers.append((stored[job_id], job_id in inserted))
            inserted.discard(job_id)  # a second row of the same id is not new
        return answers

    def newest_job_number(self) -> int | None:
        """The largest leading number of a stored job id (``1234_7``: 1234), None when no id starts with one."""
        if self.is_sqlite:  # CAST reads the leading digits
            number = sa.cast(jobs.c.job_id, sa.BigInteger)
            numeric = jobs.c.job_id.op("GLOB")("[0-9]*")
        else:
            number = sa.cast(sa.func.substring(jobs.c.job_id, "^[0-9]{1,18}"), sa.BigInteger)
            numeric = jobs.c.job_id.op("~")("^[0-9]")
        with self.engine.connect() as conn:
            found = conn.execute(sa.select(sa.func.max(number)).where(numeric)).scalar()
        return None if found is None else int(found)

    def get_job(self, job_id: str) -> dict[str, Any] | None:
        """The stored row of ``job_id``, or None."""
        with self.engine.connect() as conn:
            found = conn.execute(sa.select(jobs).where(jobs.c.job_id == job_id)).mappings().first()
        return None if found is None else dict(found)

    def list_jobs(
        self,
        *,
        app: str | None = None,
        user: str | None = None,
        since: float | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Jobs ordered by (start, job_id), jobs without a start first; ``(page, next cursor or None)``.

        ``since`` keeps the jobs with ``start >= since``; ``cursor`` is the one a previous page returned.
        """
        query = sa.select(jobs)
        if app is not None:
            query = query.where(jobs.c.app == app)
        if user is not None:
            query = query.where(jobs.c.user == user)
        if since is not None:
            query = query.where(jobs.c.start >= since)
        if cursor is not None:
            key, job_id = _decode_cursor(cursor)
            query = query.where(sa.tuple_(_JOB_KEY, jobs.c.job_id) > sa.tuple_(sa.literal(key), sa.literal(job_id)))
        query = query.order_by(_JOB_KEY, jobs.c.job_id).limit(limit + 1)
        with self.engine.connect() as conn:
            rows = [dict(row) for row in conn.execute(query).mappings()]
        if len(rows) <= limit:
            return rows, None
        last = rows[limit - 1]
        return rows[:limit], _encode_cursor(_NO_START if last["start"] is None else last["start"], last["job_id"])

    def count_jobs(self) -> int:
        """How many jobs are stored."""
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(jobs)).scalar_one())

    def history(self, *, app: str | None = None) -> pl.DataFrame:
        """The stored jobs (of ``app``) as a jobs table typed by :data:`iosets.schemas.JOBS`, plus ``received_at``."""
        query = sa.select(jobs)
        if app is not None:
            query = query.where(jobs.c.app == app)
        with self.engine.connect() as conn:
            result = conn.execute(query)
            rows = result.fetchall()
            names = list(result.keys())
        schema = {**JOBS.polars, "received_at": pl.Float64}
        return pl.DataFrame([tuple(row) for row in rows], schema={n: schema[n] for n in names}, orient="row")

    # ---------------------------------------------------------------------------------- policies

    def latest_policy(self) -> dict[str, Any] | None:
        """The newest policy: ``version``, ``created_at`` and its parameters; None when none is stored."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(policies).order_by(policies.c.version.desc()).limit(1)).mappings().first()
        return None if row is None else _policy(row)

    def policies(self) -> list[dict[str, Any]]:
        """Every stored policy, oldest first."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(policies).order_by(policies.c.version)).mappings().all()
        return [_policy(row) for row in rows]

    def add_policy(self, params: dict[str, Any], *, only_if_none: bool = False) -> dict[str, Any]:
        """Store ``params`` as the next policy version and return it (``only_if_none``: unless one exists)."""
        with self._writing() as conn:
            if not self.is_sqlite:  # SQLite: the write lock serializes the writers already
                conn.execute(sa.text("LOCK TABLE policies IN EXCLUSIVE MODE"))
            latest = conn.execute(sa.select(sa.func.max(policies.c.version))).scalar()
            if latest is not None and only_if_none:
                row = conn.execute(sa.select(policies).where(policies.c.version == latest)).mappings().one()
                return _policy(row)
            version = (latest or 0) + 1
            values = {"version": version, "created_at": time.time(), "params": json.dumps(params, sort_keys=True)}
            conn.execute(sa.insert(policies).values(values))
        return _policy(values)

    def state(self) -> tuple[int, int | None]:
        """``(jobs stored, newest policy version)``: what a replica polls to learn of another one's changes."""
        with self.engine.connect() as conn:
            n = conn.execute(sa.select(sa.func.count()).select_from(jobs)).scalar_one()
            version = conn.execute(sa.select(sa.func.max(policies.c.version))).scalar()
        return int(n), version

    # ------------------------------------------------------------------------------------ tokens

    def add_token(self, sha256: str, scopes: list[str], note: str) -> int:
        """Store a token's hash and scopes; return its id."""
        values = {"sha256": sha256, "scopes": ",".join(scopes), "note": note, "created_at": time.time()}
        with self._writing() as conn:
            key = conn.execute(sa.insert(tokens).values(**values, revoked=False)).inserted_primary_key
        assert key is not None
        return int(key[0])

    def token_scopes(self, sha256: str) -> tuple[int, frozenset[str]] | None:
        """``(id, scopes)`` of the live token with this hash, or None."""
        query = sa.select(tokens.c.id, tokens.c.scopes).where(tokens.c.sha256 == sha256, tokens.c.revoked.is_(False))
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else (row.id, frozenset(row.scopes.split(",")))

    def tokens(self) -> list[dict[str, Any]]:
        """Every token: id, scopes, note, created_at, revoked (never the hash)."""
        columns = (tokens.c.id, tokens.c.scopes, tokens.c.note, tokens.c.created_at, tokens.c.revoked)
        with self.engine.connect() as conn:
            return [dict(row) for row in conn.execute(sa.select(*columns).order_by(tokens.c.id)).mappings()]

    def revoke_token(self, token_id: int) -> None:
        """Revoke a token; InputError if no token has that id."""
        with self._writing() as conn:
            if conn.execute(sa.update(tokens).where(tokens.c.id == token_id).values(revoked=True)).rowcount != 1:
                raise InputError(f"token id {token_id}: no such token")


def _policy(row: Any) -> dict[str, Any]:
    return {"version": row["version"], "created_at": row["created_at"], **json.loads(row["params"])}


def _encode_cursor(key: float, job_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([key, job_id]).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[float, str]:
    """The (sort key, job_id) a cursor holds; InputError for one this store did not make."""
    try:
        key, job_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if isinstance(key, bool) or not isinstance(key, int | float) or not isinstance(job_id, str):
            raise ValueError
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise InputError(f"cursor: not a cursor this service returned, got {cursor!r}") from None
    return float(key), job_id
