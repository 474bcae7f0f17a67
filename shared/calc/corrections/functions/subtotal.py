"""SUBTOTAL over rows an autoFilter has filtered out, rewritten at model load.

Rules from Microsoft's "SUBTOTAL function" page (support.microsoft.com): function_num 1-11
include rows hidden by the Hide Rows command, 101-111 ignore them; "The SUBTOTAL function
ignores any rows that are not included in the result of a filter, no matter which
function_num value you use"; nested SUBTOTALs in the references are ignored.

IronCalc 0.9.1 gets hidden rows and nested SUBTOTALs right (measured) but knows nothing of
filters: SUBTOTAL(9, ...) over a filtered list adds the filtered-out rows (measured: 100 where
Excel answers 80). The package keeps a filtered-out row as a hidden row (`hidden="1"`) inside
the sheet's `<autoFilter ref>` holding a `<filterColumn>`; such a row is what Excel reads as
filtered. (A table's own filter, in its xl/tables part, IronCalc reads right: measured.) So
where every hidden row of a SUBTOTAL's references is such a row, SUBTOTAL(n, ...) is
SUBTOTAL(100 + n, ...) and is rewritten so; where the references also hold rows hidden by
hand (outside the filtered list), no function_num answers Excel's value over the references
as written, so they are rewritten as the runs of rows the filter kept (SUBTOTAL takes up to
254 references), and n is kept.
"""

from __future__ import annotations

import re
from dataclasses import replace

from shared.calc.corrections.formula_tokens import TEXT_LITERAL
from shared.calc.corrections.lookups import parse_range
from shared.calc.corrections.model import Rewrite, rewrite_cells

MENTION = re.compile(rb"SUBTOTAL\(")
KEYWORDS = (b"SUBTOTAL(",)
_AUTOFILTER = re.compile(
    rb"<(?:\w+:)?autoFilter\b[^>]*?\bref=\"([^\"]+)\"[^>]*?(?:/>|>(.*?)</(?:\w+:)?autoFilter>)",
    re.DOTALL,
)
_CALL = re.compile(r"(?<![A-Za-z0-9_.])SUBTOTAL\(\s*(\d+)\s*,", re.IGNORECASE)


def filtered_areas(data: bytes) -> dict[int, list[tuple[int, int]]]:
    """{sheet index: [(first, last) data row]} of the sheets' autoFilters that filter a column
    (the rows below the header they may hide)."""
    from shared.calc.xlsx.package import open_package, workbook_parts

    package = open_package(data)
    _, parts, _ = workbook_parts(package)
    areas: dict[int, list[tuple[int, int]]] = {}
    for index, (_, path) in enumerate(parts):
        xml = package.read(path)
        if b"autoFilter" not in xml:
            continue
        for match in _AUTOFILTER.finditer(xml):
            box = parse_range(match.group(1).decode())
            if box is not None and b"filterColumn" in (match.group(2) or b""):
                areas.setdefault(index, []).append((box.top + 1, box.bottom))
    return areas


def call_arguments(text: str, start: int) -> list[str] | None:
    """The top-level arguments of the call whose argument list starts at text[start] (just past
    its "(" or past a comma), or None when the call does not close. Text literals must have been
    blanked; array constants' commas stay inside their argument."""
    depth, pieces, current = 0, [], []
    for ch in text[start:]:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            if depth == 0:
                pieces.append("".join(current))
                return pieces
            depth -= 1
        elif ch == "," and depth == 0:
            pieces.append("".join(current))
            current = []
            continue
        current.append(ch)
    return None


class _HiddenRows:
    """Each sheet's hidden rows up to its last used row, read from the model once."""

    def __init__(self, model):
        self._model = model
        self._sheets = [p["name"].lower() for p in model.get_worksheets_properties()]
        self._rows: dict[int, list[int]] = {}

    def within(self, sheet: int, box) -> list[tuple[int, int]]:
        """(sheet index, row) of the hidden rows of `box` written in a formula on `sheet`."""
        if box.sheet is None:
            index = sheet
        elif box.sheet.lower() in self._sheets:
            index = self._sheets.index(box.sheet.lower())
        else:
            return [(-1, -1)]  # another workbook: never rewritten
        if index not in self._rows:
            last = self._model.get_sheet_dimensions(index)[1]  # (top, bottom, left, right)
            self._rows[index] = [
                r for r in range(1, last + 1) if self._model.is_row_hidden(index, r)
            ]
        return [(index, r) for r in self._rows[index] if box.top <= r <= box.bottom]


def _classify(
    hidden_rows: _HiddenRows, areas, sheet: int, formula: str
) -> list[tuple[int, int, str]]:
    """[(start, end, text)]: the pieces of the SUBTOTAL(n, ...) calls to replace. Over rows a
    filter hid and no row hidden by hand, n becomes 100 + n; over both, the references become
    the runs of their rows the filter kept (n stays, so rows hidden by hand still count for
    1-11, as Excel counts them)."""
    text = TEXT_LITERAL.sub(lambda m: " " * len(m.group(0)), formula)
    fixes = []
    for call in _CALL.finditer(text):
        n = int(call.group(1))
        if not 1 <= n <= 11:
            continue
        arguments = call_arguments(text, call.end())
        boxes = [parse_range(a) for a in arguments or []]
        if not boxes or None in boxes:
            continue
        per_box = [hidden_rows.within(sheet, box) for box in boxes]
        hidden = [row for rows in per_box for row in rows]
        filtered = {
            (s, r) for s, r in hidden if any(a <= r <= b for a, b in areas.get(s, ()))
        }
        if not filtered:
            continue
        if len(filtered) == len(hidden):
            fixes.append((call.start(1), call.end(1), str(100 + n)))
            continue
        pieces = []
        for box, rows in zip(boxes, per_box):
            out = sorted(r for s, r in rows if (s, r) in filtered)
            top = box.top
            for r in out + [box.bottom + 1]:
                if r > top:
                    pieces.append(replace(box, top=top, bottom=r - 1).text())
                top = r + 1
        end = call.end() + len(",".join(arguments))
        if 0 < len(pieces) <= 254:  # SUBTOTAL's limit of references
            fixes.append((call.end(), end, ",".join(pieces)))
    return fixes


def correct_subtotals(model, cells: list[tuple[int, int, int]], areas) -> list[Rewrite]:
    """SUBTOTAL over filtered-out rows rewritten as _classify says."""
    hidden_rows = _HiddenRows(model)

    def rewrite(formula: str, sheet: int, row: int, col: int) -> str | None:
        body = formula.lstrip("=")
        fixes = _classify(hidden_rows, areas, sheet, body)
        for start, end, piece in reversed(fixes):
            body = body[:start] + piece + body[end:]
        return body if fixes else None

    return rewrite_cells(model, cells, rewrite)


def correct_filtered_subtotals(model, data: bytes) -> list[Rewrite]:
    """The rewrite at model load; a workbook without SUBTOTAL costs one scan of its sheet XML,
    one without a filtering autoFilter one more look at the same parts."""
    from shared.calc.corrections.package import survey

    candidates, arrays = survey(data, MENTION, KEYWORDS)
    if not candidates:
        return []
    areas = filtered_areas(data)
    if not areas:
        return []
    return correct_subtotals(model, sorted(candidates - arrays), areas)
