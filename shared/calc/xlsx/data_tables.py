"""Excel what-if data tables (``{=TABLE(r1,r2)}``), kept as Excel's saved values.

A data table is a range whose first cell holds ``<f t="dataTable" ref="B5:D10" r1="B1" .../>``
(ECMA-376 Part 1, 18.3.1.40 ``f``, ST_CellFormulaType ``dataTable``): Excel fills the range by
recalculating the sheet once per row/column value with that value substituted into the input
cell(s) ``r1``/``r2``, and saves the results as the cells' values. Neither IronCalc nor
`formulas` calculates data tables (both refuse such a package), so the service rewrites the
package before any engine sees it: the ``dataTable`` formula element is removed and every cell
of the table keeps the value Excel saved, as a constant. Such cells therefore do not follow a
job's inputs; the version's fidelity report (``data_tables``) and the upload warnings name the
range and every named output inside it or calculated from it.

The filled workbook (a job's export) holds those cells as the same constants: the table's
definition is not written back.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass

from shared.calc.xlsx.package import open_package, workbook_parts

_MARK = b'"dataTable"'
_CELL_RE = re.compile(rb"<c\b([^>]*?)(?:/>|>(.*?)</c>)", re.DOTALL)
_DATA_TABLE_F = re.compile(rb"<f\b[^>]*\bt=\"dataTable\"[^>]*?(?:/>|>.*?</f>)", re.DOTALL)
_ATTR = re.compile(rb'\b(ref|r1|r2|dt2D|dtr)="([^"]*)"')

NOTE = "is an Excel what-if data table: kept as Excel's saved values, not recalculated from inputs"


@dataclass(frozen=True)
class DataTable:
    """One data table: its sheet, its range and its input cell(s)."""

    sheet: str
    ref: str
    inputs: tuple[str, ...]

    @property
    def where(self) -> str:
        quoted = f"'{self.sheet}'" if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", self.sheet) else self.sheet
        return f"{quoted}!{self.ref}"

    def to_dict(self) -> dict:
        return {"sheet": self.sheet, "ref": self.ref, "inputs": list(self.inputs),
                "note": f"{self.where} {NOTE}"}


def _sheet_parts(package: zipfile.ZipFile) -> list[tuple[str, str]]:
    return workbook_parts(package)[1]


def _tables_in(sheet: str, xml: bytes) -> list[DataTable]:
    tables = []
    for match in _DATA_TABLE_F.finditer(xml):
        attrs = dict((k.decode(), v.decode()) for k, v in _ATTR.findall(match.group(0)))
        if "ref" not in attrs:
            continue
        inputs = tuple(attrs[k] for k in ("r1", "r2") if attrs.get(k))
        tables.append(DataTable(sheet, attrs["ref"], inputs))
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
    """The package with each data table's formula element removed, so its cells are constants
    holding Excel's saved values; the same bytes when there is no data table."""
    package = open_package(data)
    paths = {path for _, path in _sheet_parts(package)}
    rewritten: dict[str, bytes] = {}
    for path in paths:
        xml = package.read(path)
        if _MARK not in xml:
            continue

        def one(match: re.Match) -> bytes:
            body = match.group(2)
            if body is None or _MARK not in body:
                return match.group(0)
            return b"<c" + match.group(1) + b">" + _DATA_TABLE_F.sub(b"", body) + b"</c>"

        rewritten[path] = _CELL_RE.sub(one, xml)
    if not rewritten:
        return data
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in package.infolist():
            target.writestr(info, rewritten.get(info.filename, package.read(info.filename)))
    return out.getvalue()


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
    from shared.calc.refs import parse_cell

    first, _, last = table.ref.replace("$", "").partition(":")
    a, b = parse_cell(first), parse_cell(last or first)
    if a is None or b is None:
        return None
    return (table.sheet, min(a[0], b[0]), min(a[1], b[1]), max(a[0], b[0]), max(a[1], b[1]))
