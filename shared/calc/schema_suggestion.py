"""A JSON Schema (Draft 7) suggested from a workbook for its input and output ranges.

Each cell's type comes from its value and number format (number, integer, string, boolean, or a
date as ``{"type": "string", "format": "date"}``, the form execute turns into an Excel serial);
Excel's data validation, where a cell has one, is the stronger word: a list becomes ``enum``,
whole numbers ``integer``, whole/decimal bounds ``minimum``/``maximum`` (or the exclusive ones),
a date rule ``format: date``, a text-length rule ``minLength``/``maxLength``. Rows and columns
become arrays of their length, blocks arrays of rows; every input is ``required``.
"""

from __future__ import annotations

import io
import re
from datetime import date, datetime, time
from typing import Any

from openpyxl import load_workbook
from openpyxl.utils.cell import get_column_letter, range_boundaries
from openpyxl.styles.numbers import is_date_format
from openpyxl.utils.datetime import from_excel

DRAFT7 = "http://json-schema.org/draft-07/schema#"
_INTEGER_FORMAT = re.compile(r"^[#,]*0+$")


def _cell_schema(cell, shows_date: bool) -> dict[str, Any]:
    """The cell's type from its value and number format; ``shows_date`` is the upload's own
    reading of the cell's format (the named range's date flags), which holds for empty cells too."""
    value, fmt = cell.value, cell.number_format or "General"
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, (datetime, date)) or shows_date or (value is None and is_date_format(fmt)):
        return {"type": "string", "format": "date"}
    if isinstance(value, str) or fmt == "@":
        return {"type": "string"}
    if isinstance(value, (int, float)) and float(value).is_integer() and _INTEGER_FORMAT.match(fmt.split(";")[0]):
        return {"type": "integer"}
    return {"type": "number"}


def _number(text: str | None, rule_type: str) -> float | int | str | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None  # a formula or reference as a bound: no fixed bound to state
    if rule_type == "date":
        return from_excel(value).date().isoformat()
    return int(value) if rule_type == "whole" or value.is_integer() else value


def _list_values(workbook, formula: str, sheet) -> list[Any] | None:
    formula = formula.strip()
    if formula.startswith('"') and formula.endswith('"'):
        return [_typed(v.strip()) for v in formula[1:-1].split(",")]
    ref = formula.lstrip("=")
    target = sheet
    if "!" in ref:
        name, ref = ref.rsplit("!", 1)
        name = name.strip("'").replace("''", "'")
        if name not in workbook.sheetnames:
            return None
        target = workbook[name]
    elif ref in workbook.defined_names:
        destinations = list(workbook.defined_names[ref].destinations)
        if len(destinations) != 1:
            return None
        name, ref = destinations[0]
        target = workbook[name]
    try:
        min_col, min_row, max_col, max_row = range_boundaries(ref.replace("$", ""))
    except ValueError:
        return None
    values = [c.value for row in target.iter_rows(min_row=min_row, max_row=max_row, min_col=min_col, max_col=max_col) for c in row]
    return [_plain(v) for v in values if v is not None and v != ""]


def _typed(text: str) -> Any:
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time.min else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def _apply_validation(schema: dict[str, Any], rule, workbook, sheet) -> dict[str, Any]:
    kind = rule.type
    if kind == "list" and rule.formula1:
        values = _list_values(workbook, rule.formula1, sheet)
        if values:
            types = {"integer" if isinstance(v, int) and not isinstance(v, bool) else "number" if isinstance(v, float) else "string" for v in values}
            base = {"type": types.pop()} if len(types) == 1 else {}
            return {**base, "enum": values}
        return schema
    if kind in ("whole", "decimal", "date", "textLength"):
        if kind == "whole":
            schema = {"type": "integer"}
        elif kind == "decimal":
            schema = {"type": "number"}
        elif kind == "date":
            schema = {"type": "string", "format": "date"}
        else:
            schema = {"type": "string"}
        low, high = _number(rule.formula1, kind), _number(rule.formula2, kind)
        names = {
            "whole": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"),
            "decimal": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"),
            "date": ("formatMinimum", "formatMaximum", "formatExclusiveMinimum", "formatExclusiveMaximum"),
            "textLength": ("minLength", "maxLength", None, None),
        }[kind]
        minimum, maximum, above, below = names
        operator = rule.operator or "between"
        if operator == "between" and low is not None and high is not None:
            schema.update({minimum: low, maximum: high})
        elif operator == "greaterThanOrEqual" and low is not None:
            schema[minimum] = low
        elif operator == "lessThanOrEqual" and low is not None:
            schema[maximum] = low
        elif operator == "greaterThan" and low is not None:
            if above:
                schema[above] = low
            elif isinstance(low, int):
                schema[minimum] = low + 1
        elif operator == "lessThan" and low is not None:
            if below:
                schema[below] = low
            elif isinstance(low, int):
                schema[maximum] = low - 1
        elif operator == "equal" and low is not None:
            schema.update({minimum: low, maximum: low})
        if kind == "date":
            # format* bounds are not Draft 7 keywords; state them for people, not validators.
            bounds = {k: schema.pop(k) for k in list(schema) if k.startswith("format") and k != "format"}
            if bounds:
                schema["description"] = "Excel allows dates " + ", ".join(f"{k[6:].lower()} {v}" for k, v in bounds.items())
    return schema


