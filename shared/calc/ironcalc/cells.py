"""Reading and writing one cell of an IronCalc model as typed content (values.CellValue).

One reader serves every use: the uploaded content of input cells (restored between jobs),
output values, and the fidelity check's recalculated values.
"""

from __future__ import annotations

import ironcalc

from shared.calc.values import EMPTY, CellValue

_ERROR = ironcalc.CellType.ErrorValue


def read_cell(model: "ironcalc.Model", sheet: int, row: int, col: int) -> CellValue:
    """A cell's value as ("n", float), ("s", str), ("b", bool), ("e", code) or EMPTY."""
    value = model.get_cell_value(sheet, row, col)
    if value is None:
        return EMPTY
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", float(value))
    # IronCalc answers an error as its code: only the cell type tells it from the same text.
    if value.startswith("#") and model.get_cell_type(sheet, row, col) == _ERROR:
        return ("e", value)
    return ("s", value)


def write_cell(model: "ironcalc.Model", sheet: int, row: int, col: int, content: CellValue) -> None:
    """Put typed content into a cell; EMPTY clears it."""
    kind, value = content
    if kind == "empty":
        model.clear_cell_contents(sheet, row, col)
    elif kind == "n":
        model.update_cell_with_number(sheet, row, col, value)
    elif kind == "s":
        # Text stays text: "=1+1" or "123" are not parsed (IronCalc adds a quote prefix).
        model.update_cell_with_text(sheet, row, col, value)
    elif kind == "b":
        model.update_cell_with_bool(sheet, row, col, value)
    else:  # an error constant typed into an input cell
        model.set_user_input(sheet, row, col, value)


def as_content(value: float | str | bool | None) -> CellValue:
    """An input plan's scalar as typed content."""
    if value is None:
        return EMPTY
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, float):
        return ("n", value)
    return ("s", value)
