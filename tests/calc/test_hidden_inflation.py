"""Zip parts that hide how far they inflate: the guard counts the bytes it really inflates.

A zip's central directory states each part's size and CRC. Python's zip reader stops at the
stated size (and checks the CRC of what it read), so a part whose directory entry says "1,000
bytes", with the CRC of its first 1,000 bytes, but whose deflate stream goes on for 50 MB, reads
as a valid 1,000-byte part there, while IronCalc's Rust zip reader inflates the whole stream.
The packages here are written byte by byte: local headers, data, central directory, end record.
"""

from __future__ import annotations

import io
import random
import struct
import tracemalloc
import zipfile
import zlib
from dataclasses import dataclass, replace

import pytest

from shared.calc import sandbox
from shared.calc.xlsx import guard
from shared.config import Settings
from shared.errors import SheetcalcError, WorkbookError, WorkbookRefused
from tests import hostile

DEFAULTS = guard.Limits.from_settings(Settings())
MIB = 1024 * 1024
FENCE = replace(sandbox.Fence.from_settings(Settings()), timeout_s=120.0)  # hang-sized
LOCAL = struct.Struct("<4s5H3L2H")
CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
END = struct.Struct("<4s4H2LH")
DOS_DATE_1980 = 0x21
_DECOMPRESSOBJ = zlib.decompressobj  # the real one (the tests below count what it hands out)


@dataclass
class Entry:
    """A part as the directory states it, and the compressed bytes actually stored."""

    name: str
    method: int
    stored: bytes
    crc: int
    declared_size: int


def deflated(pieces) -> bytes:
    """Raw deflate of the byte strings of ``pieces``, compressed as they come."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return b"".join(compressor.compress(piece) for piece in pieces) + compressor.flush()


def honest(name: str, content: bytes) -> Entry:
    return Entry(name, zipfile.ZIP_DEFLATED, deflated([content]), zlib.crc32(content), len(content))


def hidden_tail(name: str, declared: bytes, tail_mb: int, filler: bytes = b" ") -> Entry:
    """A part stating ``declared`` (its size and CRC) whose deflate stream goes on for ``tail_mb`` MB more."""
    tail = (filler * MIB for _ in range(tail_mb))
    return Entry(name, zipfile.ZIP_DEFLATED, deflated([declared, *tail]), zlib.crc32(declared), len(declared))


def package(entries: list[Entry]) -> bytes:
    """The zip of ``entries``, written as their directory entries state them."""
    out, directory = io.BytesIO(), io.BytesIO()
    for entry in entries:
        name = entry.name.encode()
        offset = out.tell()
        sizes = (entry.crc, len(entry.stored), entry.declared_size)
        out.write(LOCAL.pack(b"PK\x03\x04", 20, 0, entry.method, 0, DOS_DATE_1980, *sizes, len(name), 0) + name)
        out.write(entry.stored)
        directory.write(CENTRAL.pack(b"PK\x01\x02", 20, 3, 20, 0, 0, entry.method, 0, DOS_DATE_1980, *sizes,
                                     len(name), 0, 0, 0, 0, 0, offset) + name)
    start = out.tell()
    out.write(directory.getvalue())
    out.write(END.pack(b"PK\x05\x06", 0, 0, len(entries), len(entries), len(directory.getvalue()), start, 0))
    return out.getvalue()


def valid_parts() -> list[Entry]:
    with zipfile.ZipFile(io.BytesIO(hostile.workbook())) as source:
        return [honest(name, source.read(name)) for name in source.namelist()]


def with_part(entry: Entry) -> bytes:
    return package([e for e in valid_parts() if e.name != entry.name] + [entry])


class CountingInflation:
    """zlib's inflaters, with every byte they hand out counted."""

    def __init__(self) -> None:
        self.bytes_out = 0

    def decompressobj(self, *args):
        inflater, counter = _DECOMPRESSOBJ(*args), self

        class Counted:
            def decompress(self, data, max_length=0):
                out = inflater.decompress(data, max_length)
                counter.bytes_out += len(out)
                return out

            def __getattr__(self, name):
                return getattr(inflater, name)

        return Counted()


def guarded(data: bytes, monkeypatch) -> tuple[SheetcalcError, int, int]:
    """The guard's refusal of ``data``, the bytes it inflated, and its peak of allocated memory."""
    counting = CountingInflation()
    monkeypatch.setattr(guard.zlib, "decompressobj", counting.decompressobj)
    tracemalloc.start()
    try:
        with pytest.raises(SheetcalcError) as caught:
            guard.check(data, DEFAULTS)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return caught.value, counting.bytes_out, peak


