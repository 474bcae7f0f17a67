"""INDIRECT given the name of a range (`SUM(INDIRECT("Prices"))`, `INDIRECT(B1)` with B1 holding
"Prices"), or a table's structured reference (`INDIRECT("Sales[Amount]")`), rewritten at model
load so the text reads as the reference it stands for.

Excel's rule (Microsoft support, "INDIRECT function"): ref_text is "a reference to a cell that
contains an A1-style reference, an R1C1-style reference, a name defined as a reference, or a
reference to a cell as a text string". A name is looked up as anywhere else: the formula's own
sheet's name first, then the workbook's; names are not case-sensitive; a name to a constant or
a formula is not a reference (#REF!). IronCalc 0.9.1 answers #REF! for every name given to
INDIRECT, so `SUM(INDIRECT("Prices"))` is #REF! and `COUNT(INDIRECT("Prices"))` 0, the pattern of
dependent lists and of models that pick a region by its name.

The rewrite gives INDIRECT the reference when its text is such a name. A text typed into the
formula is looked up at load (`INDIRECT("Prices")` becomes `INDIRECT("Sheet1!$A$2:$A$4")`, any
other text stays as it is); a computed one (`INDIRECT(A4)`) in the calculation,
`INDIRECT(IFERROR(INDEX({"Sheet1!$A$2:$A$4";...},MATCH(x,{"prices";...},0)),x))`: MATCH ignores
case, as a name lookup does, and the lists are written once per call, in classic functions that
IronCalc calculates itself. (MATCH reads `*`, `?` and `~` in x as wildcards; no sheet name,
defined name or cell address holds `*` or `?`, so only a text INDIRECT answers #REF! for anyway
could find a name that way.) The lists hold the names the formula's sheet sees whose definition
is a static reference (one cell or a range on a named sheet), also written with their sheet
(`Sheet1!Local`) for the sheet-scoped ones, and the tables' structured references (`Sales`,
`Sales[Amount]`, `Sales[#All]`: table_references); any other text goes to INDIRECT as it was.
Left alone: INDIRECT with an R1C1 flag other than TRUE (the reference is written A1-style), array
formulas (a rewrite through IronCalc's API would make a legacy one dynamic), and names to
formulas, which INDIRECT does not evaluate in Excel either.
"""

from __future__ import annotations

import re

from shared.calc.corrections.formula_tokens import replace_call, rewrite_calls
from shared.calc.corrections.lookups import Box
from shared.calc.corrections.model import Rewrite, rewrite_cells
from shared.calc.corrections.reference_operators import operand_area
from shared.calc.corrections.tables import resolve

MENTION = re.compile(rb"(?i)INDIRECT\(")
KEYWORDS = (b"INDIRECT(",)
_LITERAL = re.compile(r'"(?:[^"]|"")*"')


def static_reference(text: str) -> bool:
    """Whether a name's definition is a reference that never moves: one cell, a range, whole
    columns or rows, on a named sheet (`Sheet1!$A$2:$A$4`, `'My sheet'!B1`, `Data!$A:$A`)."""
    area = operand_area(text.strip())
    return area is not None and area.sheet is not None and text.count(":") <= 1


def _text(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


def seen_from(names: dict[tuple[str, int | None], str], sheets: list[str], sheet: int) -> dict[str, str]:
    """{name as INDIRECT may be given it, lower case: the reference} of the names a formula on
    `sheet` sees that stand for a static reference."""
    seen: dict[str, str] = {}
    for (name, scope), text in names.items():
        target = text.strip().lstrip("=")
        if not static_reference(target):
            continue
        if scope is None:
            seen.setdefault(name, target)
        elif scope < len(sheets):
            seen[f"{Box(sheets[scope], 1, 1, 1, 1).prefix().lower()}{name}"] = target
            if scope == sheet:
                seen[name] = target  # the sheet's own name hides the workbook's
    return seen


def table_references(tables) -> dict[str, str]:
    """{structured reference as INDIRECT may be given it, lower case: the reference} of the
    workbook's tables (tables.Table), which every sheet sees: `Sales` and `Sales[#Data]` the data
    rows, `Sales[#All]`, `Sales[#Headers]`, `Sales[#Totals]`, and `Sales[Amount]` a column's data
    rows (Microsoft: "Using structured references with Excel tables")."""
    found: dict[str, str] = {}
    for table in tables:
        first, last = table.top + table.headers, table.bottom - table.totals
        if first > last:
            continue
        name = table.name.lower()
        for part in ("[]", "[#Data]", "[#All]", "[#Headers]", "[#Totals]"):
            area = resolve(table, part, first)
            if not area.startswith("#"):  # no header or totals row: #REF!
                found[name + ("" if part == "[]" else part.lower())] = area
        for offset, column in enumerate(table.columns):
            col = table.left + offset
            found.setdefault(f"{name}[{column.lower()}]", Box(table.sheet, first, col, last, col).text())
    return found


def rewrite_formula(formula: str, names: dict[str, str]) -> str | None:
    """The formula with each INDIRECT's text read through `names` (module docstring), or None
    when it has no INDIRECT to rewrite."""
    if not names:
        return None
    keys = list(names)
    refs = "{" + ";".join(_text(names[k]) for k in keys) + "}"
    known = "{" + ";".join(_text(k) for k in keys) + "}"

    def handle(tokens, values, name, opened, closed, args) -> bool:
        if name != "INDIRECT" or not args or len(args) > 2:
            return False
        if len(args) == 2:
            flag = "".join(values[i] for i in args[1]).strip().upper()
            if flag not in ("TRUE", "1"):
                return False
        rest = "," + "".join(values[i] for i in args[1]) if len(args) == 2 else ""
        # what the call's token holds before the name: IronCalc's `@` where Excel intersects
        at = values[opened][:values[opened].upper().rindex("INDIRECT(")]
        text = "".join(values[i] for i in args[0]).strip()
        if not text:
            return False
        if _LITERAL.fullmatch(text):  # known now: the name's reference, or left as it is
            target = names.get(text[1:-1].replace('""', '"').lower())
            if target is None:
                return False
            replace_call(values, opened, closed, at + "INDIRECT(" + _text(target) + rest + ")")
            return True
        replace_call(values, opened, closed, f"{at}INDIRECT(IFERROR(INDEX({refs},MATCH({text},{known},0)),{text}){rest})")
        return True

    return rewrite_calls(formula, handle)


def correct_indirect_names(model, cells: list[tuple[int, int, int]],
                           names: dict[tuple[str, int | None], str], tables=()) -> list[Rewrite]:
    """Rewrite the INDIRECT calls of `cells` (sheet index, row, col) in `model` given the
    workbook's defined names as written (names.defined_names) and its tables (tables.Table)."""
    sheets = [p["name"] for p in model.get_worksheets_properties()]
    structured = table_references(tables)
    seen = {sheet: {**structured, **seen_from(names, sheets, sheet)} for sheet in {c[0] for c in cells}}
    return rewrite_cells(model, cells, lambda formula, sheet, row, col: rewrite_formula(formula.lstrip("="), seen[sheet]))
