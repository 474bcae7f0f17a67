"""Formula analysis: the functions a formula calls, the cells it reads, and which cells the
check leaves out (volatile functions, links to other workbooks, and everything depending on them)."""

from __future__ import annotations

import re
from functools import lru_cache

from openpyxl.formula.tokenizer import Token, Tokenizer

from shared.calc.refs import CELL_RE, MAX_COLS, MAX_ROWS, column_number
from shared.calc.xlsx.cells import ExcelBook

VOLATILE_FUNCTIONS = frozenset({"RAND", "RANDBETWEEN", "NOW", "TODAY", "CELL", "INFO"})
_FUNC_PREFIX = re.compile(r"^(?:_xlfn\.|_xlws\.|_xll\.)+", re.IGNORECASE)
_COL_REF = re.compile(r"^\$?([A-Za-z]{1,3})$")
_ROW_REF = re.compile(r"^\$?(\d{1,7})$")
_EXTERNAL = re.compile(r"\[(?:\d+\]|[^\[\]]*\][^\[\]]*!)")


def _tokens(formula: str) -> list[Token]:
    try:
        return Tokenizer("=" + formula.lstrip("{=").rstrip("}")).items
    except Exception:  # noqa: BLE001 - an unparsable formula has no usable tokens
        return []


_STRING_LITERAL = re.compile(r'"(?:[^"]|"")*"|\'(?:[^\']|\'\')*\'')
_FUNCTION_CALL = re.compile(r"(?<![A-Za-z0-9_.!$\]])([A-Za-z_][A-Za-z0-9_.]*)\(")


@lru_cache(maxsize=65536)
def function_names(formula: str) -> frozenset[str]:
    """Upper-case function names a formula calls, without _xlfn./_xlws. prefixes.

    A regular expression over the formula with its text literals and quoted sheet names
    blanked: the tokenizer is ten times slower and this runs once per formula cell.
    """
    bare = _STRING_LITERAL.sub('""', formula)
    return frozenset(_FUNC_PREFIX.sub("", name).upper() for name in _FUNCTION_CALL.findall(bare))


def _references(formula: str, sheet: str, names: dict[str, str], depth: int = 0):
    """(sheet, top, left, bottom, right) boxes a formula reads; "external" for other books."""
    for token in _tokens(formula):
        if token.type != Token.OPERAND or token.subtype != Token.RANGE:
            continue
        value = token.value
        # another workbook: [1]Sheet1!A1, [1]!Name; not a structured reference inside a table
        # ([Amount], [@Amount], [[#This Row],[Amount]])
        if _EXTERNAL.match(value):
            yield "external"
            continue
        if "!" in value:
            where, _, ref = value.rpartition("!")
            where = where.strip("'").replace("''", "'")
            if where.startswith("["):
                yield "external"
                continue
        else:
            where, ref = sheet, value
        if ":" in ref:
            first, _, last = ref.partition(":")
            last = last.split("!")[-1]
        else:
            first = last = ref
        box = _box(first, last, span=":" in ref)
        if box is not None:
            yield (where.lower(), *box)
        elif ":" not in ref and ref.upper() in names and depth < 5:
            yield from _references(names[ref.upper()].lstrip("="), sheet, names, depth + 1)


def _box(first: str, last: str, span: bool = True) -> tuple[int, int, int, int] | None:
    """The box of A1, A1:B2, A:B or 1:2. Whole columns and rows are written only as spans:
    a bare `m` or `tax` is a defined name, never column M or TAX."""
    a, b = CELL_RE.fullmatch(first), CELL_RE.fullmatch(last)
    if a and b:
        r1, c1 = int(a.group(2)), column_number(a.group(1))
        r2, c2 = int(b.group(2)), column_number(b.group(1))
        return min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2)
    if not span:
        return None
    a, b = _COL_REF.match(first), _COL_REF.match(last)
    if a and b:
        c1, c2 = column_number(a.group(1)), column_number(b.group(1))
        return 1, min(c1, c2), MAX_ROWS, max(c1, c2)
    a, b = _ROW_REF.match(first), _ROW_REF.match(last)
    if a and b:
        r1, r2 = int(a.group(1)), int(b.group(1))
        return min(r1, r2), 1, max(r1, r2), MAX_COLS
    return None


def excluded_cells(book: ExcelBook) -> dict[int, str]:
    """Index of each cell left out of the check -> why ("volatile" or "external")."""
    reasons: dict[int, str] = {}
    refs: dict[int, list] = {}
    for index, cell in enumerate(book.cells):
        if function_names(cell.formula) & VOLATILE_FUNCTIONS:
            reasons[index] = "volatile"
            continue
        if "[" not in cell.formula and "!" not in cell.formula and not book.defined_names:
            continue
        cell_refs = list(_references(cell.formula, cell.sheet, book.defined_names))
        if "external" in cell_refs:
            reasons[index] = "external"
        refs[index] = [r for r in cell_refs if r != "external"]
    if not reasons:
        return reasons
    # Dependants of excluded cells are excluded too, until nothing changes.
    for index, cell in enumerate(book.cells):
        if index not in refs:
            refs[index] = [
                r for r in _references(cell.formula, cell.sheet, book.defined_names)
                if r != "external"
            ]
    changed = True
    while changed:
        changed = False
        tainted: dict[str, list[tuple[int, int, str]]] = {}
        for index, reason in reasons.items():
            cell = book.cells[index]
            tainted.setdefault(cell.sheet.lower(), []).append((cell.row, cell.col, reason))
        for index, boxes in refs.items():
            if index in reasons:
                continue
            for where, top, left, bottom, right in boxes:
                hit = next(
                    (reason for row, col, reason in tainted.get(where, ())
                     if top <= row <= bottom and left <= col <= right),
                    None,
                )
                if hit:
                    reasons[index] = hit
                    changed = True
                    break
    return reasons


def names_reading(book: ExcelBook, boxes: list[tuple[str, int, int, int, int]], names: dict[str, str]) -> list[str]:
    """The defined names (`names`: name as written -> its formula text) whose cells lie in one
    of `boxes` ((sheet, top, left, bottom, right)) or are calculated from them, directly or
    through other formula cells."""
    tainted = [(sheet.lower(), *box) for sheet, *box in boxes]

    def hits(where: str, top: int, left: int, bottom: int, right: int) -> bool:
        return any(
            where == s and top <= b and t <= bottom and left <= r and l <= right
            for s, t, l, b, r in tainted
        )

    refs = {
        index: [r for r in _references(cell.formula, cell.sheet, book.defined_names) if r != "external"]
        for index, cell in enumerate(book.cells)
    }
    reached: set[int] = set()
    changed = True
    while changed:
        changed = False
        for index, boxes_read in refs.items():
            if index in reached:
                continue
            if any(hits(*box) for box in boxes_read):
                cell = book.cells[index]
                reached.add(index)
                tainted.append((cell.sheet.lower(), cell.row, cell.col, cell.row, cell.col))
                changed = True
    affected = []
    for name, text in names.items():
        boxes_named = [r for r in _references(text.lstrip("="), "", book.defined_names) if r != "external"]
        if any(hits(*box) for box in boxes_named):
            affected.append(name)
    return affected
