"""ModelCache: a bounded, thread-safe LRU of loaded Workbooks with a lock per workbook."""

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from shared.calc.base import Workbook


class _Entry:
    __slots__ = ("workbook", "loading", "busy")

    def __init__(self) -> None:
        self.workbook: Workbook | None = None
        self.loading = threading.Lock()  # one loader per key, without blocking other keys
        self.busy = threading.Lock()  # one calculation at a time on this Workbook


class ModelCache:
    """Loaded Workbooks keyed by version id, least recently used evicted beyond `max_entries`.

    A Workbook is mutable: use `checkout` (not `get_or_load`) around calculate/to_xlsx so two
    jobs on the same version never interleave. An evicted Workbook stays valid for whoever
    still holds it.
    """

    def __init__(self, max_entries: int = 16):
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_load(self, key: str, loader: Callable[[], Workbook]) -> Workbook:
        """The cached Workbook for `key`, calling `loader` once when it is missing."""
        return self._entry(key, loader).workbook

    @contextmanager
    def checkout(self, key: str, loader: Callable[[], Workbook]) -> Iterator[Workbook]:
        """Hold the Workbook for `key` exclusively for the duration of the block."""
        entry = self._entry(key, loader)
        with entry.busy:
            yield entry.workbook

    def evict(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def keys(self) -> list[str]:
        """Cached keys, least recently used first."""
        with self._lock:
            return [k for k, e in self._entries.items() if e.workbook is not None]

    def __contains__(self, key: str) -> bool:
        with self._lock:
            entry = self._entries.get(key)
            return entry is not None and entry.workbook is not None

    def __len__(self) -> int:
        return len(self.keys())

    def _entry(self, key: str, loader: Callable[[], Workbook]) -> _Entry:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry()
            self._entries.move_to_end(key)
        if entry.workbook is None:
            with entry.loading:
                if entry.workbook is None:
                    try:
                        entry.workbook = loader()
                    except BaseException:
                        with self._lock:
                            if self._entries.get(key) is entry:
                                del self._entries[key]
                        raise
        with self._lock:
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return entry
