"""Rich tables rendered from the frames and records that rooms return."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ._output import computed

if TYPE_CHECKING:
    import polars as pl
    from rich.console import RenderableType

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Column:
    """One column of a table: its header, the text of its cell in a row, and its alignment."""

    header: str
    cell: Callable[[Row], str]
    justify: Literal["left", "right"] = "right"


def shown(value: Any, template: str = "{}", *, scale: float = 1.0, missing: str = "-") -> str:
    """``value`` (times ``scale``) through ``template``, or ``missing`` when it is None or a NaN or infinite
    float (a number that could not be computed; ``--json`` prints it as null)."""
    value = computed(value)
    return missing if value is None else template.format(value * scale if scale != 1.0 else value)


def ratio(numerator: Any, denominator: Any) -> float | None:
    """``numerator / denominator``, or None when either could not be computed or the denominator is 0."""
    numerator, denominator = computed(numerator), computed(denominator)
    return None if numerator is None or not denominator else numerator / denominator


def field(name: str, template: str = "{}", *, scale: float = 1.0, missing: str = "-") -> Callable[[Row], str]:
    """The cell showing ``row[name]`` (times ``scale``) through ``template`` (``"{:.4f}"``), or ``missing``."""

    def cell(row: Row) -> str:
        return shown(row[name], template, scale=scale, missing=missing)

    return cell


def render_table(
    rows: pl.DataFrame | Iterable[Row], columns: Sequence[Column], *, title: str, caption: str | None = None
) -> RenderableType:
    """A titled table of ``rows`` (a frame or mappings), one line per row; no cell is read as markup."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table()
    for column in columns:
        table.add_column(Text(column.header), justify=column.justify)
    records = rows.iter_rows(named=True) if hasattr(rows, "iter_rows") else rows
    for record in records:
        table.add_row(*(Text(column.cell(record)) for column in columns))
    parts: list[RenderableType] = [Text(title, style="table.title"), table]
    if caption is not None:
        parts.append(Text(caption, style="table.caption"))
    return Group(*parts)
