"""Hostile workbooks, built byte by byte for the upload guard's tests (unit and end-to-end).

Each builder returns the bytes of an .xlsx package: a minimal valid one (`workbook`) and the
attacks the service must refuse before any engine reads them (issue 14, findings 3 to 5).
"""

from __future__ import annotations

import functools
import io
import zipfile

MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
XLSX_MAIN = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
XLSM_MAIN = "application/vnd.ms-excel.sheet.macroEnabled.main+xml"
WORKSHEET = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
STYLES_XML = (
    f'<styleSheet xmlns="{MAIN_NS}"><fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>'
    '<fills count="1"><fill><patternFill patternType="none"/></fill></fills>'
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>'
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>'
)


def column(index: int) -> str:
    """Column letters of a 0-based index (0 -> A, 26 -> AA)."""
    letters, index = "", index + 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def cell(ref: str, *, value: float | None = None, formula: str | None = None) -> str:
    """One <c> element: a number, or a formula (written without its '=') with no cached value."""
    inner = (f"<f>{formula}</f>" if formula is not None else "") + (f"<v>{value}</v>" if value is not None else "")
    return f'<c r="{ref}">{inner}</c>'


def sheet_xml(rows: list[list[str]] | None = None, *, body: bytes | None = None) -> bytes:
    """A worksheet part: rows of <c> elements (row numbers from 1), or a ready sheetData body."""
    if body is None:
        body = "".join(f'<row r="{n}">{"".join(cells)}</row>' for n, cells in enumerate(rows or [], start=1)).encode()
    return f'<worksheet xmlns="{MAIN_NS}"><sheetData>'.encode() + body + b"</sheetData></worksheet>"


