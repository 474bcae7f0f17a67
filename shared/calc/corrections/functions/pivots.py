"""GETPIVOTDATA answered from the workbook's pivot tables, as saved.

Microsoft's "GETPIVOTDATA function" page (support.microsoft.com): the function "returns visible
data from a PivotTable"; data_field names a Values field, in quotes; pivot_table is "a reference
to any cell, range of cells, or named range of cells in a PivotTable"; field/item pairs "in any
order", with no pair the grand total; "If the field and item arguments describe a single cell,
then the value of that cell is returned regardless of whether it is a string, number, error, or
blank cell"; items that are dates are serial numbers or DATE(...); arguments may be references
(`=GETPIVOTDATA("Sales",$A$3,"Month",$A11)`); #REF! when pivot_table is not in a PivotTable,
when a field or item is not valid, or when the arguments do not describe a visible field.

Excel refreshes a pivot table only on demand, never while calculating, so in a job the value
GETPIVOTDATA reads is the pivot table's cell as the workbook saved it. Neither engine reads pivot
tables (IronCalc 0.9.1 answers #NAME?), so at load each call is replaced by what it reads: the
rendered cell (`'Pivot'!$B$4`), or #REF!. The cell is found from the pivot table part's layout
(xl/pivotTables: location, rowFields/colFields, rowItems/colItems, dataFields) and the cache
definition's items (xl/pivotCache: sharedItems); names and text items match whatever their case.
An item given by a cell reference becomes `IF(ref="East",cell,IF(...,#REF!))` over the rendered
cells of that shape, for fields whose items are all text (IronCalc's `=` ignores case, as
Excel's does, and a number never equals a text), so dependencies stay IronCalc's.

Left alone, and flagged at upload (`unresolved`, used by unfixable.py), whatever the page or the
saved layout does not settle: a data_field or field name that is not a text literal; a name or
a computed pivot_table; an item that is an expression or an array ({"Mar","Apr"}); an item of
another type than the field's items (text for numbers or dates: Excel may match the caption);
fields that are not the outer fields of an axis (a nested field without its parent); a subtotal
or grand total the table does not show (subtotals off, custom subtotals); a rendered cell that
is blank; a report filter named in the pairs unless the filter shows exactly that item; grouped
fields, calculated items, OLAP pivot tables; a data_field naming two Values fields.
"""

from __future__ import annotations

import datetime
import logging
import re
import zipfile
from dataclasses import dataclass, field
from xml.etree import ElementTree

from shared.calc.corrections.formula_tokens import TEXT_LITERAL
from shared.calc.corrections.functions.subtotal import call_arguments
from shared.calc.corrections.lookups import parse_range
from shared.calc.corrections.model import Rewrite
from shared.calc.refs import MAX_COLS, MAX_ROWS, cell_name, column_number, parse_cell
from shared.calc.xlsx.package import _part_path, children, local_name, workbook_parts

log = logging.getLogger(__name__)
MENTION = re.compile(rb"GETPIVOTDATA\s*\(")
KEYWORDS = (b"GETPIVOTDATA",)
CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?GETPIVOTDATA\s*\(", re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[Ee][+-]?\d+)?")
_DATE = re.compile(r"(?:_xlfn\.)?DATE\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)", re.IGNORECASE)
_CELL_REF = re.compile(r"(?:(?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?\$?[A-Za-z]{1,3}\$?\d{1,7}")
_LOOKS_TYPED = re.compile(r"\s*(?:[+-]?[\d.]+(?:[Ee][+-]?\d+)?%?|TRUE|FALSE|[\d/.\-: ]+)\s*", re.IGNORECASE)
_C = re.compile(rb'<c\b[^>]*?\br="([A-Z]+)(\d+)"[^>]*?(?:/>|>(.*?)</c>)', re.DOTALL)
_DATE1904 = re.compile(rb"<(?:\w+:)?workbookPr\b[^>]*\bdate1904=\"(?:1|true)\"")
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
MAX_CANDIDATES = 64  # rendered cells an IF over a referenced item may choose among
_SUBTOTAL_TYPES = {"default"}  # the field's automatic subtotal (the data field's function)


class Unresolved(Exception):
    """A GETPIVOTDATA call this module cannot answer as Excel would."""


