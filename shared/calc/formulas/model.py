"""formulas' side of the engine: building an ExcelModel from an .xlsx, naming its cell nodes,
and reading results (solutions, compiled outputs, array areas) as typed content."""

from __future__ import annotations

import logging
import os
import re
import tempfile
from typing import Any

from shared.calc.refs import cell_name, column_number
from shared.calc.values import EMPTY, CellValue
from shared.calc.xlsx.package import UNREADABLE
from shared.errors import WorkbookError

log = logging.getLogger(__name__)

BOOK_NAME = "workbook.xlsx"  # formulas keys cells by file name: '[workbook.xlsx]SHEET'!A1
# Cells of the upload only: the values saved for other workbooks are books of their own
# ('[saved-link-1.xlsx]SHEET'!A1, shared.calc.formulas.books), never cells of this one.
_KEY_RE = re.compile(rf"^'\[{re.escape(BOOK_NAME)}\](.*)'!([A-Z]+)(\d+)(?::([A-Z]+)(\d+))?$")


def cell_key(sheet: str, row: int, col: int) -> str:
    """formulas' node id of a cell."""
    return f"'[{BOOK_NAME}]{sheet.upper()}'!{cell_name(row, col)}"


def _quiet_environment() -> None:
    # formulas draws progress bars on stderr; numpy's BLAS spawns a thread per core.
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def build_model(data: bytes):
    """A finished formulas ExcelModel of the xlsx (circular references allowed). References to
    other workbooks read the values saved in the upload's link parts; no other file is opened
    (shared.calc.formulas.books)."""
    _quiet_environment()
    from shared.calc.fenced import out_of_memory
    from shared.calc.formulas.books import ContainedModel
    from shared.calc.formulas.functions import install
    from shared.calc.xlsx.external_links import external_books

    install()
    with tempfile.TemporaryDirectory(prefix="sheetcalc-formulas-") as folder:
        path = os.path.join(folder, BOOK_NAME)
        with open(path, "wb") as handle:
            handle.write(data)
        try:
            model = ContainedModel(BOOK_NAME, external_books(data))
            return model.loads(path).finish(circular=True)
        except Exception as exc:  # noqa: BLE001 - formulas raises anything from its parsers
            if out_of_memory(exc):
                raise  # the memory budget, not an unreadable file
            log.info("formulas could not read a workbook: %r", exc)
            raise WorkbookError(UNREADABLE) from None


def to_value(raw: Any) -> CellValue:
    """A formulas result as ("n"|"s"|"b"|"e"|"empty", value)."""
    import formulas
    import numpy as np
    import schedula as sh
    from formulas.excel import XlCircular

    if hasattr(raw, "value") and hasattr(raw, "ranges"):  # a Ranges
        raw = raw.value
    if isinstance(raw, np.ndarray):
        raw = raw.flat[0] if raw.size else sh.EMPTY
    if raw is sh.EMPTY or raw is None:
        return EMPTY
    if isinstance(raw, XlCircular):
        # formulas marks cells in (or fed by) a circular reference with XlCircular('#CIRC!'),
        # whose str() is "0" (what Excel shows for them without iterative calculation).
        # Read it as the circular-reference error IronCalc answers too, not as error "0".
        return ("e", "#CIRC!")
    if isinstance(raw, formulas.XlError):
        return ("e", str(raw))
    if isinstance(raw, (bool, np.bool_)):
        return ("b", bool(raw))
    if isinstance(raw, (int, float, np.integer, np.floating)):
        return ("n", float(raw))
    if isinstance(raw, str):
        return ("s", raw)
    return ("s", str(raw))


def _parse_key(key: Any) -> tuple[str, int, int, int | None, int | None] | None:
    """(SHEET, top, left, bottom, right) of an area node id, (SHEET, row, col, None, None) of a
    cell's, None for any other node."""
    match = _KEY_RE.match(key) if isinstance(key, str) else None
    if match is None:
        return None
    sheet, c1, r1, c2, r2 = match.groups()
    if c2 is None:
        return (sheet, int(r1), column_number(c1), None, None)
    return (sheet, int(r1), column_number(c1), int(r2), column_number(c2))


def solution_cells(solution: dict) -> dict[tuple[str, int, int], CellValue]:
    """(SHEET, row, col) -> value for every cell a formulas solution holds."""
    import numpy as np

    out: dict[tuple[str, int, int], CellValue] = {}
    ranges = []
    for key, result in solution.items():
        box = _parse_key(key)
        if box is None:
            continue
        if box[3] is None:
            out[box[:3]] = to_value(result)
        else:
            ranges.append((*box, result))
    # Cells only known through a range (array formulas) come from that range.
    for sheet, top, left, bottom, right, result in ranges:
        array = getattr(result, "value", None)
        if not isinstance(array, np.ndarray) or array.shape != (bottom - top + 1, right - left + 1):
            continue
        for dr in range(array.shape[0]):
            for dc in range(array.shape[1]):
                out.setdefault((sheet, top + dr, left + dc), to_value(array[dr, dc]))
    return out


def output_sources(cells: list[str], nodes) -> dict[str, tuple[str, int, int] | None]:
    """Where each output cell's value comes from: None for a cell node of its own, else the
    array formula's area node holding it and the cell's offset in it.

    formulas keeps an array formula (CSE or spilled) as one node for its whole area
    ('[workbook.xlsx]SHEET'!D1:E5), so its cells are not outputs it can compile on their own.
    """
    boxes = {node: _parse_key(node) for node in nodes}
    areas = [(*box, node) for node, box in boxes.items() if box is not None and box[3] is not None]
    sources: dict[str, tuple[str, int, int] | None] = {}
    for key in cells:
        sources[key] = None
        if key in nodes:
            continue
        sheet, row, col = _parse_key(key)[:3]
        for area_sheet, top, left, bottom, right, node in areas:
            if area_sheet == sheet and top <= row <= bottom and left <= col <= right:
                sources[key] = (node, row - top, col - left)
                break
    return sources


def area_cell(area: Any, row: int, col: int) -> Any:
    """One cell of an array formula's result (empty where the result is smaller)."""
    import numpy as np
    import schedula as sh

    value = getattr(area, "value", area)  # a Ranges holds its array in .value
    array = np.atleast_2d(np.asarray(value, object)) if value is not None else None
    if array is None or row >= array.shape[0] or col >= array.shape[1]:
        return sh.EMPTY
    return array[row, col]
