"""The package guard: what an uploaded file must be before any engine (or openpyxl) reads it.

Two steps, each bounded by the limits in settings (``Limits.from_settings``):

- ``check_directory`` reads only the zip's end record and central directory, never inflating
  anything: the file must be a zip (not a renamed CSV or an .xls), complete (not truncated),
  with at most ``max_parts`` parts, each part's declared size and compression ratio and their
  total within limits, the parts every reader needs present, and no macros.
- ``check_contents`` then streams the parts that say how big the workbook is through expat, a
  chunk at a time, so no part is ever held whole: ``[Content_Types].xml`` (no macro-enabled
  content types), ``xl/workbook.xml`` (sheets and defined names counted), and every worksheet
  (cells counted; each formula's length and parenthesis depth checked against Excel's own
  limits). No part may declare a DTD (OOXML never does; entities are how XML bombs expand).
  Then every other part is inflated too, and thrown away as it comes.

Every part is inflated here from its own compressed bytes (``_Inflation``) to the end of its
deflate stream, as IronCalc's Rust zip reader inflates it after the guard, never through
Python's zip reader: that one stops at the directory's declared size, so it would pass a part
whose deflate stream goes on for a gigabyte behind a directory entry saying "1 KB" (with the
CRC of that first kilobyte). The bytes that come out are counted a chunk at a time, never more
than a chunk held: a part that inflates past its declared size is refused the moment it does
(400 when its declared bytes are whole, a hidden tail; 422 damaged when they do not match the
CRC either), and one that stops short of its size or whose CRC differs is damaged (422). So once
the guard has passed, every part's real size is its declared size, and the directory step's
limits (per part, total, ratio) hold for whatever any reader inflates.

Excel's limits (Microsoft, "Excel specifications and limits"): a formula's contents are at most
8,192 characters and functions nest at most 64 levels. The guard counts every parenthesis
(function calls and grouping alike) outside string literals, so a formula Excel itself could
save is never refused for its nesting unless it groups past 64 levels too.

A file that is not an .xlsx at all raises WorkbookError (422, "The file is not a readable
.xlsx workbook: ..."), as the engines always did; a readable package over a limit, or with
macros, raises WorkbookRefused (400) saying which limit and how to change the workbook.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator
from xml.parsers import expat

from shared.calc.xlsx.package import UNREADABLE
from shared.errors import WorkbookError, WorkbookRefused

MIB = 1024 * 1024
# A part smaller than this is never refused for its ratio: it cannot inflate to anything harmful.
RATIO_EXEMPT_BYTES = 1 * MIB
_CHUNK = 64 * 1024
CONTENT_TYPES = "[Content_Types].xml"
WORKBOOK = "xl/workbook.xml"
WORKBOOK_RELS = "xl/_rels/workbook.xml.rels"
REQUIRED_PARTS = (CONTENT_TYPES, WORKBOOK, WORKBOOK_RELS)
MACROS_REFUSED = (
    "Macro-enabled workbooks are not accepted (macros never run here, and a filled workbook could "
    "not keep them): save it as an Excel Workbook (.xlsx) and upload that"
)
_OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_EOCD = struct.Struct("<4s4H2LH")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")
_CD_ENTRY = struct.Struct("<4s4B4HL2L5H2L")
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # signature ... name and extra field lengths
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)  # all that Excel writes


@dataclass(frozen=True)
class Limits:
    """How big an upload may be: the ``upload_max_*`` settings, whose defaults and reasons are
    in shared/config.py."""

    max_parts: int
    max_uncompressed_bytes: int
    max_part_bytes: int
    max_compression_ratio: float
    max_sheets: int
    max_defined_names: int
    max_cells: int
    max_formula_length: int
    max_formula_depth: int
    max_data_table_substitutions: int = 10_000  # what-if tables calculated per job (corrections/data_tables.py)

    @classmethod
    def from_settings(cls, settings: Any) -> "Limits":
        return cls(**{name: getattr(settings, "upload_" + name) for name in cls.__dataclass_fields__})


def _unreadable(reason: str) -> WorkbookError:
    return WorkbookError(f"{UNREADABLE}: {reason}")


def _mb(size: float) -> str:
    return f"{size / MIB:,.0f} MB" if size >= MIB else f"{size:,.0f} bytes"


def check(data: bytes, limits: Limits) -> None:
    """Both steps: the directory, then the contents."""
    check_directory(data, limits)
    check_contents(data, limits)


# --- Step 1: the central directory only ------------------------------------------------------


def check_directory(data: bytes, limits: Limits) -> None:
    """Refuse the file from its zip directory alone; nothing is inflated."""
    if data.startswith(_OLE_SIGNATURE):
        raise _unreadable(
            "it is an Excel 97-2003 (.xls) file or a password-protected workbook; "
            "save it as an Excel Workbook (.xlsx) without a password"
        )
    if not data.startswith(b"PK\x03\x04"):
        raise _unreadable("it is not a zip package, as every .xlsx is (a CSV or text file renamed .xlsx is not)")
    start, size = _central_directory(data)
    count = _count_entries(data, start, size, limits.max_parts)
    if count > limits.max_parts:
        raise WorkbookRefused(f"The workbook has more than {limits.max_parts:,} parts (limit {limits.max_parts:,})")
    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise _unreadable("the zip package is damaged") from exc
    names: set[str] = set()
    total = 0
    for info in infos:
        if info.filename in names:
            raise _unreadable(f"the zip package holds two parts named {info.filename!r}")
        names.add(info.filename)
        if info.flag_bits & 0x1:
            raise _unreadable("its parts are encrypted; save it without a password")
        if info.file_size > limits.max_part_bytes:
            raise WorkbookRefused(
                f"The part {info.filename!r} inflates to {_mb(info.file_size)}, over the "
                f"{_mb(limits.max_part_bytes)} limit for one part"
            )
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > RATIO_EXEMPT_BYTES and ratio > limits.max_compression_ratio:
            raise WorkbookRefused(
                f"The part {info.filename!r} inflates {ratio:,.0f} times its compressed size, over the "
                f"{limits.max_compression_ratio:,.0f}-fold limit (a zip bomb is refused unread)"
            )
        total += info.file_size
    if total > limits.max_uncompressed_bytes:
        raise WorkbookRefused(
            f"The workbook inflates to {_mb(total)}, over the {_mb(limits.max_uncompressed_bytes)} limit"
        )
    if any(name.lower().endswith("vbaproject.bin") for name in names):
        raise WorkbookRefused(MACROS_REFUSED)
    for part in REQUIRED_PARTS:
        if part not in names:
            raise _unreadable(f"the package has no {part} part")


def _central_directory(data: bytes) -> tuple[int, int]:
    """(offset, size in bytes) of the central directory, from the end record (zip64 too)."""
    tail_start = max(0, len(data) - (_EOCD.size + 0xFFFF))
    position = data.rfind(b"PK\x05\x06", tail_start)
    if position < 0 or len(data) - position < _EOCD.size:
        raise _unreadable("the zip package is truncated (its central directory is missing)")
    _sig, _disk, _cd_disk, _on_disk, entries, size, offset, _comment = _EOCD.unpack_from(data, position)
    if entries == 0xFFFF or size == 0xFFFFFFFF or offset == 0xFFFFFFFF:
        locator = position - _ZIP64_LOCATOR.size
        if locator < 0 or data[locator:locator + 4] != b"PK\x06\x07":
            raise _unreadable("the zip package is damaged (a zip64 end record is missing)")
        record = locator - _ZIP64_EOCD.size
        if record < 0 or data[record:record + 4] != b"PK\x06\x06":
            raise _unreadable("the zip package is damaged (a zip64 end record is missing)")
        fields = _ZIP64_EOCD.unpack_from(data, record)
        size, end = fields[7], record
    else:
        end = position
    start = end - size  # where it really is, also when bytes were prepended to the zip
    if start < 0:
        raise _unreadable("the zip package is truncated (its central directory is cut short)")
    return start, size


def _count_entries(data: bytes, start: int, size: int, limit: int) -> int:
    """Central directory entries, counted the way zipfile will read them (by bytes), stopping
    one past the limit so that a directory of a million entries costs nothing to refuse."""
    position, end, count = start, start + size, 0
    while position < end and count <= limit:
        if data[position:position + 4] != b"PK\x01\x02" or position + _CD_ENTRY.size > len(data):
            raise _unreadable("the zip package is damaged (bad central directory)")
        fields = _CD_ENTRY.unpack_from(data, position)
        name_len, extra_len, comment_len = fields[12], fields[13], fields[14]
        position += _CD_ENTRY.size + name_len + extra_len + comment_len
        count += 1
    return count


# --- Step 2: streaming the parts that size the workbook --------------------------------------


class _Inflation:
    """The package's parts, inflated from their own compressed bytes a chunk at a time and
    counted against what the directory declared (see the module's docstring)."""

    def __init__(self, data: bytes, limits: Limits):
        self.data = memoryview(data)
        self.limits = limits
        self.package = zipfile.ZipFile(io.BytesIO(data))
        listed = self.package.infolist()
        self.infos = {info.filename: info for info in listed}
        if len(self.infos) != len(listed):
            raise _unreadable("the zip package holds two parts of the same name")
        self.inflated: set[str] = set()
        self.total = 0

    def chunks(self, name: str) -> Iterator[bytes]:
        """The part's inflated bytes, refused past its declared size; damaged if they are not all
        of it, with its CRC."""
        info = self.infos.get(name)
        if info is None:
            raise _unreadable(f"the package has no {name} part")
        declared, limits = info.file_size, self.limits
        if name not in self.inflated:
            # check_directory's limits again: the caps hold even without it
            self.total += declared
            if declared > limits.max_part_bytes or self.total > limits.max_uncompressed_bytes:
                raise WorkbookRefused(
                    f"The part {name!r} inflates to {_mb(declared)}, over the upload limits "
                    f"({_mb(limits.max_part_bytes)} a part, {_mb(limits.max_uncompressed_bytes)} in all)"
                )
            self.inflated.add(name)
        produced, crc = 0, 0
        for chunk in self._inflate(info):
            if produced + len(chunk) > declared:
                if zlib.crc32(chunk[:declared - produced], crc) != info.CRC:
                    raise _unreadable(f"the part {name!r} is damaged")  # neither its size nor its CRC fit
                # The declared bytes are whole and the rest is hidden: what Python's zip reader would pass.
                raise WorkbookRefused(
                    f"The part {name!r} inflates past the {declared:,} bytes its zip directory declares "
                    f"(a package that hides its size is refused unread)"
                )
            produced += len(chunk)
            crc = zlib.crc32(chunk, crc)
            yield chunk
        if produced != declared or crc != info.CRC:
            raise _unreadable(f"the part {name!r} is damaged")

    def drain(self, name: str) -> None:
        """Inflate the part to its end, keeping nothing."""
        for _chunk in self.chunks(name):
            pass

    def _compressed(self, info: zipfile.ZipInfo) -> memoryview:
        """The part's compressed bytes, where its local header says they start (as every reader finds them)."""
        at, data = info.header_offset, self.data
        if at < 0 or at + _LOCAL_HEADER.size > len(data) or bytes(data[at:at + 4]) != b"PK\x03\x04":
            raise _unreadable(f"the part {info.filename!r} is damaged")
        fields = _LOCAL_HEADER.unpack_from(data, at)
        start = at + _LOCAL_HEADER.size + fields[9] + fields[10]
        if start + info.compress_size > len(data):
            raise _unreadable(f"the part {info.filename!r} is damaged (the zip package is truncated)")
        return data[start:start + info.compress_size]

    def _inflate(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        if info.compress_type not in _METHODS:
            raise _unreadable(f"the part {info.filename!r} is compressed in a way Excel never writes")
        compressed = self._compressed(info)
        if info.compress_type == zipfile.ZIP_STORED:
            for start in range(0, len(compressed), _CHUNK):
                yield bytes(compressed[start:start + _CHUNK])
            return
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as zip stores it
        try:
            for start in range(0, len(compressed), _CHUNK):
                pending: Any = compressed[start:start + _CHUNK]
                while True:
                    # never more than a chunk out at once, whatever the ratio
                    chunk = inflater.decompress(pending, _CHUNK)
                    if chunk:
                        yield chunk
                    if inflater.eof:
                        return
                    pending = inflater.unconsumed_tail
                    if not pending and len(chunk) < _CHUNK:
                        break  # this input is used up and nothing more is waiting to come out
        except zlib.error as exc:
            raise _unreadable(f"the part {info.filename!r} is damaged") from exc
        raise _unreadable(f"the part {info.filename!r} is damaged (its compressed data ends early)")


class _Part:
    """One part streamed through expat with element handlers; local names, no namespaces."""

    def __init__(self, name: str):
        self.name = name
        self.parser = expat.ParserCreate(namespace_separator=" ")
        self.parser.StartDoctypeDeclHandler = self._doctype
        self.parser.EntityDeclHandler = self._doctype

    def _doctype(self, *_args: Any) -> None:
        raise WorkbookRefused(f"The part {self.name!r} declares a DTD, which no .xlsx part does")

    def stream(self, package: _Inflation) -> None:
        try:
            for chunk in package.chunks(self.name):
                self.parser.Parse(chunk, False)
            self.parser.Parse(b"", True)
        except expat.ExpatError as exc:
            raise _unreadable(f"the part {self.name!r} is not well-formed XML") from exc


def _local(tag: str) -> str:
    return tag.rsplit(" ", 1)[-1]


def formula_depth(text: str) -> int:
    """The deepest parenthesis nesting of a formula, outside "strings" and 'sheet names'."""
    depth = deepest = 0
    if "(" not in text:
        return 0
    quote = ""
    for char in text:
        if quote:
            if char == quote:
                quote = ""  # a doubled quote closes and reopens: same result
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    return deepest


class _Counts:
    """What the streamed parts add up to, refused the moment a limit is passed."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.sheets = self.names = self.cells = 0

    def formula(self, where: Callable[[], str], text: str) -> None:
        """Refuse a formula over the length or depth limit; ``where`` names it, when needed."""
        limits = self.limits
        if len(text) > limits.max_formula_length:
            raise WorkbookRefused(
                f"A formula in {where()} is longer than {limits.max_formula_length:,} characters "
                f"(Excel's own limit is 8,192)"
            )
        if text.count("(") > limits.max_formula_depth and formula_depth(text) > limits.max_formula_depth:
            raise WorkbookRefused(
                f"A formula in {where()} nests parentheses more than {limits.max_formula_depth} levels deep "
                f"(Excel allows 64 levels of nested functions)"
            )


def _check_content_types(package: _Inflation) -> None:
    part = _Part(CONTENT_TYPES)

    def start(_name: str, attrs: dict) -> None:
        content_type = attrs.get("ContentType", "").lower()
        if "macroenabled" in content_type or "vbaproject" in content_type:
            raise WorkbookRefused(MACROS_REFUSED)

    part.parser.StartElementHandler = start
    part.stream(package)


def _check_workbook(package: _Inflation, counts: _Counts) -> None:
    """Sheets and defined names counted; each name's formula checked like a cell's."""
    part = _Part(WORKBOOK)
    limits = counts.limits
    name: dict[str, Any] = {"name": "", "text": None, "size": 0}

    def where() -> str:
        return f"the defined name {name['name']!r}"

    def start(tag: str, attrs: dict) -> None:
        local = _local(tag)
        if local == "sheet":
            counts.sheets += 1
            if counts.sheets > limits.max_sheets:
                raise WorkbookRefused(f"The workbook has more than {limits.max_sheets:,} sheets (limit {limits.max_sheets:,})")
        elif local == "definedName":
            counts.names += 1
            if counts.names > limits.max_defined_names:
                raise WorkbookRefused(
                    f"The workbook has more than {limits.max_defined_names:,} defined names "
                    f"(limit {limits.max_defined_names:,})"
                )
            name.update(name=attrs.get("name", "")[:100], text=[], size=0)

    def text(data: str) -> None:
        if name["text"] is not None:
            name["size"] += len(data)
            if name["size"] > limits.max_formula_length:
                counts.formula(where, "x" * name["size"])
            name["text"].append(data)

    def end(tag: str) -> None:
        if name["text"] is not None and _local(tag) == "definedName":
            counts.formula(where, "".join(name["text"]))
            name["text"] = None

    part.parser.StartElementHandler = start
    part.parser.CharacterDataHandler = text
    part.parser.EndElementHandler = end
    part.stream(package)


def _worksheet_parts(package: _Inflation, names: set[str]) -> list[str]:
    """Worksheet parts: the workbook's worksheet relationships plus anything under xl/worksheets/."""
    part = _Part(WORKBOOK_RELS)
    targets: list[str] = []

    def start(name: str, attrs: dict) -> None:
        if _local(name) == "Relationship" and attrs.get("Type", "").endswith("/worksheet"):
            targets.append(_resolve("xl/workbook.xml", attrs.get("Target", "")))

    part.parser.StartElementHandler = start
    part.stream(package)
    found = [t for t in targets if t in names]
    found += sorted(n for n in names if n.startswith("xl/worksheets/") and n.endswith(".xml") and n not in found)
    return found


def _resolve(base: str, target: str) -> str:
    if target.startswith("/"):
        return target.lstrip("/")
    out: list[str] = []
    for piece in base.split("/")[:-1] + target.split("/"):
        if piece == "..":
            if out:
                out.pop()
        elif piece and piece != ".":
            out.append(piece)
    return "/".join(out)


_NAME_PREFIX = rb"<(?:[A-Za-z_][\w.-]*:)?"
_CELL = re.compile(_NAME_PREFIX + rb"c[\s/>]")
_FORMULA = re.compile(_NAME_PREFIX + rb"(?:f|formula[12]?)(?:\s[^>]*)?>([^<]*)")
_FORMULA_START = re.compile(_NAME_PREFIX + rb"(?:f|formula[12]?)[\s>]")
_CELL_REF = re.compile(rb'<(?:[A-Za-z_][\w.-]*:)?c\s[^>]*?\br="([A-Z]{1,3}[0-9]{1,7})"')
_NOT_IN_SHEETS = re.compile(rb"<!(?:DOCTYPE|ENTITY|\[CDATA\[)")
_ENTITY = re.compile(r"&(#x[0-9A-Fa-f]+|#[0-9]+|amp|lt|gt|quot|apos);")
_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


def _unescape(text: bytes) -> str:
    def one(match: re.Match) -> str:
        ref = match.group(1)
        if ref.startswith("#"):
            code = int(ref[2:], 16) if ref[1:2] in "xX" else int(ref[1:])
            return chr(code) if 0 < code < 0x110000 else "?"
        return _ENTITIES[ref]

    return _ENTITY.sub(one, text.decode("utf-8", "replace"))


def _where(name: str, region: bytes, position: int) -> str:
    refs = _CELL_REF.findall(region, 0, position)
    return f"{name} cell {refs[-1].decode()}" if refs else name


def _check_sheet(package: _Inflation, name: str, counts: _Counts) -> None:
    """A worksheet scanned as bytes, a chunk at a time (expat would call Python for each of a
    million cells): <c> elements counted, each formula's text checked, DTDs and CDATA refused.
    Each region scanned ends before a '<', so no tag or formula text is ever cut in two; what
    follows the last '<' waits for the next chunk, up to a bound past which it can only be a
    formula too long or text no check needs."""
    limits = counts.limits
    bound = 6 * limits.max_formula_length + _CHUNK  # "&amp;" is five characters for one
    carry = b""

    def scan(region: bytes) -> None:
        counts.cells += len(_CELL.findall(region))
        if counts.cells > limits.max_cells:
            raise WorkbookRefused(f"The workbook has more than {limits.max_cells:,} cells (limit {limits.max_cells:,})")
        if _NOT_IN_SHEETS.search(region):
            raise WorkbookRefused(f"The part {name!r} holds a DTD or CDATA, which Excel never writes")
        for match in _FORMULA.finditer(region):
            if match.group(1):
                counts.formula(lambda: _where(name, region, match.start()), _unescape(match.group(1)))

    for chunk in package.chunks(name):
        buffer = carry + chunk
        cut = buffer.rfind(b"<")
        if cut < 0:
            cut = len(buffer)
        scan(buffer[:cut])
        carry = buffer[cut:]
        if len(carry) > bound:
            if _FORMULA_START.match(carry):
                counts.formula(lambda: name, "x" * (limits.max_formula_length + 1))
            scan(carry[:_CHUNK].split(b">", 1)[0] + b">")
            carry = b""
    scan(carry)


def check_contents(data: bytes, limits: Limits) -> None:
    """Stream the content types, the workbook and every worksheet, then inflate every other part
    (each counted against its declared size); call after check_directory."""
    try:
        package = _Inflation(data, limits)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise _unreadable("the zip package is damaged") from exc
    names = set(package.infos)
    counts = _Counts(limits)
    _check_content_types(package)
    _check_workbook(package, counts)
    for sheet in _worksheet_parts(package, names):
        _check_sheet(package, sheet, counts)
    for name in sorted(names - package.inflated):
        package.drain(name)