@dataclass
class Field:
    name: str
    items: list[tuple[str, object]]  # the cache's shared items: ("s", text), ("n", 1.5), ("m", None)
    positions: list[int | None]  # the pivot field's items: shared item index (None: a total item)
    hidden: set[int] = field(default_factory=set)  # positions hidden in the pivot field
    subtotal_top: bool = True
    subtotals: bool = True  # defaultSubtotal
    problem: str | None = None  # grouped, captioned items, ...


@dataclass
class Pivot:
    sheet: str
    top: int
    left: int
    bottom: int
    right: int
    page_rows: int = 0
    fields: list[Field] = field(default_factory=list)
    data_fields: list[tuple[str, int]] = field(default_factory=list)  # (name, cache field)
    rows: list[int] = field(default_factory=list)  # the row fields, the Values field left out
    cols: list[int] = field(default_factory=list)
    pages: dict[int, int | None] = field(default_factory=dict)  # field -> the item it shows
    grand: tuple[bool, bool] = (True, True)  # rowGrandTotals, colGrandTotals
    # (data field, row key, col key) -> [(row, col, row kind, col kind)]; a key is a tuple of
    # (field, item position) from the outer field in; kinds: leaf, total, header, other
    cells: dict[tuple, list[tuple[int, int, str, str]]] = field(default_factory=dict)
    filled: set[tuple[int, int]] = field(default_factory=set)  # rendered cells holding a value
    problem: str | None = None  # why no call on this table is answered


@dataclass
class Pivots:
    tables: list[Pivot]
    date1904: bool = False


# --- reading the package ------------------------------------------------------------------


def _child(element, name: str):
    found = children(element, name)
    return found[0] if found else None


def _flag(element, name: str, default: bool) -> bool:
    value = element.get(name)
    return default if value is None else value in ("1", "true")


def _rels(package: zipfile.ZipFile, part: str) -> dict[str, tuple[str, str]]:
    """{Id: (type, target path)} of a part's relationships."""
    folder, _, name = part.rpartition("/")
    path = f"{folder}/_rels/{name}.rels"
    if path not in package.namelist():
        return {}
    root = ElementTree.fromstring(package.read(path))
    return {
        r.get("Id"): (r.get("Type", ""), _part_path(part, r.get("Target", ""))) for r in root
    }


def _serial(text: str, date1904: bool) -> float:
    moment = datetime.datetime.fromisoformat(text.rstrip("Z"))
    base = datetime.datetime(1904, 1, 1) if date1904 else datetime.datetime(1899, 12, 30)
    return (moment - base).total_seconds() / 86400


def _shared_item(element, date1904: bool) -> tuple[str, object]:
    kind, value = local_name(element.tag), element.get("v")
    if kind == "s":
        return ("s", value or "")
    if kind == "n":
        return ("n", float(value))
    if kind == "d":
        return ("n", _serial(value, date1904))
    if kind == "b":
        return ("b", value in ("1", "true"))
    return (kind, value)  # m (blank), e (error)


def _cache_fields(root, date1904: bool) -> list[tuple[str, list[tuple[str, object]], str | None]]:
    """[(name, shared items, problem)] of a pivot cache definition."""
    fields = []
    for cache_field in children(_child(root, "cacheFields"), "cacheField"):
        shared = _child(cache_field, "sharedItems")
        items = [_shared_item(e, date1904) for e in shared] if shared is not None else []
        problem = None
        if _child(cache_field, "fieldGroup") is not None:
            problem = "a grouped field"
        fields.append((cache_field.get("name", ""), items, problem))
    return fields


def _axis(items, axis_fields: list[int], kinds_of_total) -> list[tuple | None]:
    """Each rendered row (column) of an axis: (data field or None, key, kind), None when blank."""
    previous: list[int] = []
    out: list[tuple | None] = []
    for item in items:
        kind = item.get("t", "data")
        repeat = int(item.get("r", "0"))
        values = previous[:repeat] + [int(x.get("v", "0")) for x in children(item, "x")]
        previous = values
        data = int(item.get("i", "0"))  # the data field of a total (or of a row's -2 item)
        if kind == "blank":
            out.append(None)
            continue
        if kind == "grand":
            out.append((data if -2 in axis_fields else None, (), "total"))
            continue
        key = []
        for position, value in enumerate(values[: len(axis_fields)]):
            if axis_fields[position] == -2:
                data = value
            else:
                key.append((axis_fields[position], value))
        if kind == "data":
            kind = "leaf" if len(values) >= len(axis_fields) else "header"
        else:
            kind = "total" if kind in kinds_of_total else "other"
        out.append((data if -2 in axis_fields else None, tuple(key), kind))
    return out


