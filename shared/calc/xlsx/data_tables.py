"""Excel what-if data tables (``{=TABLE(r1,r2)}``): read from the package, held as constants
for the engines, and written back into a filled workbook.

A data table is a range whose first cell holds ``<f t="dataTable" ref="B5:D10" r1="B1" .../>``
(ECMA-376 Part 1, 18.3.1.40 ``f``, ST_CellFormulaType ``dataTable``): Excel fills the range by
recalculating the sheet once per row/column value with that value substituted into the input
cell(s) ``r1``/``r2``, and saves the results as the cells' values. Neither IronCalc nor
`formulas` reads such a package, so the service rewrites it before any engine sees it: every
cell of the table holds the value Excel saved as a formula of that one literal (``=110``), so it
stays an output cell (a job cannot write into it) whose value is Excel's.

IronCalc then calculates the tables for every job (shared.calc.corrections.data_tables, which
overwrites those literals with the job's results) and its filled workbook gets each table's
definition back (`restore_definitions`). With `formulas`, or beyond the upload's substitution
limit, the cells keep Excel's saved values and do not follow a job's inputs; the version's
fidelity report (``data_tables``) and the upload warnings say which, naming every named output
inside a table or calculated from it.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass

from xml.sax.saxutils import escape, unescape

from shared.calc.refs import cell_name, column_number, parse_cell
from shared.calc.xlsx.package import open_package, shared_strings, workbook_parts

_MARK = b'"dataTable"'
_CELL_RE = re.compile(rb"<c\b([^>]*?)(?:/>|>(.*?)</c>)", re.DOTALL)
_DATA_TABLE_F = re.compile(rb"<f\b[^>]*\bt=\"dataTable\"[^>]*?(?:/>|>.*?</f>)", re.DOTALL)
_R_ATTR = re.compile(rb'\br="([A-Z]+)(\d+)"')
_T_ATTR = re.compile(rb'\s+t="([^"]*)"')
_V_ELEMENT = re.compile(rb"<v>(.*?)</v>", re.DOTALL)
_T_ELEMENT = re.compile(rb"<t\b[^>]*>(.*?)</t>", re.DOTALL)
_ATTR = re.compile(rb'\b(ref|r1|r2|dt2D|dtr|del1|del2)="([^"]*)"')

NOTE = "is an Excel what-if data table: kept as Excel's saved values, not recalculated from inputs"
CALCULATED = "is an Excel what-if data table: calculated for every job, as Excel does, from its input cell"


@dataclass(frozen=True)
class DataTable:
    """One data table: its sheet, its range and its input cell(s)."""

    sheet: str
    ref: str
    inputs: tuple[str, ...]
    two_d: bool = False  # dt2D="1": r1 takes the top row's values, r2 the left column's
    row_input: bool = False  # dtr="1" (one variable): the values are in the row above the body

    @property
    def where(self) -> str:
        quoted = f"'{self.sheet}'" if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", self.sheet) else self.sheet
        return f"{quoted}!{self.ref}"

    def to_dict(self, calculated: bool = False) -> dict:
        if calculated:
            cells = " and ".join(self.inputs)
            note = f"{self.where} {CALCULATED}{'s' if len(self.inputs) > 1 else ''} {cells}"
        else:
            note = f"{self.where} {NOTE}"
        return {"sheet": self.sheet, "ref": self.ref, "inputs": list(self.inputs), "note": note,
                **({"calculated": True} if calculated else {})}

    def to_header(self) -> dict:
        return {"sheet": self.sheet, "ref": self.ref, "inputs": list(self.inputs),
                "dt2D": self.two_d, "dtr": self.row_input}

    @classmethod
    def from_header(cls, fields: dict) -> "DataTable":
        return cls(fields["sheet"], fields["ref"], tuple(fields["inputs"]),
                   bool(fields.get("dt2D")), bool(fields.get("dtr")))

    @property
    def definition(self) -> bytes:
        """The ``<f>`` element Excel writes on the table's first cell."""
        attrs = f'ref="{self.ref}" dt2D="{int(self.two_d)}" dtr="{int(self.row_input)}"'
        for key, cell in zip(("r1", "r2"), self.inputs):
            attrs += f' {key}="{cell}"'
        return f'<f t="dataTable" {attrs}/>'.encode()

    @property
    def substitutions(self) -> int:
        """How many recalculations the table costs: one per value substituted (per cell for a
        two-variable table, per row or column for a one-variable table)."""
        found = box(self)
        if found is None:
            return 0
        _, top, left, bottom, right = found
        rows, cols = bottom - top + 1, right - left + 1
        if self.two_d:
            return rows * cols
        return cols if self.row_input else rows


def _sheet_parts(package: zipfile.ZipFile) -> list[tuple[str, str]]:
    return workbook_parts(package)[1]


def _tables_in(sheet: str, xml: bytes) -> list[DataTable]:
    tables = []
    for match in _DATA_TABLE_F.finditer(xml):
        attrs = dict((k.decode(), v.decode()) for k, v in _ATTR.findall(match.group(0)))
        if "ref" not in attrs:
            continue
        two_d = attrs.get("dt2D") in ("1", "true")
        inputs = tuple(attrs[k].replace("$", "") for k in ("r1", "r2") if attrs.get(k) and (k == "r1" or two_d))
        if any(attrs.get(k) in ("1", "true") for k in ("del1", "del2")):
            inputs = ()  # an input cell was deleted (Excel shows #REF!): nothing to substitute into
        tables.append(DataTable(sheet, attrs["ref"], inputs, two_d, attrs.get("dtr") in ("1", "true")))
    return tables


