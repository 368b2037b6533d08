"""What the command-line tests share: reading the rows of a printed table."""

import pytest


def _table_rows(text: str, title: str) -> list[list[str]]:
    """The stripped cells of each data row of the table printed under the line ``title``."""
    lines = text.splitlines()
    rows = []
    for line in lines[lines.index(title) + 1 :]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            rows.append([cell.strip() for cell in line.split("│")[1:-1]])
    return rows


@pytest.fixture
def table_rows():
    """``table_rows(stdout, title)``: the cells of the table printed under ``title``."""
    return _table_rows
