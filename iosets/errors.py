"""The one exception hierarchy of iosets."""

__all__ = ["IosetsError", "InputError", "ReplayError"]


class IosetsError(Exception):
    """Base class of every error iosets raises on purpose."""


class InputError(IosetsError, ValueError):
    """Bad input: the message names the file or field, what was expected and what was found."""


class ReplayError(IosetsError, ValueError):
    """The replay engine refused its input; ``index`` is the offending job or phase (-1 if none)."""

    def __init__(self, message: str, index: int = -1):
        super().__init__(message)
        self.index = index