@pytest.mark.parametrize(
    "name, declared",
    [
        ("xl/media/image1.png", b"\x89PNG" + bytes(996)),  # a part no check parses
        ("xl/sharedStrings.xml", f'<sst xmlns="{hostile.MAIN_NS}" count="0" uniqueCount="0"/>'.encode()),
        ("xl/worksheets/sheet1.xml", hostile.sheet_xml([[hostile.cell("A1", value=1)]])),  # whitespace after it
    ],
)
def test_a_part_hiding_its_inflated_size_is_refused_having_inflated_a_chunk_of_it(name, declared, monkeypatch):
    # GIVEN a workbook with a part whose directory entry states its first bytes (size and CRC)
    # while its deflate stream inflates to 50 MB
    data = with_part(hidden_tail(name, declared, tail_mb=50))
    # (Python's zip reader takes it as the small part it states: the check it used to rely on)
    assert zipfile.ZipFile(io.BytesIO(data)).read(name) == declared

    # WHEN the guard checks it
    refused, inflated, peak = guarded(data, monkeypatch)

    # THEN it is refused (400) naming the part, as soon as the part passed its stated size:
    # a chunk or so inflated, and memory nowhere near the 50 MB it would inflate to
    assert isinstance(refused, WorkbookRefused) and refused.status_code == 400
    assert refused.message == (
        f"The part {name!r} inflates past the {len(declared):,} bytes its zip directory declares "
        "(a package that hides its size is refused unread)"
    )
    assert inflated < 1 * MIB
    assert peak < 4 * MIB


def test_the_upload_reader_refuses_it_before_ironcalc_reads_it():
    # GIVEN a workbook whose shared strings part hides a 200 MB deflate stream behind a stated 60 bytes
    strings = f'<sst xmlns="{hostile.MAIN_NS}" count="0" uniqueCount="0"/>'.encode()
    data = with_part(hidden_tail("xl/sharedStrings.xml", strings, tail_mb=200))
    # WHEN it is uploaded: the directory step here, the contents and IronCalc in the fenced child
    with pytest.raises(WorkbookRefused) as caught:
        sandbox.prepare_upload(data, DEFAULTS, FENCE)
    # THEN the guard's refusal is the answer (not a reader that ran out of memory or time)
    assert caught.value.message.startswith("The part 'xl/sharedStrings.xml' inflates past the")


def test_a_stored_part_larger_than_stated_is_refused():
    # GIVEN a part stored uncompressed whose directory says 1,000 bytes while 3 MB are stored
    content = b"x" * (3 * MIB)
    entry = Entry("xl/media/image1.bin", zipfile.ZIP_STORED, content, zlib.crc32(content[:1000]), 1000)
    # WHEN / THEN the guard refuses it, naming it
    with pytest.raises(WorkbookRefused, match=r"The part 'xl/media/image1.bin' inflates past the 1,000 bytes"):
        guard.check(with_part(entry), DEFAULTS)


@pytest.mark.parametrize(
    "entry, message",
    [
        # the stated size with another CRC: damaged, as before
        (replace(hidden_tail("xl/media/image1.png", bytes(1000), tail_mb=1), crc=12345),
         "the part 'xl/media/image1.png' is damaged"),
        # a deflate stream that ends before the stated size
        (replace(honest("xl/media/image1.png", bytes(1000)), declared_size=5000),
         "the part 'xl/media/image1.png' is damaged"),
        # a deflate stream cut short: the stated size is never reached
        (replace(honest("xl/media/image1.png", bytes(range(256)) * 400),
                 stored=honest("xl/media/image1.png", bytes(range(256)) * 400).stored[:-40]),
         "the part 'xl/media/image1.png' is damaged"),
        # compressed with a method Excel never writes (bzip2: Python reads it, other readers may not)
        (replace(honest("xl/media/image1.png", b"abc"), method=zipfile.ZIP_BZIP2),
         "the part 'xl/media/image1.png' is compressed in a way Excel never writes"),
    ],
)
def test_a_part_whose_bytes_do_not_match_its_directory_entry_is_damaged(entry, message):
    with pytest.raises(WorkbookError) as caught:
        guard.check(with_part(entry), DEFAULTS)
    assert caught.value.status_code == 422 and message in caught.value.message


def test_parts_no_check_parses_are_inflated_and_counted_too(monkeypatch):
    # GIVEN a valid workbook with an image part of 3 MB
    image = random.Random(7).randbytes(3 * MIB)  # incompressible: within the ratio limit
    data = package(valid_parts() + [honest("xl/media/image1.png", image)])
    counting = CountingInflation()
    monkeypatch.setattr(guard.zlib, "decompressobj", counting.decompressobj)
    # WHEN the guard checks it
    guard.check(data, DEFAULTS)
    # THEN it passes, having inflated every part once: the image included
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        assert counting.bytes_out == sum(info.file_size for info in source.infolist())
