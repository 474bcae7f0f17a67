"""Reading the OOXML package: the zip, workbook.xml and its relationships, shared strings,
workbook-scoped defined names and the program that saved the file."""

from __future__ import annotations

import io
import re
import zipfile
from xml.etree import ElementTree

from shared.errors import WorkbookError

UNREADABLE = "The file is not a readable .xlsx workbook"
_REL_NS = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_ESCAPED_CHAR = re.compile(r"_x([0-9A-Fa-f]{4})_")


def local_name(tag: str) -> str:
    """An element's tag without its namespace."""
    return tag.rsplit("}", 1)[-1]


def children(element: ElementTree.Element, name: str) -> list[ElementTree.Element]:
    """An element's children of a local name, whatever their namespace."""
    return [child for child in element if local_name(child.tag) == name]


def unescape_ooxml(text: str) -> str:
    """OOXML writes characters XML cannot hold as _xHHHH_ (CHAR(1) is "_x0001_")."""
    if "_x" not in text:
        return text
    return _ESCAPED_CHAR.sub(lambda m: chr(int(m.group(1), 16)), text)


def element_text(element: ElementTree.Element | None) -> str:
    """All <t> text under an element, leaving out phonetic runs (<rPh>)."""
    parts: list[str] = []

    def walk(node: ElementTree.Element) -> None:
        for child in node:
            name = local_name(child.tag)
            if name == "t":
                parts.append(child.text or "")
            elif name != "rPh":
                walk(child)

    if element is not None:
        walk(element)
    return unescape_ooxml("".join(parts))


def _part_path(base: str, target: str) -> str:
    if target.startswith("/"):
        return target.lstrip("/")
    parts = base.split("/")[:-1] + target.split("/")
    out: list[str] = []
    for part in parts:
        if part == "..":
            if out:
                out.pop()
        elif part and part != ".":
            out.append(part)
    return "/".join(out)


def shared_strings(package: zipfile.ZipFile, path: str | None) -> list[str]:
    if path is None or path not in package.namelist():
        return []
    root = ElementTree.fromstring(package.read(path))
    return [element_text(si) for si in children(root, "si")]


def open_package(data: bytes) -> zipfile.ZipFile:
    """The xlsx as a zip; WorkbookError when it is not one."""
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise WorkbookError(UNREADABLE) from exc


def workbook_parts(package: zipfile.ZipFile) -> tuple[ElementTree.Element, list[tuple[str, str]], str | None]:
    """(workbook.xml root, [(sheet name, worksheet part path)] in order, shared strings path)."""
    try:
        names = set(package.namelist())
        workbook_xml = ElementTree.fromstring(package.read("xl/workbook.xml"))
        rels = ElementTree.fromstring(package.read("xl/_rels/workbook.xml.rels"))
    except (KeyError, ElementTree.ParseError, zipfile.BadZipFile, OSError) as exc:
        raise WorkbookError(UNREADABLE) from exc
    targets, strings_path = {}, None
    for rel in rels:
        target = _part_path("xl/workbook.xml", rel.get("Target", ""))
        targets[rel.get("Id")] = target
        if rel.get("Type", "").endswith("/sharedStrings"):
            strings_path = target
    sheets = []
    for element in workbook_xml.iter():
        if local_name(element.tag) != "sheet":
            continue
        target = targets.get(element.get(_REL_NS))
        if target and target in names and "worksheets/" in target:
            sheets.append((element.get("name"), target))
    return workbook_xml, sheets, strings_path


def defined_names(workbook_xml: ElementTree.Element) -> dict[str, str]:
    """Workbook-scoped defined names, upper case, to their formula text."""
    names = {}
    for element in workbook_xml.iter():
        if local_name(element.tag) == "definedName" and element.get("localSheetId") is None:
            names[element.get("name", "").upper()] = element.text or ""
    return names


def application(package: zipfile.ZipFile) -> str | None:
    """The program that saved the package (docProps/app.xml), when it says."""
    if "docProps/app.xml" not in package.namelist():
        return None
    try:
        app = ElementTree.fromstring(package.read("docProps/app.xml"))
    except ElementTree.ParseError:
        return None
    return next((e.text for e in app.iter() if local_name(e.tag) == "Application"), None)
