"""Structured references and 3-D references IronCalc 0.9.1 gets wrong, rewritten at model load
to the plain references they stand for.

Excel's rules:

- Structured references (Microsoft support, "Using structured references with Excel tables";
  ECMA-376 Part 1, 18.5 Tables): `Table1` and `Table1[]` are the table's data rows,
  `Table1[Col]` one column of them, `Table1[[Col1]:[Col2]]` the columns between,
  `Table1[#All]` / `[#Data]` / `[#Headers]` / `[#Totals]` the whole table, the data, the header
  row, the totals row (#REF! when the table has none), `[[#Headers],[#Data]]` and
  `[[#Data],[#Totals]]` both, `[[#This Row],[Col]]` (`[@Col]`) the column's cell in the formula's
  row (#VALUE! outside the data rows); a reference without the table's name (`[Col3]`, as a
  totals-row formula has it) is to the table the formula is in. The tables come from the
  package (xl/tables/*.xml: name, ref, headerRowCount, totalsRowCount, tableColumns). IronCalc
  0.9.1 answers #NAME? for `SUM(Table1)`, #ERROR! for an unqualified `[Col]` and so for every
  cell depending on the totals row (measured on pycel's excelcompiler.xlsx).
- 3-D references (Microsoft support, "Create a 3-D reference to the same cell range on
  multiple worksheets"): `SUM(Sheet1:Sheet3!A1)` is the cell A1 on every sheet from Sheet1 to
  Sheet3 in the workbook's order, allowed as an argument of SUM, AVERAGE, AVERAGEA, COUNT,
  COUNTA, MAX, MAXA, MIN, MINA, PRODUCT, STDEV*, VAR* and their kin. IronCalc 0.9.1 answers
  #ERROR! (or #REF! for a quoted `'Sheet1:Sheet3'!A1`). Those functions take any number of
  arguments and treat each the same, so the argument becomes `Sheet1!A1,Sheet2!A1,Sheet3!A1`.
  Elsewhere a 3-D reference is left alone.

A multi-cell structured reference where Excel expects one value (an operand of an operator
outside any function, as for names) gets IronCalc's `@`, Excel's implicit intersection.
"""

from __future__ import annotations

import html
import posixpath
import re
from dataclasses import dataclass
from xml.sax.saxutils import unescape

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.formula_tokens import Context, tokenize
from shared.calc.corrections.lookups import Box
from shared.calc.corrections.model import Rewrite, rewrite_cells
from shared.calc.refs import CellBox, column_number
from shared.calc.xlsx.package import open_package, workbook_parts

THREE_D_FUNCTIONS = frozenset({
    "SUM", "AVERAGE", "AVERAGEA", "COUNT", "COUNTA", "MAX", "MAXA", "MIN", "MINA", "PRODUCT",
    "STDEV", "STDEV.S", "STDEV.P", "STDEVA", "STDEVP", "STDEVPA", "VAR", "VAR.S", "VAR.P", "VARA",
    "VARP", "VARPA",
})
_SHEET_NAME = r"(?:[^'!\[\]:*?/\\,()\s]+)"
_THREE_D = re.compile(
    rf"(?:'(?P<q1>(?:[^'!:]|'')+):(?P<q2>(?:[^'!:]|'')+)'|(?P<p1>{_SHEET_NAME}):(?P<p2>{_SHEET_NAME}))!"
    r"(?P<ref>\$?[A-Za-z]{1,3}\$?\d{1,7}(?::\$?[A-Za-z]{1,3}\$?\d{1,7})?)"
)
_THREE_D_HINT = re.compile(rb"<f\b[^>]*>[^<]*[A-Za-z0-9_']:[^<!]*!")
_ATTR = re.compile(r'\b([A-Za-z]+)="([^"]*)"')
_STRUCTURED = re.compile(r"(?P<table>[A-Za-z_\\][A-Za-z0-9_.\\]*)?(?P<spec>\[.*\])", re.DOTALL)
_ITEM = re.compile(r"\[((?:[^\[\]']|'.)*)\]")
# IronCalc 0.9.1 answers SHEET(Table1) right and SHEET of a plain multi-cell range #VALUE!
# (ironcalc's tables.xlsx): a table reference stays as it is there
_KEEP_IN = frozenset({"SHEET", "SHEETS"})
_ROW_ITEMS = {"#all", "#data", "#headers", "#totals", "#this row"}


