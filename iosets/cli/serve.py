"""``iosets serve`` (the REST service under uvicorn) and ``iosets token create|list|revoke`` (its bearer tokens).

FastAPI, uvicorn and SQLAlchemy come with the ``service`` extra; they are imported inside the commands.
"""

from __future__ import annotations

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
    str | None, typer.Option(help="PostgreSQL store instead: postgresql://user@host:port/db.", show_default=False)
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
    return load_settings(config, **given)


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
    )
    import uvicorn

    from ..api import SETTINGS_ENV

    os.environ[SETTINGS_ENV] = settings.model_dump_json()
    echo(f"iosets serve: listening on http://{settings.host}:{settings.port} (store: {settings.store_label})")
    uvicorn.run(
        "iosets.api:app_from_environment",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level="warning",
        access_log=False,
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
) -> None:
    """Create a token; it is printed once, alone on the last line, and only its SHA-256 is stored."""
    store = _store("iosets token create", data_dir, database)
    from ..api import create_token

    try:
        token_id, token = create_token(store, scope, note)
    finally:
        store.close()
    print(f"token {token_id} (scopes: {', '.join(scope)}); shown once:")
    print(token)


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
