"""Split a sphinx-gallery script into its code cells.

A sphinx-gallery script is a module docstring followed by blocks; a line of 20
or more ``#`` (or a ``# %%`` line) starts a text block, whose leading comment
lines are prose and whose first non-comment line starts the code of that cell.
A cell here is the code between two such separators (comment-only cells are
kept, so counts match what the gallery renders; they trivially run).

>>> src = 'import os\\n' + '#' * 30 + '\\n# Text\\nx = 1\\n# %%\\ny = x + 1\\n'
>>> [c.code.strip() for c in split_cells(src)]
['import os', '# Text\\nx = 1', 'y = x + 1']
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

__all__ = ["Cell", "split_cells"]

_SEPARATOR = re.compile(r"^(#{20,}\s*|# %%.*)$")


@dataclass(frozen=True)
class Cell:
    """One code cell: its index, first line (1-based) and source."""

    index: int
    line: int
    code: str

    @property
    def has_code(self) -> bool:
        """True when the cell holds a statement (not only comments)."""
        try:
            return bool(ast.parse(self.code).body)
        except SyntaxError:
            return True


def split_cells(source: str) -> list[Cell]:
    """The code cells of ``source``, in order (the module docstring dropped)."""
    lines = source.splitlines(keepends=True)
    start = 0
    tree = ast.parse(source)
    if (
        tree.body
        and isinstance(tree.body[0], ast.Expr)
        and isinstance(getattr(tree.body[0], "value", None), ast.Constant)
    ):
        start = tree.body[0].end_lineno or 0
    cells: list[Cell] = []
    chunk: list[str] = []
    chunk_line = start + 1
    for number, text in enumerate(lines[start:], start=start + 1):
        if _SEPARATOR.match(text.rstrip("\n")):
            if "".join(chunk).strip():
                cells.append(Cell(len(cells), chunk_line, "".join(chunk)))
            chunk, chunk_line = [], number + 1
            continue
        chunk.append(text)
    if "".join(chunk).strip():
        cells.append(Cell(len(cells), chunk_line, "".join(chunk)))
    return cells