def _read_pivot(package, sheet: str, part: str, date1904: bool) -> Pivot:
    root = ElementTree.fromstring(package.read(part))
    location = _child(root, "location")
    box = _box(location.get("ref", ""))
    if box is None:
        raise ValueError("no location")
    top, left, bottom, right = box
    pivot = Pivot(sheet, top, left, bottom, right, int(location.get("rowPageCount", "0") or 0))
    first_row = top + int(location.get("firstDataRow", "0"))
    first_col = left + int(location.get("firstDataCol", "0"))
    cache_part = next(
        (target for kind, target in _rels(package, part).values() if kind.endswith("/pivotCacheDefinition")),
        None,
    )
    cache = ElementTree.fromstring(package.read(cache_part))
    if _child(cache, "cacheHierarchies") is not None or _child(root, "pivotHierarchies") is not None:
        pivot.problem = "an OLAP pivot table"
    if _child(root, "calculatedItems") is not None:
        pivot.problem = "a pivot table with calculated items"
    cache_fields = _cache_fields(cache, date1904)
    for index, pivot_field in enumerate(children(_child(root, "pivotFields"), "pivotField")):
        name, shared, problem = cache_fields[index]
        positions, hidden = [], set()
        for position, item in enumerate(children(_child(pivot_field, "items"), "item")
                                        if _child(pivot_field, "items") is not None else []):
            positions.append(int(item.get("x", "0")) if item.get("t", "data") == "data" else None)
            if _flag(item, "h", False):
                hidden.add(position)
            if item.get("n") is not None or _flag(item, "f", False):
                problem = problem or "items with their own captions or formulas"
        if any(_flag(pivot_field, f + "Subtotal", False) for f in (
            "sum", "countA", "avg", "max", "min", "product", "count", "stdDev", "stdDevP", "var", "varP",
        )):
            problem = problem or "custom subtotals"
        pivot.fields.append(Field(
            pivot_field.get("name") or name, shared, positions, hidden,
            _flag(pivot_field, "subtotalTop", True), _flag(pivot_field, "defaultSubtotal", True), problem,
        ))
        if pivot_field.get("name") and pivot_field.get("name") != name:
            pivot.fields[-1].problem = problem or "a field with its own caption"
    for data_field in children(_child(root, "dataFields"), "dataField") if _child(root, "dataFields") is not None else []:
        fld = int(data_field.get("fld", "0"))
        pivot.data_fields.append((data_field.get("name") or cache_fields[fld][0], fld))
    row_fields = [int(f.get("x")) for f in children(_child(root, "rowFields"), "field")] \
        if _child(root, "rowFields") is not None else []
    col_fields = [int(f.get("x")) for f in children(_child(root, "colFields"), "field")] \
        if _child(root, "colFields") is not None else []
    pivot.grand = (_flag(root, "rowGrandTotals", True), _flag(root, "colGrandTotals", True))
    pivot.rows = [f for f in row_fields if f != -2]
    pivot.cols = [f for f in col_fields if f != -2]
    for page in children(_child(root, "pageFields"), "pageField") if _child(root, "pageFields") is not None else []:
        item = page.get("item")
        pivot.pages[int(page.get("fld"))] = int(item) if item is not None else None
    row_items = _child(root, "rowItems")
    col_items = _child(root, "colItems")
    rows = _axis(row_items if row_items is not None else [ElementTree.Element("i")], row_fields, _SUBTOTAL_TYPES)
    cols = _axis(col_items if col_items is not None else [ElementTree.Element("i")], col_fields, _SUBTOTAL_TYPES)
    for r, row in enumerate(rows):
        for c, col in enumerate(cols):
            if row is None or col is None:
                continue
            data = row[0] if row[0] is not None else (col[0] if col[0] is not None else 0)
            key = (data, row[1], col[1])
            pivot.cells.setdefault(key, []).append((first_row + r, first_col + c, row[2], col[2]))
    return pivot