def workbook(
    sheets: list[bytes] | None = None,
    *,
    names: list[tuple[str, str]] | str = (),
    main_content_type: str = XLSX_MAIN,
    extra_parts: dict[str, bytes] | None = None,
    leave_out: tuple[str, ...] = (),
    compression: int = zipfile.ZIP_DEFLATED,
) -> bytes:
    """An .xlsx package: one part per sheet (default one small sheet with a formula), the
    defined names [(name, formula)] or a ready <definedName> string, extra parts, and parts to
    leave out ("[Content_Types].xml", "xl/workbook.xml", ...)."""
    if sheets is None:
        sheets = [sheet_xml([[cell("A1", value=2), cell("B1", formula="A1*3", value=6)]])]
    if not isinstance(names, str):
        names = "".join(f'<definedName name="{n}">{f}</definedName>' for n, f in names)
    sheet_entries = "".join(
        f'<sheet name="Sheet{i}" sheetId="{i}" r:id="rId{i}"/>' for i in range(1, len(sheets) + 1)
    )
    parts: dict[str, bytes] = {
        "[Content_Types].xml": (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{main_content_type}"/>'
            '<Override PartName="/xl/styles.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
            + "".join(
                f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="{WORKSHEET}"/>'
                for i in range(1, len(sheets) + 1)
            )
            + "</Types>"
        ).encode(),
        "_rels/.rels": (
            f'<Relationships xmlns="{PKG_REL_NS}"><Relationship Id="rId1" '
            f'Type="{REL_NS}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ).encode(),
        "xl/workbook.xml": (
            f'<workbook xmlns="{MAIN_NS}" xmlns:r="{REL_NS}"><sheets>{sheet_entries}</sheets>'
            + (f"<definedNames>{names}</definedNames>" if names else "")
            + "</workbook>"
        ).encode(),
        "xl/_rels/workbook.xml.rels": (
            f'<Relationships xmlns="{PKG_REL_NS}">'
            + "".join(
                f'<Relationship Id="rId{i}" Type="{REL_NS}/worksheet" Target="worksheets/sheet{i}.xml"/>'
                for i in range(1, len(sheets) + 1)
            )
            + f'<Relationship Id="rId{len(sheets) + 1}" Type="{REL_NS}/styles" Target="styles.xml"/>'
            "</Relationships>"
        ).encode(),
        "xl/styles.xml": STYLES_XML.encode(),
    }
    for i, sheet in enumerate(sheets, start=1):
        parts[f"xl/worksheets/sheet{i}.xml"] = sheet
    parts.update(extra_parts or {})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as package:
        for name, content in parts.items():
            if name not in leave_out:
                package.writestr(name, content)
    return buffer.getvalue()


# --- The attacks ---------------------------------------------------------------------------------

RENAMED_CSV = b"principal,annual_rate,years\n250000,0.045,30\n"


@functools.cache
def zip_bomb(inflated_mb: int = 600) -> bytes:
    """A valid workbook carrying one part of zeros that inflates to ``inflated_mb`` MB (about
    1,000 times its compressed size), written a megabyte at a time."""
    buffer = io.BytesIO(workbook())
    with zipfile.ZipFile(buffer, "a", zipfile.ZIP_DEFLATED) as package:
        with package.open("xl/media/image1.png", "w") as part:
            chunk = b"\0" * (1024 * 1024)
            for _ in range(inflated_mb):
                part.write(chunk)
    return buffer.getvalue()


@functools.cache
def sheet_bomb(cells: int = 3_000_000) -> bytes:
    """A worksheet of ``cells`` empty cells in one row: a few KB that inflate 1,000-fold."""
    return workbook([sheet_xml(body=b'<row r="1">' + b"<c/>" * cells + b"</row>")])


@functools.cache
def many_cells(cells: int) -> bytes:
    """A worksheet of ``cells`` numbers, ten to a row: it compresses as real sheets do (under 20-fold)."""
    rows = []
    for row in range(1, cells // 10 + 1):
        rows.append(f'<row r="{row}">' + "".join(f'<c r="{column(c)}{row}"><v>{row * 10 + c}</v></c>' for c in range(10)) + "</row>")
    return workbook([sheet_xml(body="".join(rows).encode())])


@functools.cache
def many_names(count: int = 50_000) -> bytes:
    """``count`` workbook-scoped defined names, each naming a cell (issue 14: 257 KB for 50,000)."""
    return workbook(names=[(f"name{i}", f"Sheet1!$A${i + 1}") for i in range(count)])


def deep_formula(depth: int = 3_000) -> bytes:
    """B1 holds a formula nested ``depth`` parentheses deep (issue 14: 3,000 segfaults IronCalc)."""
    return workbook([sheet_xml([[cell("A1", value=1), cell("B1", formula="(" * depth + "A1" + ")" * depth)]])])


def long_formula(length: int = 9_000) -> bytes:
    """B1 holds a formula of about ``length`` characters: 1+1+1+..."""
    return workbook([sheet_xml([[cell("A1", value=1), cell("B1", formula="+".join(["1"] * (length // 2 + 1)))]])])


def truncated(cut: int = 200) -> bytes:
    """A valid workbook with its last ``cut`` bytes (the central directory) cut off."""
    return workbook()[:-cut]


def macro_enabled() -> bytes:
    """An .xlsm: the macro-enabled workbook content type and a VBA project part."""
    return workbook(main_content_type=XLSM_MAIN, extra_parts={"xl/vbaProject.bin": b"\xd0\xcf\x11\xe0" + b"\0" * 508})


def many_parts(count: int) -> bytes:
    """A valid workbook plus ``count`` tiny extra parts."""
    return workbook(extra_parts={f"customXml/item{i}.xml": b"<a/>" for i in range(count)})


def entity_bomb() -> bytes:
    """workbook.xml with a DTD whose entities expand a billion-fold ("billion laughs")."""
    entities = '<!ENTITY a0 "lol">' + "".join(f'<!ENTITY a{i} "{("&a" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
    package = io.BytesIO(workbook())
    out = io.BytesIO()
    with zipfile.ZipFile(package) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info.filename)
            if info.filename == "xl/workbook.xml":
                content = f"<!DOCTYPE workbook [{entities}]>".encode() + content.replace(b"<sheets>", b"<sheets>&a9;", 1)
            target.writestr(info.filename, content)
    return out.getvalue()
