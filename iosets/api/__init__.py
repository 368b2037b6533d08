"""REST service: recommendations for jobs about to start, learned from every finished job (``iosets serve``).

:func:`create_app` builds the FastAPI app of a :class:`Settings` (:func:`load_settings` reads them from
``iosets.toml`` and options); the :class:`Store` is SQLite (one file under ``data_dir``) or PostgreSQL
(``database``, for replicas), and :func:`create_token` adds a bearer token to it. ``iosets serve`` runs
:func:`app_from_environment` under uvicorn, with the settings in ``$IOSETS_SERVE_SETTINGS``
(:data:`SETTINGS_ENV`). Names are imported on first use (:mod:`iosets._lazy`): ``import iosets.api``
loads neither FastAPI nor SQLAlchemy, and :mod:`iosets.api.client` uses the standard library only.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers see; F401 is off for __init__ files
    from ._app import SETTINGS_ENV, app_from_environment, create_app
    from ._auth import create_token
    from ._settings import Settings, load_settings
    from ._store import Store

_EXPORTS = {
    "SETTINGS_ENV": "._app",
    "app_from_environment": "._app",
    "create_app": "._app",
    "create_token": "._auth",
    "Settings": "._settings",
    "load_settings": "._settings",
    "Store": "._store",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