def _box(ref: str) -> tuple[int, int, int, int] | None:
    first, _, last = ref.partition(":")
    a, b = parse_cell(first), parse_cell(last or first)
    if a is None or b is None:
        return None
    return a[0], a[1], b[0], b[1]


def read_pivots(package: zipfile.ZipFile) -> Pivots:
    """The pivot tables of an open package. A table that cannot be read is kept with a problem
    (its calls are flagged, never answered #REF!)."""
    if not any(n.startswith("xl/pivotTables/") for n in package.namelist()):
        return Pivots([])
    workbook_xml = package.read("xl/workbook.xml")
    date1904 = bool(_DATE1904.search(workbook_xml))
    _, sheets, _ = workbook_parts(package)
    tables = []
    for sheet, path in sheets:
        parts = [t for kind, t in _rels(package, path).values() if kind.endswith("/pivotTable")]
        found = []
        for part in parts:
            try:
                found.append(_read_pivot(package, sheet, part, date1904))
            except Exception:  # noqa: BLE001 - a layout we do not read: its calls are flagged
                found.append(Pivot(sheet, 1, 1, MAX_ROWS, MAX_COLS, problem="a pivot table part we cannot read"))
        if found:
            _fill(package.read(path), found)
            tables.extend(found)
    return Pivots(tables, date1904)


def _fill(sheet_xml: bytes, tables: list[Pivot]) -> None:
    """Record which rendered cells hold a saved value."""
    for match in _C.finditer(sheet_xml):
        content = match.group(3)
        if not content or (b"<v" not in content and b"<is" not in content):
            continue
        row, col = int(match.group(2)), column_number(match.group(1).decode())
        for table in tables:
            if table.top <= row <= table.bottom and table.left <= col <= table.right:
                table.filled.add((row, col))


def pivots_of(data: bytes) -> Pivots:
    from shared.calc.xlsx.package import open_package

    return read_pivots(open_package(data))


# --- answering a call ---------------------------------------------------------------------


def _text(argument: str) -> str | None:
    """The text of a string literal argument, or None."""
    argument = argument.strip()
    if len(argument) >= 2 and argument[0] == argument[-1] == '"' and TEXT_LITERAL.fullmatch(argument):
        return argument[1:-1].replace('""', '"')
    return None


def _constant(argument: str, date1904: bool) -> tuple[str, object] | None:
    """An item typed in: ("s", text), ("n", number), ("b", bool); None when it is not one."""
    text = _text(argument)
    if text is not None:
        return ("s", text)
    argument = argument.strip()
    if _NUMBER.fullmatch(argument):
        return ("n", float(argument))
    if argument.upper() in ("TRUE", "FALSE"):
        return ("b", argument.upper() == "TRUE")
    date = _DATE.fullmatch(argument)
    if date is not None:
        year, month, day = map(int, date.groups())
        if 1900 <= year <= 9999 and 1 <= month <= 12 and 1 <= day <= 31:
            try:
                moment = datetime.datetime(year, month, day)
            except ValueError:
                return None
            return ("n", _serial(moment.isoformat(), date1904))
    return None


def _reference(text: str, sheet: str) -> tuple[str, int, int, int, int] | None:
    """(sheet, top, left, bottom, right) of a reference argument, or None."""
    text = text.strip()
    box = parse_range(text)
    if box is not None:
        return (box.sheet or sheet, box.top, box.left, box.bottom, box.right)
    if not _CELL_REF.fullmatch(text):
        return None
    prefix, _, address = text.rpartition("!")
    cell = parse_cell(address)
    if cell is None:
        return None
    if prefix.startswith("'"):
        prefix = prefix[1:-1].replace("''", "'")
    return (prefix or sheet, cell[0], cell[1], cell[0], cell[1])


def _table(pivots: Pivots | None, ref: tuple[str, int, int, int, int]) -> Pivot | None:
    """The pivot table a pivot_table reference lies in; None when it is in none."""
    sheet, top, left, bottom, right = ref
    found = []
    near = False
    for table in pivots.tables if pivots else []:
        if table.sheet.lower() != sheet.lower():
            continue
        if top <= table.bottom and bottom >= table.top and left <= table.right and right >= table.left:
            found.append(table)
        elif table.page_rows and left <= table.right and right >= table.left and \
                table.top - table.page_rows - 2 <= bottom and top < table.top:
            near = True  # the report filters above the table, which we do not place
    if len(found) > 1:
        raise Unresolved("pivot_table covers two pivot tables")
    if found:
        return found[0]
    if near:
        raise Unresolved("pivot_table next to a pivot table's report filters")
    return None