@dataclass(frozen=True)
class Table(CellBox):
    """An Excel table: its cells (a CellBox on its sheet), name, sheet index, header and totals
    row counts, and column names."""

    name: str
    sheet_index: int
    headers: int
    totals: int
    columns: tuple[str, ...]

    def holds(self, sheet: int, row: int, col: int) -> bool:
        return sheet == self.sheet_index and self.top <= row <= self.bottom and self.left <= col <= self.right


def tables_in(data: bytes) -> list[Table]:
    """The tables of a package (none: no xl/tables part, nothing more read)."""
    package = open_package(data)
    if not any(n.startswith("xl/tables/") for n in package.namelist()):
        return []
    _, parts, _ = workbook_parts(package)
    found = []
    names = set(package.namelist())
    for index, (sheet, path) in enumerate(parts):
        rels = posixpath.join(posixpath.dirname(path), "_rels", posixpath.basename(path) + ".rels")
        if rels not in names:
            continue
        for rel in re.finditer(rb"<Relationship\b([^>]*)/?>", package.read(rels)):
            attrs = dict(_ATTR.findall(rel.group(1).decode("utf-8", "replace")))
            if not attrs.get("Type", "").endswith("/table"):
                continue
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), attrs.get("Target", "")))
            if attrs.get("Target", "").startswith("/"):
                target = attrs["Target"].lstrip("/")
            if target not in names:
                continue
            table = _table(package.read(target).decode("utf-8", "replace"), sheet, index)
            if table is not None:
                found.append(table)
    return found


def _table(xml: str, sheet: str, index: int) -> Table | None:
    head = re.search(r"<table\b([^>]*)>", xml)
    if head is None:
        return None
    attrs = dict(_ATTR.findall(head.group(1)))
    ref = re.fullmatch(r"([A-Z]{1,3})(\d+):([A-Z]{1,3})(\d+)", attrs.get("ref", ""))
    if ref is None:
        return None
    columns = tuple(
        _column_name(m.group(1)) for m in re.finditer(r'<tableColumn\b[^>]*?\bname="([^"]*)"', xml)
    )
    return Table(
        sheet, int(ref.group(2)), column_number(ref.group(1)), int(ref.group(4)), column_number(ref.group(3)),
        name=unescape(attrs.get("displayName") or attrs.get("name", "")), sheet_index=index,
        headers=int(attrs.get("headerRowCount", "1")), totals=int(attrs.get("totalsRowCount", "0")),
        columns=columns,
    )


def _column_name(attribute: str) -> str:
    """A tableColumn name as the header shows it: XML's character references (`&#10;`) and
    OOXML's `_xHHHH_` escapes (ECMA-376 Part 1, 22.9.2.19 ST_Xstring; a header with a line
    break is written `Unit_x000a_Price`) decoded, `_x005f_` being a literal underscore."""
    text = html.unescape(attribute)
    return _XSTRING.sub(lambda m: chr(int(m.group(1), 16)), text)


_XSTRING = re.compile(r"_x([0-9A-Fa-f]{4})_")
_BROKEN_F = re.compile(rb"<c\b([^>]*)>\s*<f\b([^>]*)>([^<]*\[[^<]*(?:\n|&#10;|&#xA;|\r)[^<]*)</f>", re.IGNORECASE)


def written_with_line_breaks(data: bytes) -> dict[tuple[int, int, int], str]:
    """{(sheet index, row, col): formula as the file writes it} of the cells whose own formula
    text holds a structured reference with a line break (a column whose header has one):
    IronCalc 0.9.1 reads such a reference as #REF! (it keeps the column's name escaped), so the
    rewrite starts from the file's text. Shared formulas' children are not read (left as they
    are)."""
    package = open_package(data)
    _, parts, _ = workbook_parts(package)
    found = {}
    for index, (_, path) in enumerate(parts):
        xml = package.read(path)
        if b"<f" not in xml or b"[" not in xml:
            continue
        for match in _BROKEN_F.finditer(xml):
            where = re.search(rb'\br="([A-Z]+)(\d+)"', match.group(1))
            if where is None or b't="array"' in match.group(2):
                continue
            text = html.unescape(match.group(3).decode("utf-8", "replace")).replace("\r\n", "\n")
            found[(index, int(where.group(2)), column_number(where.group(1).decode()))] = text
    return found


