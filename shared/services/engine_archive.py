"""The engine export archive: its format, written and read back with every check a file from
outside needs (no database here: the service and the library ``sheetcalc.Engine`` both read it).

A zip holding ``manifest.json`` and one ``versions/<n>/workbook.xlsx`` per version. The manifest
names its format and version, the engine's slug, name and description, each version's label,
file name, SHA-256, schemas, engine choice (and whether it was pinned) and fidelity report,
which version is active, and the engine's test cases when the service has them. It never holds
API keys, consumers or their access, webhook secrets, the IP whitelist (an address list belongs
to the environment it was written for) or jobs.

Reading refuses, before anything is created: a file that is not a zip (400), an entry that
inflates past its limit (400, read at most limit + 1 bytes, whatever the entry declares), a
workbook whose bytes do not match the manifest's SHA-256 (400: the archive was changed), and a
manifest that is not this format (422, naming the field).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any

from shared import __version__
from shared.errors import BadRequest, Invalid, PayloadTooLarge

FORMAT = "sheetcalc-engine-export"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
MANIFEST_MAX_BYTES = 8 * 1024 * 1024
MAX_VERSIONS = 200
SLUG = re.compile(r"^[a-z0-9-]{1,100}$")
# What an export leaves out, and says so in its manifest.
EXCLUDED = [
    "API keys (consumers' and versions' test keys)",
    "consumers and their access to the engine",
    "webhook signing secrets",
    "the IP whitelist (addresses belong to the environment they were written for)",
    "jobs and their history",
]


class ArchiveRefused(BadRequest):
    """The file is not an intact engine export (400)."""


@dataclass
class ArchivedVersion:
    """One version as the archive carries it."""

    version: str
    filename: str
    workbook: bytes
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    calc_engine: str = "ironcalc"
    calc_engine_pinned: bool = False
    fidelity_report: dict[str, Any] | None = None


@dataclass
class Archive:
    """An engine as the archive carries it."""

    slug: str
    name: str
    description: str | None
    versions: list[ArchivedVersion]
    active_version: str | None = None
    # None: the exporting service kept no test cases (or the archive predates them).
    test_cases: list[dict[str, Any]] | None = None
    exported_from: dict[str, Any] = field(default_factory=dict)

    def version(self, label: str | None = None) -> ArchivedVersion:
        """The version labelled ``label``, or the active one (the last one when none is active)."""
        label = label or self.active_version
        if label is None:
            if not self.versions:
                raise Invalid("The archive holds no version")
            return self.versions[-1]
        for version in self.versions:
            if version.version == label:
                return version
        raise Invalid(f"The archive holds no version '{label}'")


def write(archive: Archive) -> bytes:
    """The archive as zip bytes."""
    versions = []
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for index, version in enumerate(archive.versions):
            path = f"versions/{index}/workbook.xlsx"
            zf.writestr(path, version.workbook)
            versions.append({
                "version": version.version,
                "filename": version.filename,
                "workbook": path,
                "sha256": hashlib.sha256(version.workbook).hexdigest(),
                "size": len(version.workbook),
                "input_schema": version.input_schema,
                "output_schema": version.output_schema,
                "calc_engine": version.calc_engine,
                "calc_engine_pinned": version.calc_engine_pinned,
                "fidelity_report": version.fidelity_report,
            })
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "exported_from": {"sheetcalc_version": __version__, **archive.exported_from},
            "engine": {"slug": archive.slug, "name": archive.name, "description": archive.description},
            "active_version": archive.active_version,
            "versions": versions,
            "test_cases": archive.test_cases,
            "excluded": EXCLUDED,
        }
        zf.writestr(MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False))
    return buffer.getvalue()


def read(data: bytes, *, max_workbook_bytes: int) -> Archive:
    """The archive in ``data``; ArchiveRefused (400) or Invalid (422) naming what is wrong."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError):
        raise ArchiveRefused("The file is not a sheetcalc engine export: it is not a zip archive") from None
    with zf:
        if len(zf.infolist()) > 2 * MAX_VERSIONS + 10:
            raise ArchiveRefused("The archive holds more files than an engine export does")
        manifest = _manifest(zf)
        engine = _object(manifest, "engine", "engine")
        slug = _text(engine, "slug", "engine.slug", 100)
        if not SLUG.match(slug):
            raise Invalid("engine.slug in manifest.json must be lower-case letters, digits and dashes")
        versions = [_version(zf, entry, i, max_workbook_bytes)
                    for i, entry in enumerate(_list(manifest, "versions", "versions", MAX_VERSIONS))]
        labels = [v.version for v in versions]
        if len(set(labels)) != len(labels):
            raise Invalid("versions in manifest.json repeat a version label")
        active = manifest.get("active_version")
        if active is not None and active not in labels:
            raise Invalid(f"active_version '{active}' in manifest.json is not one of the archive's versions")
        test_cases = manifest.get("test_cases")
        if test_cases is not None and not (isinstance(test_cases, list) and all(isinstance(t, dict) for t in test_cases)):
            raise Invalid("test_cases in manifest.json must be a list of objects")
        exported_from = manifest.get("exported_from")
        return Archive(
            slug=slug,
            name=_text(engine, "name", "engine.name", 255),
            description=_optional_text(engine, "description", "engine.description"),
            versions=versions,
            active_version=active,
            test_cases=test_cases,
            exported_from=exported_from if isinstance(exported_from, dict) else {},
        )