def _field(table: Pivot, name: str) -> int | None:
    found = [i for i, f in enumerate(table.fields) if f.name.lower() == name.lower()]
    if len(found) > 1:
        raise Unresolved(f"two fields named {name!r}")
    return found[0] if found else None


def _data_field(table: Pivot, name: str) -> int | None:
    found = [i for i, (caption, _) in enumerate(table.data_fields) if caption.lower() == name.lower()]
    if not found:  # the source field's name ("Sales" for "Sum of Sales"), as the page's example
        found = [i for i, (_, fld) in enumerate(table.data_fields)
                 if table.fields[fld].name.lower() == name.lower()]
    if len(found) > 1:
        raise Unresolved(f"data_field {name!r} names two Values fields")
    return found[0] if found else None


def _item(field_: Field, given: tuple[str, object]) -> int | None:
    """The pivot item position of a typed item; None when the field has no such item (#REF!)."""
    if field_.problem:
        raise Unresolved(f"field {field_.name!r} is {field_.problem}")
    kind, value = given
    if kind == "s":
        matches = [i for i, (k, v) in enumerate(field_.items) if k == "s" and v.lower() == value.lower()]
    else:
        matches = [i for i, (k, v) in enumerate(field_.items) if k == kind and v == value]
    if len(matches) > 1:
        raise Unresolved(f"item {value!r} of field {field_.name!r} matches two items")
    if not matches:
        if any(k != kind for k, _ in field_.items):
            raise Unresolved(f"item {value!r} given for field {field_.name!r}, whose items are of another type")
        return None
    positions = [p for p, x in enumerate(field_.positions) if x == matches[0]]
    if len(positions) != 1:
        raise Unresolved(f"item {value!r} of field {field_.name!r} not among the pivot field's items")
    return positions[0]


def _cell(table: Pivot, key: tuple) -> tuple[int, int] | None:
    """The rendered cell of (data, row key, col key); None when the table does not show it and
    that means #REF!."""
    _, row_key, col_key = key
    entries = table.cells.get(key, [])
    totals = [e for e in entries if e[2] in ("leaf", "total") and e[3] in ("leaf", "total")]
    if not totals:
        if any("other" in e[2:] for e in entries):
            raise Unresolved("a custom subtotal")
        for entry in entries:  # a header row or column showing its item's subtotal (outline form)
            ok = True
            for kind, axis_key in ((entry[2], row_key), (entry[3], col_key)):
                if kind == "header":
                    inner = table.fields[axis_key[-1][0]] if axis_key else None
                    ok &= inner is not None and inner.subtotals and inner.subtotal_top
            if ok:
                totals.append(entry)
    cells = {(e[0], e[1]) for e in totals}
    if len(cells) > 1:
        raise Unresolved("the pairs describe several cells")
    if not cells:
        if _shows_every_total(table, len(row_key), len(col_key)):
            return None  # that combination is not shown: "do not describe a visible field"
        raise Unresolved("a subtotal or grand total the pivot table does not show")
    cell = cells.pop()
    if cell not in table.filled:
        raise Unresolved("the rendered cell is blank")
    return cell


def _shows_every_total(table: Pivot, row_depth: int, col_depth: int) -> bool:
    """Whether the table renders a cell for every visible combination of items this deep: the
    leaves, the grand totals when shown, the subtotals of a field whose subtotals are on (at the
    top in outline form, below otherwise). Then a combination without a cell has no data."""
    for axis, depth, grand in ((table.rows, row_depth, table.grand[0]), (table.cols, col_depth, table.grand[1])):
        if depth == len(axis):
            continue
        if depth == 0 and not grand or depth > 0 and not table.fields[axis[depth - 1]].subtotals:
            return False
    return True


def _address(table: Pivot, cell: tuple[int, int]) -> str:
    row, col = cell
    letters = cell_name(row, col).rstrip("0123456789")
    return "'" + table.sheet.replace("'", "''") + f"'!${letters}${row}"