def _cell_text(sheet: str, row: int, col: int) -> str:
    return Box(sheet, row, col, row, col).text().split(":")[0]


def resolve(table: Table, spec: str, row: int) -> str:
    """The plain reference a structured reference's `[...]` part stands for, or an error."""
    inner = spec[1:-1].strip()
    if not inner:
        items = []
    elif inner.startswith("@"):
        items = ["#this row", inner[1:].strip().strip("[]")]
    elif "[" not in inner:
        items = [inner]
    else:
        items = [m.group(1) for m in _ITEM.finditer(inner)]
        if ":" in _ITEM.sub("", inner) and len(items) >= 2:
            items = [i for i in items if i.strip().lower() in _ROW_ITEMS] + [items[-2] + "\0" + items[-1]]
    rows = {i.strip().lower() for i in items if i.strip().lower() in _ROW_ITEMS}
    cols = [re.sub(r"'(.)", r"\1", i.strip()) for i in items if i.strip().lower() not in _ROW_ITEMS]
    data_top, data_bottom = table.top + table.headers, table.bottom - table.totals
    if not rows or rows == {"#data"}:
        top, bottom = data_top, data_bottom
    elif "#all" in rows:
        top, bottom = table.top, table.bottom
    elif rows == {"#headers"}:
        top = bottom = table.top
    elif rows == {"#totals"}:
        top = bottom = table.bottom
    elif rows == {"#headers", "#data"}:
        top, bottom = table.top, data_bottom
    elif rows == {"#data", "#totals"}:
        top, bottom = data_top, table.bottom
    elif rows == {"#this row"}:
        if not data_top <= row <= data_bottom:
            return "#VALUE!"
        top = bottom = row
    else:
        return "#REF!"
    if ("#headers" in rows and not table.headers) or ("#totals" in rows and not table.totals):
        return "#REF!"
    lowered = [c.lower() for c in table.columns]
    if not cols:
        left, right = table.left, table.right
    elif len(cols) == 1:
        ends = cols[0].split("\0")
        try:
            positions = [lowered.index(e.lower()) for e in ends]
        except ValueError:
            return "#REF!"
        left, right = table.left + min(positions), table.left + max(positions)
    else:
        return "#REF!"
    if top == bottom and left == right:
        return _cell_text(table.sheet, top, left)
    return Box(table.sheet, top, left, bottom, right).text()


def rewrite_formula(formula: str, sheet: int, row: int, col: int, tables: list[Table],
                    sheets: list[str], defined: set[str], array: bool = False) -> str | None:
    """The formula with its structured and 3-D references as plain references, or None; in an
    array formula (`array`: Excel 365's dynamic arrays among them) without implicit intersection."""
    tokens = tokenize(formula)
    if tokens is None:
        return None
    by_name = {t.name.lower(): t for t in tables}
    values = [t.value for t in tokens]
    context = Context()
    changed = False
    for index, token in enumerate(tokens):
        if context.step(token) or token.type != Token.OPERAND or token.subtype != Token.RANGE:
            continue
        text = token.value.lstrip("@")
        replaced = None
        if context.function in _KEEP_IN:
            continue
        three_d = _THREE_D.fullmatch(text)
        if three_d is not None:
            replaced = _expand_3d(three_d, sheets, tokens, index, context)
        else:
            structured = _STRUCTURED.fullmatch(text)
            if structured is not None:
                if structured.group("table"):
                    table = by_name.get(structured.group("table").lower())
                else:
                    table = next((t for t in tables if t.holds(sheet, row, col)), None)
                if table is not None:
                    replaced = resolve(table, structured.group("spec"), row)
            elif text.lower() in by_name and text.lower() not in defined:
                replaced = resolve(by_name[text.lower()], "[]", row)
            if replaced is not None and ":" in replaced and not array and context.expects_one_value():
                replaced = "@" + replaced  # Excel's implicit intersection where one value is expected
        if replaced is not None:
            values[index] = replaced
            changed = True
    return "".join(values) if changed else None


