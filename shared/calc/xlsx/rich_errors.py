"""The errors Excel 365 saves as rich values: #CALC!, #SPILL! and the other errors newer than
the file format.

A cell holding one is written `<c t="e" vm="N"><v>#VALUE!</v></c>`: `#VALUE!` is only what an
older reader shows; `vm` points through xl/metadata.xml (valueMetadata, then the XLRICHVALUE
future metadata) at a rich value of type `_error` in xl/richData/rdrichvalue.xml, whose
`errorType` key says which error Excel shows. Its numbering is ERROR.TYPE's less one: Excel's
own IronCalc test ERROR.TYPE.xlsx holds a cell of errorType 13 whose ERROR.TYPE Excel saved as
14 (#CALC!) and one of errorType 8 saved as 9 (#SPILL!), and Microsoft's ERROR.TYPE page lists
the rest.
"""

from __future__ import annotations

import zipfile
from xml.etree import ElementTree

from shared.calc.xlsx.package import children, local_name

# ERROR.TYPE's numbering (Microsoft, "ERROR.TYPE function"), from 0
ERROR_TYPES = (
    "#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#GETTING_DATA",
    "#SPILL!", "#CONNECT!", "#BLOCKED!", "#UNKNOWN!", "#FIELD!", "#CALC!",
)
# The errors a cell's <v> holds as they are (the file format's own); the rest are rich values
PLAIN_ERRORS = frozenset(ERROR_TYPES[: ERROR_TYPES.index("#SPILL!")])


def _part(package: zipfile.ZipFile, path: str) -> ElementTree.Element | None:
    wanted = path.lower()
    for name in package.namelist():
        if name.lower() == wanted:
            return ElementTree.fromstring(package.read(name))
    return None


def _rich_value_indexes(metadata: ElementTree.Element) -> dict[int, int]:
    """vm (1-based) -> index of the rich value it points at, for XLRICHVALUE metadata only."""
    types = [t.get("name") for types in children(metadata, "metadataTypes") for t in children(types, "metadataType")]
    future: dict[str, list[int | None]] = {}
    for block in children(metadata, "futureMetadata"):
        indexes: list[int | None] = []
        for bk in children(block, "bk"):
            rvb = next((e for e in bk.iter() if local_name(e.tag) == "rvb"), None)
            indexes.append(int(rvb.get("i")) if rvb is not None and rvb.get("i", "").isdigit() else None)
        future[block.get("name", "")] = indexes
    out: dict[int, int] = {}
    for block in children(metadata, "valueMetadata"):
        for vm, bk in enumerate(children(block, "bk"), start=1):
            rc = next(iter(children(bk, "rc")), None)
            if rc is None:
                continue
            t, v = int(rc.get("t", "0")), int(rc.get("v", "0"))
            name = types[t - 1] if 1 <= t <= len(types) else None
            indexes = future.get(name or "", [])
            if name == "XLRICHVALUE" and 0 <= v < len(indexes) and indexes[v] is not None:
                out[vm] = indexes[v]
    return out


def rich_errors(package: zipfile.ZipFile) -> dict[int, str]:
    """vm index -> the error Excel shows, for every cell value metadata that is a rich error;
    empty when the package has none or they cannot be read (the cached #VALUE! then stands)."""
    try:
        metadata = _part(package, "xl/metadata.xml")
        values = _part(package, "xl/richData/rdrichvalue.xml")
        structures = _part(package, "xl/richData/rdrichvaluestructure.xml")
        if metadata is None or values is None or structures is None:
            return {}
        keys = [
            (s.get("t"), [k.get("n") for k in children(s, "k")]) for s in children(structures, "s")
        ]
        errors: dict[int, str] = {}
        for index, rv in enumerate(children(values, "rv")):
            kind, names = keys[int(rv.get("s", "0"))]
            if kind != "_error" or "errorType" not in names:
                continue
            fields = [e.text or "" for e in children(rv, "v")]
            position = names.index("errorType")
            if position < len(fields) and fields[position].strip().isdigit():
                code = int(fields[position])
                if code < len(ERROR_TYPES):
                    errors[index] = ERROR_TYPES[code]
        return {vm: errors[i] for vm, i in _rich_value_indexes(metadata).items() if i in errors}
    except (ElementTree.ParseError, ValueError, IndexError, KeyError, zipfile.BadZipFile):
        return {}
