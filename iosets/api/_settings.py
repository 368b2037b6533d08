"""`Settings`: the service's options, from ``iosets.toml`` and the command line, checked once."""

from __future__ import annotations

import ipaddress
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InputError
from ._models import PolicyParams

DEFAULT_DATA_DIR = "iosets-data"
MB = 1 << 20
"""A megabyte as the sizes count it (MiB): ``max_upload = "256MB"`` is 256 x 2^20 bytes."""
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB)?\s*", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 1 << 10, "kib": 1 << 10, "mb": MB, "mib": MB, "gb": 1 << 30, "gib": 1 << 30}
_LOOPBACK = ("127.0.0.1", "::1", "localhost")
_SCHEMES = {"postgresql": "postgresql+psycopg", "postgresql+psycopg": "postgresql+psycopg", "sqlite": "sqlite"}


class Settings(BaseModel):
    """What ``iosets serve`` runs with; every field has the default of ``iosets.toml``'s ``[service]`` table.

    Examples
    --------
    >>> Settings(data_dir="/tmp/x").store_url
    'sqlite:////tmp/x/iosets.db'
    >>> Settings(database="postgresql://iosets:secret@db:5432/iosets").store_label
    'postgresql+psycopg://iosets:***@db:5432/iosets'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=8642, ge=1, le=65535)
    data_dir: str = DEFAULT_DATA_DIR
    database: str | None = None
    lua_out: str | None = None
    refit_interval: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    max_upload: int = Field(default=256 * MB, ge=1)  # bytes; "256MB" in iosets.toml and --max-upload
    max_json: int = Field(default=1 * MB, ge=1)  # bytes of a JSON body (a job row, queries, a policy)
    header_timeout: float = Field(default=10.0, gt=0, le=3600, allow_inf_nan=False)
    body_timeout: float = Field(default=120.0, gt=0, le=86400, allow_inf_nan=False)
    log_workers: int = Field(default=2, ge=1, le=64)
    job_id_window: int = Field(default=1_000_000, ge=0)
    behind_proxy: bool = False  # a TLS proxy is in front (no warning for a non-loopback host)
    write_rate: float = Field(default=50.0, gt=0, allow_inf_nan=False)
    workers: int = Field(default=1, ge=1, le=256)
    replay: str | None = None  # a trace replay (`iosets replay-trace -o PERJOB`) the report shows, companions beside it
    policy: PolicyParams = PolicyParams()

    @field_validator("database")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is not None and value.split("://", 1)[0] not in _SCHEMES:
            raise ValueError(
                f"expected postgresql://user@host:port/db (or sqlite:///path), got {value.split('://')[0]!r}"
            )
        return value

    @field_validator("max_upload", "max_json", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        """A size in bytes, or a text with a unit: ``"256MB"``, ``"64 KiB"`` (MB = 2^20 bytes)."""
        if not isinstance(value, str):
            return value
        match = _SIZE.fullmatch(value)
        if match is None:
            raise ValueError(f"expected bytes or a size such as '256MB' (B, KB, MB, GB), got {value!r}")
        return int(float(match.group(1)) * _UNITS[(match.group(2) or "b").lower()])

    @property
    def loopback(self) -> bool:
        """Whether ``host`` is a loopback address (only this machine can connect)."""
        if self.host in _LOOPBACK:
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def store_url(self) -> str:
        """The SQLAlchemy URL of the store: ``DIR/iosets.db`` under ``data_dir``, or ``database`` (psycopg 3)."""
        if self.database is None:
            return f"sqlite:///{Path(self.data_dir) / 'iosets.db'}"
        scheme, rest = self.database.split("://", 1)
        return f"{_SCHEMES[scheme]}://{rest}"

    @property
    def store_label(self) -> str:
        """:attr:`store_url` without its password, for logs."""
        from sqlalchemy.engine import make_url

        return make_url(self.store_url).render_as_string(hide_password=True)


def load_settings(config: str | Path | None = None, **options: Any) -> Settings:
    """Settings from the ``[service]`` and ``[policy]`` tables of ``config``, then ``options`` (None ones skipped).

    An unknown key or a bad value raises InputError naming the file, the table and the key.
    """
    where = "command line"
    tables: dict[str, Any] = {}
    if config is not None:
        where = str(config)
        try:
            tables = tomllib.loads(Path(config).read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"{config}: {(exc.strerror or str(exc)).lower()}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{config}: not a TOML file: {exc}") from None
    unknown = [name for name in tables if name not in ("service", "policy")]
    if unknown:
        raise InputError(f"{where}: unknown table [{unknown[0]}]; expected [service] and [policy]")
    for name in ("service", "policy"):
        if not isinstance(tables.get(name, {}), dict):
            raise InputError(f"{where}: [{name}] must be a table")
    service = {**tables.get("service", {}), **{key: value for key, value in options.items() if value is not None}}
    if "data_dir" in options and options["data_dir"] is not None:
        service.pop("database", None)  # the command line chose a store: it wins over the file's
    try:
        policy = PolicyParams(**tables.get("policy", {}))
    except ValidationError as exc:
        raise InputError(f"{where} [policy] {_first_error(exc)}") from None
    try:
        return Settings(**service, policy=policy)
    except ValidationError as exc:
        raise InputError(f"{where} [service] {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    """``key: message, got value`` of a validation error's first item."""
    error = exc.errors()[0]
    key = ".".join(str(part) for part in error["loc"]) or "value"
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        return f"{key}: unknown key"
    return f"{key}: {message}, got {error['input']!r}" if "got" not in message else f"{key}: {message}"
