"""Formula cells of a package and the values Excel cached for them, read from the sheet XML.

No date conversion, errors kept as errors (Excel 365's #CALC!, #SPILL! and the like read from
their rich values, see rich_errors); shared formulas are expanded and the cells an array
formula fills are listed too.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from xml.etree import ElementTree

from openpyxl.formula.translate import Translator

from shared.calc.refs import CELL_RE, cell_name, column_number
from shared.calc.values import CellValue
from shared.calc.xlsx.package import (
    UNREADABLE,
    application,
    defined_names,
    element_text,
    local_name,
    open_package,
    shared_strings,
    unescape_ooxml,
    workbook_parts,
)
from shared.calc.xlsx.rich_errors import rich_errors
from shared.errors import WorkbookError


@dataclass
class FormulaCell:
    """A formula cell (or a cell an array formula fills) with the value Excel cached."""

    sheet: str
    row: int
    col: int
    formula: str
    expected: CellValue | None  # None when the file carries no cached value
    array_area: bool = False  # filled by another cell's array formula, no formula of its own
    array_formula: bool = False  # the cell's own formula is an array formula (t="array")
    # that formula is a legacy (Ctrl+Shift+Enter) one over several cells: no dynamic-array
    # metadata (`cm`), which the correction layer leaves as it is
    legacy_array: bool = False

    @property
    def address(self) -> str:
        return cell_name(self.row, self.col)


@dataclass
class ExcelBook:
    """What the check needs from a package: sheets, formula cells, names, the saving program."""

    sheets: list[str]
    cells: list[FormulaCell]
    defined_names: dict[str, str]
    application: str | None
    pivots: object = None  # the pivot tables (corrections.functions.pivots.Pivots); None: not read


def _cached(kind: str | None, raw: str | None, inline: str | None, strings: list[str]) -> CellValue | None:
    """Excel's cached value of a cell from its t attribute and <v>/<is> content."""
    if kind == "inlineStr":
        return ("s", inline or "")
    if raw is None:
        return ("s", "") if kind == "str" else None
    if kind == "str":
        return ("s", unescape_ooxml(raw))
    if kind == "s":
        index = int(raw)
        return ("s", strings[index] if index < len(strings) else "")
    if kind == "b":
        return ("b", raw.strip() in ("1", "true", "TRUE"))
    if kind == "e":
        return ("e", raw.strip())
    try:
        return ("n", float(raw))
    except ValueError:
        return ("s", raw)


def _sheet_cells(
    data: bytes, sheet: str, strings: list[str], errors: dict[int, str] | None = None
) -> list[FormulaCell]:
    """Formula cells of one worksheet part, shared formulas expanded, array areas included."""
    cells: list[FormulaCell] = []
    shared: dict[str, tuple[str, str]] = {}  # si -> (formula, origin address)
    arrays: list[tuple[int, int, int, int, str]] = []
    plain_values: dict[tuple[int, int], CellValue | None] = {}
    row_number, col_number = 0, 0
    for event, element in ElementTree.iterparse(io.BytesIO(data), events=("start", "end")):
        tag = local_name(element.tag)
        if tag == "row":
            if event == "start":  # cells may omit r: count from the row's own number
                row_number = int(element.get("r") or row_number + 1)
                col_number = 0
            else:
                element.clear()
            continue
        if tag != "c" or event != "end":
            continue
        ref = element.get("r")
        if ref:
            match = CELL_RE.fullmatch(ref)
            col_number, row_number = column_number(match.group(1)), int(match.group(2))
        else:  # some writers omit r: the next column of the current row
            col_number += 1
        kind = element.get("t")
        f_element = v_element = is_element = None
        for child in element:
            name = local_name(child.tag)
            if name == "f":
                f_element = child
            elif name == "v":
                v_element = child
            elif name == "is":
                is_element = child
        raw = v_element.text if v_element is not None else None
        inline = element_text(is_element) if is_element is not None else None
        expected = _cached(kind, raw, inline, strings)
        if kind == "e" and errors and element.get("vm", "").isdigit():
            expected = ("e", errors.get(int(element.get("vm")), expected[1] if expected else ""))
        if f_element is None:
            if arrays:
                plain_values[(row_number, col_number)] = expected
            element.clear()
            continue
        text = f_element.text or ""
        f_kind = f_element.get("t")
        address = cell_name(row_number, col_number)
        if f_kind == "shared":
            si = f_element.get("si", "")
            if text:
                shared[si] = (text, address)
            elif si in shared:
                master, origin = shared[si]
                try:
                    text = Translator("=" + master, origin=origin).translate_formula(address)[1:]
                except Exception:  # noqa: BLE001 - an untranslatable formula is still a formula
                    text = master
        legacy = False
        if f_kind == "array" and f_element.get("ref"):
            box = _parse_box(f_element.get("ref"))
            if box is not None and (box[0], box[1]) != (box[2], box[3]):
                arrays.append((*box, text))
                legacy = element.get("cm") is None
        if not text and f_kind != "shared" and arrays:
            # Excel writes an empty <f/> in some cells of a dynamic array's spill area
            plain_values[(row_number, col_number)] = expected
            element.clear()
            continue
        cells.append(FormulaCell(sheet, row_number, col_number, text, expected,
                                 array_formula=f_kind == "array", legacy_array=legacy))
        element.clear()
    # Cells an array formula fills carry only a <v>: they are formula results too.
    for top, left, bottom, right, text in arrays:
        for (row, col), expected in plain_values.items():
            if top <= row <= bottom and left <= col <= right and (row, col) != (top, left):
                cells.append(FormulaCell(sheet, row, col, "{=" + text + "}", expected, True))
    return cells


def _parse_box(ref: str) -> tuple[int, int, int, int] | None:
    first, _, last = ref.partition(":")
    a, b = CELL_RE.fullmatch(first), CELL_RE.fullmatch(last or first)
    if a is None or b is None:
        return None
    return int(a.group(2)), column_number(a.group(1)), int(b.group(2)), column_number(b.group(1))


def read_excel_cells(data: bytes) -> ExcelBook:
    """Formula cells and Excel's cached values; WorkbookError when the file is not an xlsx."""
    package = open_package(data)
    workbook_xml, sheet_parts, strings_path = workbook_parts(package)
    strings = shared_strings(package, strings_path)
    errors = rich_errors(package)
    cells = []
    for name, target in sheet_parts:
        try:
            cells.extend(_sheet_cells(package.read(target), name, strings, errors))
        except (ElementTree.ParseError, AttributeError, zipfile.BadZipFile) as exc:
            raise WorkbookError(UNREADABLE) from exc
    return ExcelBook(
        [n for n, _ in sheet_parts], cells, defined_names(workbook_xml), application(package),
        _pivots(package),
    )


def _pivots(package: zipfile.ZipFile):
    """The package's pivot tables for GETPIVOTDATA, None when they cannot be read."""
    from shared.calc.corrections.functions.pivots import read_pivots

    try:
        return read_pivots(package)
    except Exception:  # noqa: BLE001 - unread: every GETPIVOTDATA is flagged
        return None
