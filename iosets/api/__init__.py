"""REST service: recommendations for jobs about to start, learned from every finished job (``iosets serve``).

:func:`create_app` builds the FastAPI app of a :class:`Settings`; the store is SQLite (one file under
``data_dir``) or PostgreSQL (``database``, for replicas). Names are imported on first use
(:mod:`iosets._lazy`): ``import iosets.api`` loads neither FastAPI nor SQLAlchemy, and
:mod:`iosets.api.client` uses the standard library only.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers see; F401 is off for __init__ files
    from ._app import create_app
    from ._settings import Settings

_EXPORTS = {"create_app": "._app", "Settings": "._settings"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
