"""Parsing defined-name formulas such as `'Quote Sheet'!$B$2:$C$4` into sheet and cell box."""

import re
from dataclasses import dataclass

MAX_ROWS = 1_048_576
MAX_COLS = 16_384

_SHEET = r"(?:'((?:[^']|'')+)'|([^'!\[\]:*?/\\,()\s]+))"
_CELL = r"\$?([A-Za-z]{1,3})\$?(\d{1,7})"
_REF_RE = re.compile(rf"{_SHEET}!{_CELL}(?::{_CELL})?")
CELL_RE = re.compile(_CELL)


@dataclass(frozen=True)
class CellBox:
    """A rectangular range on one sheet, 1-based and inclusive."""

    sheet: str
    top: int
    left: int
    bottom: int
    right: int

    @property
    def rows(self) -> int:
        return self.bottom - self.top + 1

    @property
    def cols(self) -> int:
        return self.right - self.left + 1

    @property
    def ref(self) -> str:
        """A1-style reference without `$` or sheet: "B2" or "B2:C4"."""
        first = cell_name(self.top, self.left)
        if self.rows == 1 and self.cols == 1:
            return first
        return f"{first}:{cell_name(self.bottom, self.right)}"

    def cells(self) -> list[tuple[int, int]]:
        """(row, col) of every cell, row by row."""
        return [
            (row, col)
            for row in range(self.top, self.bottom + 1)
            for col in range(self.left, self.right + 1)
        ]


def column_number(letters: str) -> int:
    """'A' -> 1, 'XFD' -> 16384."""
    number = 0
    for char in letters.upper():
        number = number * 26 + ord(char) - ord("A") + 1
    return number


def column_letters(number: int) -> str:
    """1 -> 'A', 16384 -> 'XFD'."""
    letters = ""
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def intersected(top: int, left: int, bottom: int, right: int, row: int, col: int) -> tuple[int, int] | None:
    """Excel's implicit intersection ("Implicit intersection operator: @"): the (row, col) of
    the cell of a range in the formula's row (a column), column (a row) or both (a block; a
    single cell is itself), None (#VALUE!) where there is none."""
    r = top if top == bottom else row if top <= row <= bottom else None
    c = left if left == right else col if left <= col <= right else None
    return None if r is None or c is None else (r, c)


def cell_name(row: int, col: int) -> str:
    return f"{column_letters(col)}{row}"


def parse_cell(ref: str) -> tuple[int, int] | None:
    """'$B$2' or 'b2' -> (2, 2); None when it is not a single in-bounds cell."""
    match = CELL_RE.fullmatch(ref.strip())
    if match is None:
        return None
    col, row = column_number(match.group(1)), int(match.group(2))
    return (row, col) if 1 <= row <= MAX_ROWS and 1 <= col <= MAX_COLS else None


def parse_range_formula(formula: str) -> CellBox | None:
    """The box a defined name points at, or None for anything but one plain cell range.

    Constants, formulas, unions, external links, `#REF!` and whole rows/columns give None.
    """
    match = _REF_RE.fullmatch(formula.strip().lstrip("="))
    if match is None:
        return None
    quoted, bare, col1, row1, col2, row2 = match.groups()
    sheet = quoted.replace("''", "'") if quoted is not None else bare
    first = parse_cell(f"{col1}{row1}")
    last = parse_cell(f"{col2}{row2}") if col2 else first
    if first is None or last is None:
        return None
    if {first[0], last[0]} == {1, MAX_ROWS} or {first[1], last[1]} == {1, MAX_COLS}:
        return None  # whole rows/columns written out as $A$1:$A$1048576
    return CellBox(
        sheet=sheet,
        top=min(first[0], last[0]),
        left=min(first[1], last[1]),
        bottom=max(first[0], last[0]),
        right=max(first[1], last[1]),
    )