def _rule_for(sheet, coordinate: str):
    for rule in sheet.data_validations.dataValidation:
        if coordinate in rule.sqref:
            return rule
    return None


def _range_schema(workbook, rng: dict[str, Any], *, with_validation: bool) -> dict[str, Any]:
    sheet = workbook[rng["sheet"]]
    min_col, min_row, max_col, max_row = range_boundaries(rng["ref"].replace("$", ""))
    width = max_col - min_col + 1
    dates = rng.get("date_cells") or [bool(rng.get("is_date"))] * ((max_row - min_row + 1) * width)
    cells = []
    for r in range(min_row, max_row + 1):
        for c in range(min_col, max_col + 1):
            cell = sheet.cell(row=r, column=c)
            index = (r - min_row) * width + (c - min_col)
            schema = _cell_schema(cell, bool(dates[index]) if index < len(dates) else False)
            if with_validation:
                rule = _rule_for(sheet, f"{get_column_letter(c)}{r}")
                if rule is not None:
                    schema = _apply_validation(schema, rule, workbook, sheet)
            cells.append(schema)
    item = cells[0] if all(s == cells[0] for s in cells) else {"type": sorted({s.get("type", "string") for s in cells})[0]}
    return shaped(item, max_row - min_row + 1, max_col - min_col + 1)


def shaped(item: dict[str, Any], rows: int, cols: int) -> dict[str, Any]:
    """A range's schema from its cells' schema: a scalar, a list for a row or column, rows for a block."""
    if rows == 1 and cols == 1:
        return item
    if rows == 1 or cols == 1:
        n = rows * cols
        return {"type": "array", "items": item, "minItems": n, "maxItems": n}
    return {"type": "array", "minItems": rows, "maxItems": rows,
            "items": {"type": "array", "items": item, "minItems": cols, "maxItems": cols}}


def shapes_only(named_ranges: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """A schema of the `kind` ("input"/"output") ranges from their stored shapes alone, for a
    version without a declared schema: no workbook read, a cell's type left open (any JSON scalar)
    except where it shows a date. Inputs are optional, as execute treats them."""
    properties = {}
    for rng in named_ranges:
        if rng["kind"] != kind:
            continue
        dates = rng.get("date_cells") or [bool(rng.get("is_date"))]
        item = {"type": "string", "format": "date"} if all(dates) else {}
        properties[rng["name"]] = shaped(item, rng["rows"], rng["cols"])
    return {"type": "object", "properties": properties}


def suggest_schemas(data: bytes, named_ranges: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{"input_schema": ..., "output_schema": ...}`` for a workbook and its detected named ranges."""
    workbook = load_workbook(io.BytesIO(data), data_only=True)
    result = {}
    for kind in ("input", "output"):
        properties = {}
        for rng in named_ranges:
            if rng["kind"] == kind and rng["sheet"] in workbook.sheetnames:
                properties[rng["name"]] = _range_schema(workbook, rng, with_validation=kind == "input")
        schema: dict[str, Any] = {"$schema": DRAFT7, "type": "object", "properties": properties}
        if kind == "input":
            schema["required"] = list(properties)
        result[f"{kind}_schema"] = schema
    return result
