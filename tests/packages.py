"""Editing a saved .xlsx package part by part, for workbooks openpyxl cannot write as Excel does
(data tables, external links, hand-made XML)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable


def edit_parts(data: bytes, edits: dict[str, Callable[[bytes], bytes]], *, add: dict[str, str] | None = None) -> bytes:
    """The package with each part named in `edits` passed through its function and the parts in
    `add` (name -> XML text) written after the others."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            part = source.read(info.filename)
            if info.filename in edits:
                part = edits[info.filename](part)
            target.writestr(info, part)
        for name, text in (add or {}).items():
            target.writestr(name, text)
    return out.getvalue()


def edit_sheet(data: bytes, rewrite: Callable[[str], str]) -> bytes:
    """The package with its first sheet's XML passed through `rewrite`."""
    return edit_parts(data, {"xl/worksheets/sheet1.xml": lambda part: rewrite(part.decode()).encode()})
