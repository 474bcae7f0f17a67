"""A context variable holding a value for the length of a `with` block (then its previous one)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")


@contextlib.contextmanager
def holding(variable: contextvars.ContextVar[T], value: T) -> Iterator[None]:
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)
