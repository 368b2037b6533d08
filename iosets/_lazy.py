"""Lazy public names for a package ``__init__`` (PEP 562): a submodule is imported when a name is first used.

The command line starts in a fraction of a second because ``import iosets.<room>``
does not import every module of the room, nor numpy, Polars or scikit-learn, until
a name that needs them is used.
"""

import sys
import warnings
from collections.abc import Callable, Mapping
from importlib import import_module


def lazy_exports(
    package: str, names: dict[str, str], renamed: Mapping[str, str] | None = None
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` whose public ``names`` live in the given submodules.

    ``names`` maps a public name to its relative module (``{"replay_phases": "._phase"}``); ``renamed`` maps a
    former name to its new one: it still works for one release, with a DeprecationWarning naming the new one.

    Examples
    --------
    >>> getattr_, dir_ = lazy_exports("iosets", {"Workload": ".workload"})
    >>> getattr_("Workload").__name__
    'Workload'
    """

    def __getattr__(name: str) -> object:
        if renamed and name in renamed:
            new = renamed[name]
            warnings.warn(
                f"{package}.{name} is now {new}; the old name goes in the next release", DeprecationWarning, 2
            )
            return __getattr__(new)
        try:
            module = names[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
