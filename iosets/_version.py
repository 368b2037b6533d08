"""The installed distribution's version (importlib.metadata is slow to import: read on demand)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("iosets")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"
