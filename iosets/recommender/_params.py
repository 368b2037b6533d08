"""The scikit-learn habit of estimators: ``__init__`` stores its keyword parameters; ``get_params`` reads them back.

Parameters are checked when they are used (at ``fit``); :func:`check_fraction` checks a probability.
"""

import inspect

from .._validation import check_positive
from ..errors import InputError


def check_fraction(value, name: str) -> float:
    """``value`` as float if it is a number in [0, 1]; else an InputError naming ``name``."""
    if not 0 <= check_positive(value, name, strict=False) <= 1:
        raise InputError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


class Params:
    """Mixin: :meth:`get_params` from the signature of ``__init__``."""

    def get_params(self) -> dict:
        """The parameters given to ``__init__`` (or their defaults), by name."""
        names = [name for name in inspect.signature(type(self).__init__).parameters if name != "self"]
        return {name: getattr(self, name) for name in names}

    def __repr__(self) -> str:
        defaults = {name: p.default for name, p in inspect.signature(type(self).__init__).parameters.items()}
        changed = {name: value for name, value in self.get_params().items() if value != defaults[name]}
        return f"{type(self).__name__}({', '.join(f'{name}={value!r}' for name, value in changed.items())})"