def find_data_tables(data: bytes) -> list[DataTable]:
    """Every data table of the package, in sheet order; [] for a package without any."""
    package = open_package(data)
    found: list[DataTable] = []
    for name, path in _sheet_parts(package):
        xml = package.read(path)
        if _MARK in xml:
            found.extend(_tables_in(name, xml))
    return found


def as_constants(data: bytes) -> bytes:
    """The package with each data table cell holding Excel's saved value as a one-literal
    formula (``<f>110</f><v>110</v>``, ``<f>"low"</f>``, ``<f>#N/A</f>``) in place of the table,
    so every engine reads it as an output cell whose value is the one Excel saved, and a job
    can neither recalculate it nor write into it; the same bytes when there is no data table."""
    package = open_package(data)
    _, parts, strings_path = workbook_parts(package)
    strings: list[str] | None = None
    rewritten: dict[str, bytes] = {}
    for name, path in parts:
        xml = package.read(path)
        if _MARK not in xml:
            continue
        boxes = [b for b in (box(t) for t in _tables_in(name, xml)) if b is not None]
        if strings is None:
            strings = shared_strings(package, strings_path)

        def one(match: re.Match, boxes=boxes) -> bytes:
            attrs, body = match.group(1), match.group(2) or b""
            r = _R_ATTR.search(attrs)
            if r is None:
                return match.group(0)
            row, col = int(r.group(2)), column_number(r.group(1).decode())
            if not any(top <= row <= bottom and left <= col <= right for _, top, left, bottom, right in boxes):
                return match.group(0)
            return _literal_cell(attrs, body, strings)

        rewritten[path] = _CELL_RE.sub(one, xml)
    if not rewritten:
        return data
    return _with_parts(package, rewritten)


def _literal_cell(attrs: bytes, body: bytes, strings: list[str]) -> bytes:
    """A cell holding its saved value as a formula of that one literal. A cell with no saved value
    (a file not saved by Excel) holds the empty text: still a formula, so a named range over the
    table stays an output that no job writes into (a blank cell would make it an input whose
    value the table's result then replaced without a word)."""
    t = _T_ATTR.search(attrs)
    kind = t.group(1) if t else b"n"
    attrs = _T_ATTR.sub(b"", attrs)
    value = _V_ELEMENT.search(body)
    if kind == b"inlineStr":
        text = "".join(unescape(x.decode()) for x in _T_ELEMENT.findall(body))
    elif value is None:
        text = ""
    else:
        raw = value.group(1).decode()
        if kind == b"s":
            text = strings[int(raw)] if raw.isdigit() and int(raw) < len(strings) else ""
        elif kind == b"str":
            text = unescape(raw)
        elif kind == b"b":
            literal = "TRUE" if raw.strip() in ("1", "true") else "FALSE"
            return b'<c%s t="b"><f>%s</f><v>%s</v></c>' % (attrs, literal.encode(), b"1" if literal == "TRUE" else b"0")
        elif kind == b"e":
            return b'<c%s t="e"><f>%s</f><v>%s</v></c>' % (attrs, escape(raw).encode(), escape(raw).encode())
        else:
            return b"<c%s><f>%s</f><v>%s</v></c>" % (attrs, raw.strip().encode(), raw.strip().encode())
    literal = '"' + text.replace('"', '""') + '"'
    return b'<c%s t="str"><f>%s</f><v>%s</v></c>' % (attrs, escape(literal).encode(), escape(text).encode())


def defined_names_as_written(data: bytes) -> dict[str, str]:
    """Every defined name (workbook- and sheet-scoped) as written -> its formula text."""
    from shared.calc.xlsx.package import local_name

    workbook_xml = workbook_parts(open_package(data))[0]
    return {
        element.get("name", ""): element.text or ""
        for element in workbook_xml.iter()
        if local_name(element.tag) == "definedName" and element.get("name")
    }


def box(table: DataTable) -> tuple[str, int, int, int, int] | None:
    """(sheet, top, left, bottom, right) of a table's range."""
    first, _, last = table.ref.replace("$", "").partition(":")
    a, b = parse_cell(first), parse_cell(last or first)
    if a is None or b is None:
        return None
    return (table.sheet, min(a[0], b[0]), min(a[1], b[1]), max(a[0], b[0]), max(a[1], b[1]))


def restore_definitions(xlsx: bytes, tables: list[DataTable]) -> bytes:
    """An exported package (a filled workbook) with each table's definition put back on its
    first cell, as Excel writes it (``<c r="B5"><f t="dataTable" .../><v>110</v></c>``; the
    other cells of the body hold values only), so Excel keeps the table live."""
    if not tables:
        return xlsx
    package = open_package(xlsx)
    paths = {name.lower(): path for name, path in _sheet_parts(package)}
    patched: dict[str, bytes] = {}
    for table in tables:
        path, found = paths.get(table.sheet.lower()), box(table)
        if path is None or found is None:
            continue
        xml = patched.get(path) or package.read(path)
        first = cell_name(found[1], found[2]).encode()
        cell = re.compile(rb'<c\b(?=[^>]*\br="' + first + rb'")([^>]*?)(?:/>|>(.*?)</c>)', re.DOTALL)
        match = cell.search(xml)
        if match is None:
            continue
        body = re.sub(rb"<f\b[^>]*?(?:/>|>.*?</f>)", b"", match.group(2) or b"", flags=re.DOTALL)
        replacement = b"<c" + match.group(1) + b">" + table.definition + body + b"</c>"
        patched[path] = xml[: match.start()] + replacement + xml[match.end():]
    if not patched:
        return xlsx
    return _with_parts(package, patched)


def _with_parts(package: zipfile.ZipFile, replaced: dict[str, bytes]) -> bytes:
    """The package's bytes with these parts' contents replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in package.infolist():
            target.writestr(info, replaced.get(info.filename, package.read(info.filename)))
    return out.getvalue()

