"""MkDocs hook: the table formats, generated from ``iosets.schemas`` at build time.

The page ``reference/formats.md`` holds the conventions written by hand and the marker
``<!-- iosets:schemas -->``; this hook replaces the marker with one section per table of
``iosets.schemas.SCHEMAS`` (its description, then each column's type, whether it is required,
whether it may be null, the values it allows and what it means), in the order of ``SCHEMAS``.
"""

from __future__ import annotations

MARKER = "<!-- iosets:schemas -->"


def schema_sections() -> str:
    """One ``###`` section per table of ``iosets.schemas.SCHEMAS``, named as in Python too."""
    from iosets import schemas

    constants: dict[int, list[str]] = {}
    for name in schemas.__all__:
        value = getattr(schemas, name)
        if isinstance(value, schemas.TableSchema):
            constants.setdefault(id(value), []).append(name)
    lines = []
    for schema in schemas.SCHEMAS.values():
        names = ", ".join(f"`iosets.schemas.{name}`" for name in constants.get(id(schema), []))
        lines += [f"### {schema.name}", "", schema.doc, ""]
        if names:
            lines += [f"In Python: {names} ({schema.formats}).", ""]
        lines += schemas.columns_table(schema)
        lines.append("")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Put the generated tables where the page has the marker."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, schema_sections())
