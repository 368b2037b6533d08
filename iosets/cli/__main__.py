"""``python -m iosets.cli``: the ``iosets`` command."""

from . import app

app(prog_name="iosets")
