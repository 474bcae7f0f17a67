"""One SQLAlchemy engine per database URL and process, and the unit-of-work helper."""

from __future__ import annotations

import contextlib
import ssl
import threading
import weakref
from collections.abc import Iterator

from sqlalchemy import Connection, Engine, create_engine, event, make_url
from sqlalchemy.orm import Session, sessionmaker

from shared.config import get_settings
from shared.db import pg8000_prepared, sqlite_writes

# How long a SQLite writer waits for the write lock before "database is locked".
SQLITE_BUSY_SECONDS = 30


def _normalise(url: str) -> str:
    # pg8000 is the driver the product ships with; accept plain postgres:// URLs too.
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+pg8000://" + url[len(prefix):]
    return url


def _pg_connect_args(url: str) -> tuple[str, dict]:
    """The URL without libpq's ``sslmode``/``sslrootcert`` and the pg8000 connect args they mean.

    pg8000 takes an ``ssl_context`` rather than libpq's words, and left alone it tries TLS on
    every new connection (building a new default SSL context each time, several ms of CPU) and,
    if the server offers it, encrypts without checking the certificate. Here:

    - ``sslmode=disable``: no TLS; ``prefer``/``allow``: pg8000's default (TLS if offered, not verified);
    - ``require``: TLS or no connection, certificate not verified (libpq's meaning);
    - ``verify-ca`` / ``verify-full``: TLS with the certificate checked against ``sslrootcert``
      (or the system's roots), ``verify-full`` also checking the host name;
    - no ``sslmode`` and a loopback host: no TLS (the bytes never leave the machine); no ``sslmode``
      and any other host: pg8000's default.

    The SSL context is made once per engine, not per connection.
    """
    parsed = make_url(url)
    query = dict(parsed.query)
    mode = query.pop("sslmode", None)
    root_cert = query.pop("sslrootcert", None)
    if mode is None:
        mode = "disable" if (parsed.host or "localhost") in _LOOPBACK else "prefer"
    if mode not in _SSL_MODES:
        raise ValueError(f"sslmode must be one of {', '.join(_SSL_MODES)}")
    args: dict = {}
    if mode == "disable":
        args["ssl_context"] = False
    elif mode in ("require", "verify-ca", "verify-full"):
        context = ssl.create_default_context(cafile=root_cert)
        if mode == "require":
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif mode == "verify-ca":
            context.check_hostname = False
        args["ssl_context"] = context
    return parsed.set(query=query).render_as_string(hide_password=False), args


_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


_engines: dict[str, Engine] = {}
# Each PostgreSQL engine's connect args beyond its URL (TLS), for connections made outside its pool.
_extra_connect_args: weakref.WeakKeyDictionary[Engine, dict] = weakref.WeakKeyDictionary()
_probe_engines: dict[str, Engine] = {}
_factories: dict[str, sessionmaker[Session]] = {}
_lock = threading.Lock()
# Tests only (see bind_sessions): the connection every new session joins, inside a savepoint.
_bound_connection: Connection | None = None
# The configured database's session factory and the settings it was found under (new_session).
_default_factory: tuple[object, sessionmaker[Session]] | None = None


def get_engine(url: str | None = None) -> Engine:
    """The process-wide engine for ``url`` (default: the configured database)."""
    url = _normalise(url or get_settings().effective_database_url)
    with _lock:
        if url not in _engines:
            _engines[url] = _create(url)
        return _engines[url]


