"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

import enum
from datetime import datetime, timezone

from sqlalchemy import DateTime, String
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC datetimes; stored naive in UTC so SQLite and PostgreSQL agree."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(timezone.utc).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect):
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc)


class StrEnumText(TypeDecorator):
    """A ``StrEnum`` stored as its plain string value (VARCHAR, no database enum type), read back as the enum."""

    impl = String
    cache_ok = True

    def __init__(self, enum_class: type[enum.StrEnum], length: int):
        super().__init__(length)
        self.enum_class = enum_class

    def process_bind_param(self, value: str | None, dialect):
        # Plain strings are accepted too (a status filter from a query), but only the enum's values.
        return None if value is None else self.enum_class(value).value

    def process_result_value(self, value: str | None, dialect):
        return None if value is None else self.enum_class(value)


def utcnow() -> datetime:
    """Now, in UTC, timezone-aware."""
    return datetime.now(timezone.utc)
