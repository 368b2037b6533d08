"""The scikit-learn habit of estimators: ``__init__`` stores its keyword parameters; ``get_params`` reads them back.

Parameters are checked when they are used (at ``fit``); :func:`check_fraction` checks a probability.
"""

import inspect

from .._validation import check_fraction

__all__ = ["Params", "check_fraction"]


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
