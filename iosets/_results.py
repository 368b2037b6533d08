"""Results that own their tables: one object, named schema-checked tables, one file and the side files beside it.

A room's result that spans several tables (an analysis, a site trace, a request replay, a scheduler comparison, a
tuning, a recommendation) subclasses :class:`Tables` and lists its :class:`Part` s; the side files' names live
there and nowhere else. Modelled on scikit-learn's ``Bunch``: the tables are reachable by name (``result.jobs``,
``result["jobs"]``, ``result.keys()``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ._io import check_output, read_frame, write_frame
from .errors import InputError

if TYPE_CHECKING:
    from typing import Self

    import polars as pl

    from .schemas import TableSchema


@dataclass(frozen=True)
class Part:
    """One table of a result.

    ``name`` is the attribute and the side file's name (``<stem>.<name><suffix>``; the first part is written at
    the path itself); ``what`` names the table in messages. ``when_empty="remove"``: an empty table is not written,
    and the file an earlier run left there is removed, so that no file outlives the run it describes.
    ``optional``: reading a result whose side file is missing gives None for it.
    """

    name: str
    schema: TableSchema
    what: str
    when_empty: Literal["write", "remove"] = "write"
    optional: bool = False


@dataclass(frozen=True)
class Written:
    """What :meth:`Tables.write` did: the files written, and those of an earlier run it removed."""

    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)


class Tables:
    """Base of a result made of named tables; subclasses are frozen dataclasses whose fields include the parts."""

    PARTS: ClassVar[tuple[Part, ...]]

    def keys(self) -> list[str]:
        """The tables' names, the main one first."""
        return [part.name for part in self.PARTS]

    def __iter__(self) -> Iterator[str]:
        """The tables' names, as iterating a mapping gives its keys."""
        return iter(self.keys())

    def __getitem__(self, name: str) -> pl.DataFrame | None:
        if name not in self.keys():
            raise KeyError(f"{type(self).__name__} has no table {name!r}; it has {', '.join(self.keys())}")
        return getattr(self, name)

    @classmethod
    def paths(cls, path: str | os.PathLike) -> dict[str, Path]:
        """Each table's file for a result written at ``path``: the first part there, the others beside it."""
        path = Path(path)
        main, *sides = cls.PARTS
        return {
            main.name: path,
            **{part.name: path.with_name(f"{path.stem}.{part.name}{path.suffix}") for part in sides},
        }

    @classmethod
    def check_output(cls, path: str | os.PathLike) -> dict[str, Path]:
        """Every file of a result at ``path``, once each can be written (call it before the work); else InputError."""
        paths = cls.paths(path)
        for part in cls.PARTS:
            check_output(paths[part.name], what=part.what)
        return paths

    def write(self, path: str | os.PathLike) -> Written:
        """Check every table against its schema, then write each atomically (``.parquet`` or ``.csv`` by suffix)."""
        paths = self.check_output(path)
        checked = {}
        for part in self.PARTS:
            frame = getattr(self, part.name)
            if frame is not None:
                checked[part.name] = part.schema.validate(
                    frame, source=f"{part.what} for {paths[part.name]}", fill_optional=False
                )
        done = Written()
        for part in self.PARTS:
            target, frame = paths[part.name], checked.get(part.name)
            if frame is None or (frame.is_empty() and part.when_empty == "remove"):
                if target.is_file():
                    target.unlink()
                    done.removed.append(target)
                continue
            done.written.append(write_frame(frame, target))
        return done

    @classmethod
    def read(cls, path: str | os.PathLike) -> Self:
        """The result written at ``path``: every table read and checked against its schema, the file named on error.

        A missing side file of an optional part, or of one written only when not empty, gives None or an empty
        table; a missing main file or required side file is an InputError naming it.
        """
        return cls.from_tables(cls.read_tables(path))

    @classmethod
    def read_tables(cls, path: str | os.PathLike, *, partial: bool = False) -> dict[str, pl.DataFrame | None]:
        """The tables of a result at ``path`` by name, each checked (see :meth:`read`).

        ``partial``: a missing side file gives None instead of an error (a reader that can do without it).
        """
        paths = cls.paths(path)
        tables: dict[str, pl.DataFrame | None] = {}
        for part in cls.PARTS:
            target = paths[part.name]
            if not target.is_file() and part is not cls.PARTS[0]:
                if part.optional or partial:
                    tables[part.name] = None
                    continue
                if part.when_empty == "remove":
                    tables[part.name] = part.schema.empty()
                    continue
                raise InputError(f"{target}: no such file (the {part.what} written beside {path})")
            tables[part.name] = read_table(target, part.schema, what=part.what)
        return tables

    @classmethod
    def from_tables(cls, tables: dict[str, Any]) -> Self:
        """The result of its tables (subclasses with other fields give them defaults here)."""
        return cls(**tables)


def read_table(path: str | os.PathLike, schema: TableSchema, *, what: str) -> pl.DataFrame:
    """A ``.parquet`` or ``.csv`` table checked against ``schema`` (CSV text columns kept as text), the file named."""
    import polars as pl

    strings = {c.name: pl.String for c in schema.columns if c.dtype == pl.String}
    frame = read_frame(path, what=what, schema_overrides=strings)
    return schema.validate(frame, source=str(path))