def _or_unresolved(answer_: str | None, reason: str) -> str:
    if answer_ is None:
        raise Unresolved(reason + ", and an item is given by reference")
    return answer_


def answer(arguments: list[str], sheet: str, pivots: Pivots | None) -> str:
    """The formula text that stands for GETPIVOTDATA(arguments) written on `sheet`: a reference
    to the rendered cell, #REF!, or an IF over referenced items. Unresolved otherwise."""
    if len(arguments) < 2 or len(arguments) % 2:
        raise Unresolved("an odd number of field and item arguments")
    data_name = _text(arguments[0])
    if data_name is None:
        raise Unresolved("data_field is not a text in quotes")
    names = [_text(a) for a in arguments[2::2]]
    if None in names:
        raise Unresolved("a field name is not a text in quotes")
    date1904 = pivots.date1904 if pivots else False
    items = arguments[3::2]
    typed = [_constant(a, date1904) for a in items]
    for argument, constant in zip(items, typed):
        if constant is None and not _CELL_REF.fullmatch(argument.strip()):
            raise Unresolved(f"item {argument.strip()} is neither a constant nor a cell reference")
    ref = _reference(arguments[1], sheet)
    if ref is None:
        raise Unresolved("pivot_table is not a cell or range reference")
    # #REF! without reading a referenced item: only when every item is typed in (a referenced
    # error might come first)
    no_cell = "#REF!" if None not in typed else None
    table = _table(pivots, ref)
    if table is None:
        return _or_unresolved(no_cell, "pivot_table is not in a pivot table")
    if table.problem:
        raise Unresolved(table.problem)
    data = _data_field(table, data_name)
    fields = [_field(table, n) for n in names]
    if len(set(fields)) < len(fields):
        raise Unresolved("a field named twice")
    if data is None or None in fields:  # "not a valid field in the specified PivotTable"
        return _or_unresolved(no_cell, "a field or data_field the pivot table does not have")
    chosen: dict[int, int | str] = {}  # field -> pivot item position, or the reference text
    for index, argument, constant in zip(fields, items, typed):
        field_ = table.fields[index]
        if index in table.pages:
            shown = table.pages[index]
            if constant is None or shown is None:
                raise Unresolved(f"report filter {field_.name!r} named with an item it may not show")
            position = _item(field_, constant)
            if position != shown:  # "a report filter in which the filtered data is not displayed"
                return _or_unresolved(no_cell, f"an item report filter {field_.name!r} does not show")
            continue
        if index not in table.rows and index not in table.cols:
            return _or_unresolved(no_cell, f"field {field_.name!r} is not shown")
        if constant is None:
            chosen[index] = argument.strip()
            continue
        position = _item(field_, constant)
        if position is None or position in field_.hidden:
            return _or_unresolved(no_cell, f"an item field {field_.name!r} does not show")
        chosen[index] = position
    shape = []
    for axis in (table.rows, table.cols):
        depth = len([f for f in axis if f in chosen])
        if set(axis[:depth]) != {f for f in axis if f in chosen}:
            raise Unresolved("a field named without the fields outside it")
        shape.append(axis[:depth])
    referenced = [f for f in chosen if isinstance(chosen[f], str)]
    if not referenced:
        key = (data, tuple((f, chosen[f]) for f in shape[0]), tuple((f, chosen[f]) for f in shape[1]))
        cell = _cell(table, key)
        return "#REF!" if cell is None else _address(table, cell)
    return _choice(table, data, shape, chosen, referenced)