def _expand_3d(match: re.Match, sheets: list[str], tokens: list[Token], index: int, context: Context) -> str | None:
    """`Sheet1:Sheet3!A1` as `Sheet1!A1,Sheet2!A1,Sheet3!A1` when it is a whole argument of a
    function that takes it (THREE_D_FUNCTIONS), else None."""
    if context.function not in THREE_D_FUNCTIONS:
        return None
    before = next((t for t in reversed(tokens[:index]) if t.type != Token.WSPACE), None)
    after = next((t for t in tokens[index + 1:] if t.type != Token.WSPACE), None)
    if not (before and (before.type == Token.FUNC or before.type == Token.SEP)) \
            or not (after and (after.type == Token.FUNC or after.type == Token.SEP)):
        return None
    first = (match.group("q1") or match.group("p1")).replace("''", "'")
    last = (match.group("q2") or match.group("p2")).replace("''", "'")
    lowered = [s.lower() for s in sheets]
    if first.lower() not in lowered or last.lower() not in lowered:
        return None
    a, b = sorted((lowered.index(first.lower()), lowered.index(last.lower())))
    ref = match.group("ref")
    return ",".join(_cell_text(s, 1, 1).rsplit("!", 1)[0] + "!" + ref for s in sheets[a:b + 1])


def may_need_3d(data: bytes) -> bool:
    """Whether any formula may hold a 3-D reference (a cheap scan of the sheet XML)."""
    package = open_package(data)
    _, parts, _ = workbook_parts(package)
    return any(_THREE_D_HINT.search(package.read(path)) for _, path in parts)


def correct_references(model, tables: list[Table], cells: list[tuple[int, int, int]],
                       defined: set[str], written: dict[tuple[int, int, int], str] | None = None,
                       arrays: set[tuple[int, int, int]] = frozenset()) -> list[Rewrite]:
    """Rewrite, in `model`, the structured and 3-D references of `cells` (legacy array formulas
    of several cells left out by the caller; `arrays` the array formulas among them);
    `written` the file's text of formulas IronCalc could not read (written_with_line_breaks),
    used in place of IronCalc's. Returns what changed."""
    sheets = [p["name"] for p in model.get_worksheets_properties()]
    written = written or {}

    def rewrite(formula: str, sheet: int, row: int, col: int) -> str | None:
        own = written.get((sheet, row, col))
        return rewrite_formula(own if own is not None else formula, sheet, row, col, tables, sheets, defined,
                               array=(sheet, row, col) in arrays)

    rewrites = rewrite_cells(model, cells, rewrite)
    for done in rewrites:  # the export shows the user's formula, not IronCalc's #REF!
        done.original = written.get((done.sheet, done.row, done.col), done.original)
    return rewrites


def unfixable_references(book) -> list[tuple[object, str]]:
    """[(formula cell, reason)] of an ExcelBook's cells with a 3-D reference the rewrite
    leaves alone (outside the functions that take one)."""
    found = []
    for cell in book.cells:
        if cell.array_area or ":" not in cell.formula or "!" not in cell.formula:
            continue
        tokens = tokenize(cell.formula)
        if tokens is None:
            continue
        context = Context()
        for index, token in enumerate(tokens):
            if context.step(token):
                continue
            if token.type == Token.OPERAND and token.subtype == Token.RANGE:
                match = _THREE_D.fullmatch(token.value.lstrip("@"))
                if match is not None and _expand_3d(match, book.sheets, tokens, index, context) is None:
                    found.append((cell, (
                        f"a 3-D reference ({token.value}) outside SUM, AVERAGE, COUNT and the other "
                        "functions that take one: IronCalc 0.9.1 does not calculate it"
                    )))
                    break
    return found

