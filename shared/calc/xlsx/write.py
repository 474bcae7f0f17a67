"""Writing values into a package: cached results into formula cells, constants into input
cells, every other part copied byte for byte."""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any
from xml.sax.saxutils import escape

from shared.calc.refs import column_number
from shared.calc.xlsx.package import open_package, workbook_parts
from shared.calc.xlsx.rich_errors import PLAIN_ERRORS, rich_errors

_CELL_RE = re.compile(rb"<c\b([^>]*?)(?:/>|>(.*?)</c>)", re.DOTALL)
_R_ATTR = re.compile(rb'\br="([A-Z]+)(\d+)"')
_T_ATTR = re.compile(rb'\s+t="[^"]*"')
_F_ELEMENT = re.compile(rb"<f\b[^>]*?(?:/>|>.*?</f>)", re.DOTALL)
_VM_ATTR = re.compile(rb'\s+vm="(\d+)"')


def _value_metadata(attrs: bytes, value: Any, rich: dict[int, str]) -> bytes:
    """A cell's attributes for its new value: its vm (a rich value, such as the #CALC! Excel
    saved) kept only when the new value is that same error, so a number never carries it."""
    vm = _VM_ATTR.search(attrs)
    if vm is None:
        return attrs
    if isinstance(value, tuple) and value[0] == "e" and rich.get(int(vm.group(1))) == value[1]:
        return attrs
    return _VM_ATTR.sub(b"", attrs)


def _cell_xml(attrs: bytes, formula: bytes, value: Any) -> bytes:
    attrs = _T_ATTR.sub(b"", attrs)
    if value is None or value == ("empty", None):
        return b"<c" + attrs + (b">" + formula + b"</c>" if formula else b"/>")
    kind, raw = value if isinstance(value, tuple) else _kind_of(value)
    if kind == "n":
        text, t = repr(float(raw)).encode(), b""
        if float(raw).is_integer() and abs(raw) < 2**53:
            text = str(int(raw)).encode()
    elif kind == "b":
        text, t = (b"1" if raw else b"0"), b' t="b"'
    elif kind == "e":
        # a newer error without its rich value is written as older readers see it
        text, t = (raw if raw in PLAIN_ERRORS else "#VALUE!").encode(), b' t="e"'
    elif formula:
        text, t = escape(raw).encode(), b' t="str"'
    else:
        inline = escape(raw).encode()
        return b"<c" + attrs + b' t="inlineStr"><is><t xml:space="preserve">' + inline + b"</t></is></c>"
    return b"<c" + attrs + t + b">" + formula + b"<v>" + text + b"</v></c>"


def _kind_of(value: Any) -> tuple[str, Any]:
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", float(value))
    return ("s", str(value))


def write_values(
    data: bytes,
    formula_values: dict[tuple[str, int, int], Any],
    constants: dict[tuple[str, int, int], Any] | None = None,
) -> bytes:
    """The package with cached values written into formula cells and constants replaced.

    `formula_values` is keyed by (SHEET NAME IN ANY CASE, row, col) and holds ("n", 1.0)-style
    tuples or plain values; `constants` replaces non-formula cells that exist in the sheet XML.
    """
    package = open_package(data)
    _, parts, _ = workbook_parts(package)
    rich = rich_errors(package)
    by_sheet: dict[str, tuple[dict, dict]] = {}
    upper_values: dict[str, dict] = {}
    for (sheet, row, col), value in formula_values.items():
        upper_values.setdefault(sheet.upper(), {})[(row, col)] = value
    upper_constants: dict[str, dict] = {}
    for (sheet, row, col), value in (constants or {}).items():
        upper_constants.setdefault(sheet.upper(), {})[(row, col)] = value
    for name, path in parts:
        by_sheet[path] = (upper_values.get(name.upper(), {}), upper_constants.get(name.upper(), {}))

    def rewrite(xml: bytes, values: dict, fixed: dict) -> bytes:
        def one(match: re.Match) -> bytes:
            attrs, body = match.group(1), match.group(2) or b""
            r = _R_ATTR.search(attrs)
            if r is None:
                return match.group(0)
            cell = (int(r.group(2)), column_number(r.group(1).decode()))
            formula = _F_ELEMENT.search(body)
            if formula is not None and cell in values:
                return _cell_xml(_value_metadata(attrs, values[cell], rich), formula.group(0), values[cell])
            if formula is None and cell in fixed:
                return _cell_xml(_value_metadata(attrs, fixed[cell], rich), b"", fixed[cell])
            return match.group(0)

        return _CELL_RE.sub(one, xml)

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in package.infolist():
            part = package.read(info.filename)
            if info.filename in by_sheet and any(by_sheet[info.filename]):
                part = rewrite(part, *by_sheet[info.filename])
            target.writestr(info, part)
    return out.getvalue()

