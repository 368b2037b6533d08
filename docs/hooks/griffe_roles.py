"""Griffe extension: the docstrings' Sphinx roles (``:func:`analyze```) shown as code in the API pages.

iosets' docstrings are numpydoc with Sphinx cross-reference roles, which Markdown would print as
they are. A role becomes inline code with the text Sphinx would show: the target as written, or
its last component when it starts with ``~``.
"""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|data|meth|mod|attr|exc|obj|const):`(?P<tilde>~?)(?P<target>[^`]+)`")


def plain_roles(text: str) -> str:
    """``text`` with every Sphinx role replaced by inline code."""

    def shown(match: re.Match[str]) -> str:
        target = match["target"]
        return f"`{target.rsplit('.', 1)[-1] if match['tilde'] else target}`"

    return ROLE.sub(shown, text)


class SphinxRoles(griffe.Extension):
    """Rewrite each object's docstring once it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)
