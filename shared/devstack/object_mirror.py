"""The dev stack's S3 objects on disk, so that ``sheetcalc dev`` killed and restarted loses none.

moto keeps S3 in memory. While an ``ObjectMirror`` is attached to the dev bucket, every object moto
stores in it is written to ``<dir>/<quoted key>`` before moto answers the PUT (an object the
service was told is stored is on disk), and removed when moto deletes it; at the next start
``restore`` loads them all back into moto before anything reads the bucket.

A write is a temporary file renamed over the old one, so a kill leaves the previous object or the
new one, never half of either. Content types are given back from the key, as the service stores
them (``.xlsx`` workbooks and results; prepared models are octet streams).

Only the dev stack uses this (moto's S3 backend is wrapped once per process; buckets without a
mirror are untouched); on AWS, S3 is durable by itself.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from urllib.parse import quote, unquote

from moto.core import DEFAULT_ACCOUNT_ID
from moto.s3.models import S3Backend, s3_backends

log = logging.getLogger(__name__)

XLSX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_TMP_SUFFIX = ".partial"

_mirrors: dict[str, "ObjectMirror"] = {}
_install_lock = threading.Lock()
_installed = False


def _content_type(key: str) -> str:
    return XLSX_CONTENT_TYPE if key.endswith(".xlsx") else "application/octet-stream"


class ObjectMirror:
    """One bucket's objects as files in ``directory`` (one file per key)."""

    def __init__(self, bucket: str, directory: Path):
        self.bucket = bucket
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        name = quote(key, safe="")
        if len(name.encode()) > 240:
            raise ValueError("object key too long for the dev stack's object mirror")
        return self.directory / name

    def write(self, key: str, data: bytes) -> None:
        target = self.path(key)
        partial = target.with_name(target.name + _TMP_SUFFIX)
        with open(partial, "wb") as file:
            file.write(data)
        os.replace(partial, target)

    def remove(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)

    def keys(self) -> list[str]:
        return sorted(unquote(p.name) for p in self.directory.iterdir() if not p.name.endswith(_TMP_SUFFIX))

    def restore(self) -> int:
        """Put every stored object back into moto's bucket; returns how many."""
        backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
        for leftover in self.directory.glob("*" + _TMP_SUFFIX):
            leftover.unlink()  # a write the kill interrupted: its object was never acknowledged
        restored = 0
        for key in self.keys():
            new_key = backend.put_object(self.bucket, key, self.path(key).read_bytes(), disable_notification=True)
            new_key.set_metadata({"Content-Type": _content_type(key)})
            restored += 1
        return restored

    def attach(self) -> None:
        """From now on, mirror every PUT and DELETE of the bucket."""
        _install()
        _mirrors[self.bucket] = self

    def detach(self) -> None:
        if _mirrors.get(self.bucket) is self:
            del _mirrors[self.bucket]


def _install() -> None:
    """Wrap moto's S3 backend once: objects of mirrored buckets also go to (or leave) the disk."""
    global _installed
    with _install_lock:
        if _installed:
            return
        original_put, original_delete = S3Backend.put_object, S3Backend.delete_object

        def put_object(self, bucket_name, key_name, value, *args, **kwargs):
            new_key = original_put(self, bucket_name, key_name, value, *args, **kwargs)
            mirror = _mirrors.get(bucket_name)
            if mirror is not None:
                mirror.write(key_name, new_key.value)
            return new_key

        def delete_object(self, bucket_name, key_name, *args, **kwargs):
            result = original_delete(self, bucket_name, key_name, *args, **kwargs)
            mirror = _mirrors.get(bucket_name)
            if mirror is not None and key_name not in self.get_bucket(bucket_name).keys:
                mirror.remove(key_name)
            return result

        S3Backend.put_object, S3Backend.delete_object = put_object, delete_object
        _installed = True