def _choice(table: Pivot, data: int, shape: list[list[int]], chosen: dict, referenced: list[int]) -> str:
    """IF(ref="item",cell,...,#REF!) over the rendered cells of the shape the pairs describe."""
    for index in referenced:
        field_ = table.fields[index]
        if field_.problem:
            raise Unresolved(f"field {field_.name!r} is {field_.problem}")
        if any(k != "s" or _LOOKS_TYPED.fullmatch(v) or not v for k, v in field_.items):
            raise Unresolved(f"an item of field {field_.name!r} given by reference, and its items are not all text")
    if not _shows_every_total(table, len(shape[0]), len(shape[1])):
        raise Unresolved("an item given by reference for a total the pivot table does not show")
    branches = []
    for key in table.cells:
        if key[0] != data or [f for f, _ in key[1]] != shape[0] or [f for f, _ in key[2]] != shape[1]:
            continue
        pairs = dict(key[1] + key[2])
        if any(not isinstance(chosen[f], str) and pairs[f] != chosen[f] for f in chosen):
            continue
        cell = _cell(table, key)
        if cell is None:
            continue
        conditions = []
        for index in referenced:
            field_ = table.fields[index]
            text = field_.items[field_.positions[pairs[index]]][1]
            conditions.append(f'{chosen[index]}="' + text.replace('"', '""') + '"')
        branches.append((conditions, _address(table, cell)))
    if len(branches) > MAX_CANDIDATES:
        raise Unresolved(f"an item given by reference among more than {MAX_CANDIDATES} cells")
    formula = "#REF!"
    for conditions, address in reversed(branches):
        test = conditions[0] if len(conditions) == 1 else "AND(" + ",".join(conditions) + ")"
        formula = f"IF({test},{address},{formula})"
    return formula


def _calls(formula: str) -> list[tuple[int, int, list[str]]]:
    """(start, end, arguments as written) of each GETPIVOTDATA call outside text literals, the
    outermost ones; Unresolved when a call does not close."""
    blank = TEXT_LITERAL.sub(lambda m: '"' + "_" * (len(m.group()) - 2) + '"', formula)
    calls, after = [], -1
    for match in CALL.finditer(blank):
        if match.start() < after:
            raise Unresolved("GETPIVOTDATA within a GETPIVOTDATA argument")
        pieces = call_arguments(blank, match.end())
        if pieces is None:
            raise Unresolved("a call that does not close")
        arguments, position = [], match.end()
        for piece in pieces:
            arguments.append(formula[position:position + len(piece)])
            position += len(piece) + 1
        after = position
        calls.append((match.start(), position, arguments))
    return calls


def rewritten(formula: str, sheet: str, pivots: Pivots | None) -> str | None:
    """The formula with every GETPIVOTDATA call answered, None when it has none; Unresolved
    when one of them cannot be."""
    calls = _calls(formula)
    if not calls:
        return None
    for start, end, arguments in reversed(calls):
        formula = formula[:start] + answer(arguments, sheet, pivots) + formula[end:]
    return formula


def _as_written(formula: str) -> str:
    """IronCalc's text of a formula with GETPIVOTDATA in capitals (it lower-cases names it does
    not know), for the export."""
    pieces, last = [], 0
    for text in TEXT_LITERAL.finditer(formula):
        pieces += [CALL.sub("GETPIVOTDATA(", formula[last:text.start()]), text.group(0)]
        last = text.end()
    return "".join(pieces) + CALL.sub("GETPIVOTDATA(", formula[last:])


def unresolved(formula: str, sheet: str, pivots: Pivots | None) -> str | None:
    """Why a formula's GETPIVOTDATA calls cannot be answered (None when they all can)."""
    try:
        rewritten(formula, sheet, pivots)
    except Unresolved as exc:
        return str(exc)
    except Exception:  # noqa: BLE001 - a layout or formula we did not foresee: left alone
        return "a pivot table layout or call we do not read"
    return None


def correct_pivot_data(model, data: bytes) -> list[Rewrite]:
    """Answer the GETPIVOTDATA calls the saved pivot tables settle; a workbook without
    GETPIVOTDATA costs one scan of its sheet XML."""
    from shared.calc.corrections.package import survey

    candidates, arrays = survey(data, MENTION, KEYWORDS)
    if not candidates:
        return []
    pivots = pivots_of(data)
    sheets = [p["name"] for p in model.get_worksheets_properties()]
    rewrites = []
    for sheet, row, col in sorted(candidates - arrays):
        formula = model.get_cell_formula(sheet, row, col)
        if not formula or formula.startswith("{"):
            continue
        try:
            fixed = rewritten(formula, sheets[sheet], pivots)
        except Unresolved:
            continue  # flagged at upload (unfixable.py)
        except Exception:  # unforeseen: left alone, flagged at upload too
            log.warning("GETPIVOTDATA left alone", exc_info=True)
            continue
        if fixed is None:
            continue
        rewrites.append(Rewrite(sheet, row, col, _as_written(formula.lstrip("="))))
        model.set_user_input(sheet, row, col, fixed)
    return rewrites
