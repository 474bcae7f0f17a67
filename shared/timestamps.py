"""The text form of a timestamp wherever the service writes one outside its response models:
the same form the API's models give (pydantic's JSON form of an aware UTC datetime,
``2026-11-23T14:23:09.123456Z``), so a webhook and a poll of the same job agree to the character."""

from __future__ import annotations

from datetime import datetime, timezone

from pydantic import TypeAdapter

_AS_API_WRITES_IT = TypeAdapter(datetime)


def iso_utc(value: datetime | None) -> str | None:
    """``value`` in UTC, as the API writes it (``...Z``); None stays None."""
    if value is None:
        return None
    return _AS_API_WRITES_IT.dump_python(value.astimezone(timezone.utc), mode="json")