def _entry(zf: zipfile.ZipFile, name: str, limit: int, what: str) -> bytes:
    try:
        with zf.open(name) as stream:
            data = stream.read(limit + 1)
    except KeyError:
        raise ArchiveRefused(f"The archive has no {name} ({what}): it is not a complete sheetcalc engine export") from None
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        # A changed byte fails the entry's CRC; an encrypted entry asks for a password.
        raise ArchiveRefused(f"The archive's {name} is damaged ({type(exc).__name__}): export the engine again") from None
    if len(data) > limit:
        raise PayloadTooLarge(f"The archive's {name} is larger than the {limit:,} byte limit for {what}")
    return data


def _manifest(zf: zipfile.ZipFile) -> dict[str, Any]:
    raw = _entry(zf, MANIFEST, MANIFEST_MAX_BYTES, "the manifest")
    try:
        manifest = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ArchiveRefused("The archive's manifest.json is not JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise Invalid(f"manifest.json is not a sheetcalc engine export (its format must be '{FORMAT}')")
    version = manifest.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise Invalid("format_version in manifest.json must be a positive integer")
    if version > FORMAT_VERSION:
        raise Invalid(
            f"The archive's format version {version} is newer than this service reads ({FORMAT_VERSION}): "
            "import it into a service of the same release or newer"
        )
    return manifest


def _version(zf: zipfile.ZipFile, entry: Any, index: int, max_workbook_bytes: int) -> ArchivedVersion:
    where = f"versions[{index}]"
    if not isinstance(entry, dict):
        raise Invalid(f"{where} in manifest.json must be an object")
    label = _text(entry, "version", f"{where}.version", 100)
    path = _text(entry, "workbook", f"{where}.workbook", 300)
    digest = _text(entry, "sha256", f"{where}.sha256", 64)
    workbook = _entry(zf, path, max_workbook_bytes, f"the workbook of version '{label}'")
    if hashlib.sha256(workbook).hexdigest() != digest.lower():
        raise ArchiveRefused(
            f"The workbook of version '{label}' does not match its SHA-256 in manifest.json: the archive was changed"
        )
    schemas = {}
    for name in ("input_schema", "output_schema", "fidelity_report"):
        value = entry.get(name)
        if value is not None and not isinstance(value, dict):
            raise Invalid(f"{where}.{name} in manifest.json must be an object or null")
        schemas[name] = value
    pinned = entry.get("calc_engine_pinned", False)
    if not isinstance(pinned, bool):
        raise Invalid(f"{where}.calc_engine_pinned in manifest.json must be true or false")
    return ArchivedVersion(
        version=label,
        filename=_optional_text(entry, "filename", f"{where}.filename") or "workbook.xlsx",
        workbook=workbook,
        calc_engine=_text(entry, "calc_engine", f"{where}.calc_engine", 32),
        calc_engine_pinned=pinned,
        **schemas,
    )


def _object(parent: dict, key: str, where: str) -> dict:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise Invalid(f"{where} in manifest.json must be an object")
    return value


def _list(parent: dict, key: str, where: str, most: int) -> list:
    value = parent.get(key)
    if not isinstance(value, list):
        raise Invalid(f"{where} in manifest.json must be a list")
    if len(value) > most:
        raise Invalid(f"{where} in manifest.json holds more than {most} entries")
    return value


def _text(parent: dict, key: str, where: str, longest: int) -> str:
    value = parent.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > longest or "\x00" in value:
        raise Invalid(f"{where} in manifest.json must be text of 1 to {longest} characters")
    return value


def _optional_text(parent: dict, key: str, where: str) -> str | None:
    value = parent.get(key)
    if value is not None and (not isinstance(value, str) or "\x00" in value):
        raise Invalid(f"{where} in manifest.json must be text or null")
    return value