def _create(url: str) -> Engine:
    if url.startswith("sqlite"):
        # Pooled as PostgreSQL's (below): with SQLAlchemy's default of five kept, a busy API process
        # opened and closed a connection (and ran its pragmas) for one request in fifteen.
        settings = get_settings()
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_SECONDS},
                               pool_size=settings.database_pool_size, max_overflow=settings.database_max_overflow)
        database = make_url(url).database
        if database and database != ":memory:" and not database.startswith("file:"):
            sqlite_writes.install(engine, database, timeout=SQLITE_BUSY_SECONDS)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            # In WAL mode NORMAL is still durable against an application crash (a power loss may
            # lose the last commits, never corrupt the file), and a commit does not wait for fsync.
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_SECONDS * 1000}")
            cur.close()

        return engine
    # No pre-ping: it would cost every unit of work one round trip more (pg8000 sends ";" at each
    # checkout). A connection the server dropped fails its statement instead, and SQLAlchemy then
    # throws away every pooled connection older than the failure, so after a database restart one
    # unit of work per process fails rather than every one paying for a ping.
    # The pool keeps as many connections as a process runs requests at once (the API's thread
    # pool), so a busy process reuses them: with the old 5 kept and 10 more made and closed
    # around each request, a PostgreSQL server under 16 clients spent its API processes' time
    # opening connections. A Lambda handles one request at a time and opens one.
    settings = get_settings()
    url, connect_args = _pg_connect_args(url)
    engine = create_engine(
        url,
        pool_size=settings.database_pool_size,
        max_overflow=settings.database_max_overflow,
        connect_args=connect_args,
    )
    pg8000_prepared.install(engine)
    _extra_connect_args[engine] = connect_args
    return engine


def dbapi_connect_args(engine: Engine) -> tuple[list, dict]:
    """The driver arguments a connection of ``engine``'s pool is made with (its URL's and the TLS
    ``sslmode`` asked for), for a connection made outside the pool (the completion listener)."""
    cargs, cparams = engine.dialect.create_connect_args(engine.url)
    return list(cargs), {**cparams, **_extra_connect_args.get(engine, {})}


def probe_engine() -> Engine:
    """An engine of one connection for the health probe alone, so it never waits for the requests' pool."""
    url = _normalise(get_settings().effective_database_url)
    with _lock:
        if url not in _probe_engines:
            engine_url, connect_args = url, {}
            if url.startswith("sqlite"):
                connect_args = {"check_same_thread": False}
            elif "+pg8000" in url:
                engine_url, connect_args = _pg_connect_args(url)
                connect_args["timeout"] = 10  # a socket timeout, so a lost server cannot hold it
            _probe_engines[url] = create_engine(engine_url, pool_size=1, max_overflow=0, pool_pre_ping=True,
                                                connect_args=connect_args)
        return _probe_engines[url]


def new_session(url: str | None = None) -> Session:
    """A new session on the configured database."""
    global _default_factory
    if _bound_connection is not None and url is None:
        return Session(bind=_bound_connection, join_transaction_mode="create_savepoint", expire_on_commit=False)
    if url is None:
        # Every request opens a session: the configured database's factory is found once per
        # settings object, not by resolving the URL (a filesystem lookup for SQLite) each time.
        settings, remembered = get_settings(), _default_factory
        if remembered is not None and remembered[0] is settings:
            return remembered[1]()
    engine = get_engine(url)
    key = str(engine.url)
    factory = _factories.get(key)
    if factory is None:
        factory = _factories.setdefault(key, sessionmaker(bind=engine, expire_on_commit=False))
    if url is None:
        _default_factory = (settings, factory)
    return factory()


@contextlib.contextmanager
def session_scope() -> Iterator[Session]:
    """A session that commits when the block succeeds and rolls back when it raises."""
    session = new_session()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


@contextlib.contextmanager
def bind_sessions(connection: Connection) -> Iterator[None]:
    """Tests: within the block, every new session joins ``connection``'s open transaction and its
    commits and rollbacks become savepoint releases and rollbacks, so rolling that transaction
    back afterwards undoes everything (the pattern of pypi/warehouse's tests/conftest.py)."""
    global _bound_connection
    _bound_connection = connection
    try:
        yield
    finally:
        _bound_connection = None


def reset_engines() -> None:
    """Dispose of every engine (tests and the dev command switch databases)."""
    global _default_factory
    with _lock:
        _default_factory = None
        for engine in (*_engines.values(), *_probe_engines.values()):
            engine.dispose()
        _engines.clear()
        _probe_engines.clear()
        _factories.clear()
