"""``iosets serve`` (the REST service under uvicorn) and ``iosets token create|list|revoke`` (its bearer tokens).

FastAPI, uvicorn and SQLAlchemy come with the ``service`` extra; they are imported inside the commands.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import InputError
from ._output import echo

if TYPE_CHECKING:
    from ..api import Settings, Store

SERVICE_MODULES = ("fastapi", "uvicorn", "sqlalchemy", "python_multipart", "prometheus_client")
DataDir = Annotated[
    Path | None, typer.Option(help="SQLite store: DIR/iosets.db (default ./iosets-data).", show_default=False)
]
Database = Annotated[
    str | None,
    typer.Option(
        help="PostgreSQL store instead: postgresql://user@host:port/db (the password from $PGPASSWORD or"
        " ~/.pgpass, never here).",
        show_default=False,
    ),
]
Config = Annotated[
    Path | None, typer.Option(help="iosets.toml: \\[service] and \\[policy] tables.", show_default=False)
]


def _check_service_extra(command: str) -> None:
    """InputError naming ``command`` and the install command unless the service extra's modules import."""
    try:
        for name in SERVICE_MODULES:
            importlib.import_module(name)
    except ImportError:
        raise InputError(f"{command} needs the service extra: pip install 'iosets[service]'") from None


def _settings(command: str, config: Path | None, **options: object) -> Settings:
    _check_service_extra(command)
    from ..api import load_settings

    given = {name: str(value) if isinstance(value, Path) else value for name, value in options.items()}
    if given.get("data_dir") is not None and given.get("database") is not None:
        raise InputError("give --data-dir or --database, not both")
    if given.get("database") is not None and _has_password(str(given["database"])):
        raise InputError(
            "--database: the URL holds a password, which any user sees in ps: give it in $PGPASSWORD or a"
            " ~/.pgpass file ($PGPASSFILE), or put the URL in iosets.toml's [service] database (mode 0600)"
        )
    return load_settings(config, **given)


def _has_password(url: str) -> bool:
    """Whether a database URL holds a password (``scheme://user:password@host``)."""
    credentials = url.split("://", 1)[-1].rpartition("@")[0]
    return ":" in credentials


def _warn_if_exposed(settings: Settings) -> None:
    """Warn on stderr when the service listens beyond this machine with nothing said about TLS in front."""
    if not settings.loopback and not settings.behind_proxy:
        echo(
            f"iosets serve: warning: listening on {settings.host} in plain HTTP: tokens cross the network in clear;"
            " put a TLS proxy in front (docs/guides/service.md, Deploying) and say so with --behind-proxy"
        )


def _log_config() -> dict:
    """uvicorn's logging, with the ``iosets`` loggers (the access log, warnings) on its stderr handler."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["iosets"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config


def serve(
    config: Config = None,
    host: Annotated[str | None, typer.Option(help="Address to listen on (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8642).")] = None,
    data_dir: DataDir = None,
    database: Database = None,
    lua_out: Annotated[
        Path | None, typer.Option(help="Rewrite this Lua file for job_submit.lua whenever an answer changes.")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="uvicorn worker processes (default 1).")] = None,
    max_upload: Annotated[
        str | None, typer.Option(help="Largest Darshan log upload: bytes or a size, e.g. 256MB (default 256MB).")
    ] = None,
    behind_proxy: Annotated[
        bool | None,
        typer.Option("--behind-proxy", help="A TLS proxy is in front: no warning for a non-loopback --host."),
    ] = None,
) -> None:
    """Run the REST service: recommendations for starting jobs, learned from every finished job."""
    settings = _settings(
        "iosets serve",
        config,
        host=host,
        port=port,
        data_dir=data_dir,
        database=database,
        lua_out=lua_out,
        workers=workers,
        max_upload=max_upload,
        behind_proxy=behind_proxy,
    )
    import uvicorn

    from ..api import SETTINGS_ENV

    os.environ[SETTINGS_ENV] = settings.model_dump_json()
    _warn_if_exposed(settings)
    echo(f"iosets serve: listening on http://{settings.host}:{settings.port} (store: {settings.store_label})")
    uvicorn.run(
        "iosets.api:app_from_environment",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        http="iosets.api._transport:GuardedHttpToolsProtocol",  # header and body deadlines: slow clients are cut
        loop="uvloop",
        log_config=_log_config(),
        log_level="warning",
        access_log=False,  # iosets.access logs each request, with its route and token id
    )


token_app = typer.Typer(help="Bearer tokens of the REST service: create, list, revoke.", no_args_is_help=True)


def _store(command: str, data_dir: Path | None, database: str | None) -> Store:
    settings = _settings(command, None, data_dir=data_dir, database=database)
    from ..api import Store

    return Store(settings.store_url)


@token_app.command("create")
def create(
    scope: Annotated[list[str], typer.Option(help="read, write or admin (repeat the option for several).")],
    note: Annotated[str, typer.Option(help="What the token is for.")] = "",
    data_dir: DataDir = None,
    database: Database = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the token to this new file (mode 0600) instead of stdout."),
    ] = None,
) -> None:
    """Create a token; it is printed once, alone on the last line (or written to --output), and only its SHA-256
    is stored."""
    if output is not None and output.exists():
        raise InputError(f"--output {output}: exists already; a token file is never overwritten")
    store = _store("iosets token create", data_dir, database)
    from ..api import create_token

    try:
        token_id, token = create_token(store, scope, note)
    finally:
        store.close()
    if output is None:
        print(f"token {token_id} (scopes: {', '.join(scope)}); shown once:")
        print(token)
        return
    _write_private(output, token + "\n")
    echo(f"token {token_id} (scopes: {', '.join(scope)}) written to {output} (mode 0600)")


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to the new file ``path``, mode 0600 whatever the umask."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise InputError(f"--output {path}: {(exc.strerror or str(exc)).lower()}") from None
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


@token_app.command("list")
def list_tokens(
    data_dir: DataDir = None,
    database: Database = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tokens as JSON.")] = False,
) -> None:
    """List the tokens: id, scopes, note, creation date, revoked."""
    store = _store("iosets token list", data_dir, database)
    try:
        rows = store.tokens()
    finally:
        store.close()
    if as_json:
        print(json.dumps(rows))
        return
    for row in rows:
        created = datetime.fromtimestamp(row["created_at"], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        state = " revoked" if row["revoked"] else ""
        print(f"{row['id']}\t{row['scopes']}\t{created}{state}\t{row['note']}")


@token_app.command("revoke")
def revoke(
    token_id: Annotated[int, typer.Argument(metavar="ID", help="The token's id (iosets token list).")],
    data_dir: DataDir = None,
    database: Database = None,
) -> None:
    """Revoke a token: requests with it get 401 from now on."""
    store = _store("iosets token revoke", data_dir, database)
    try:
        store.revoke_token(token_id)
    finally:
        store.close()
    echo(f"revoked token {token_id}")
