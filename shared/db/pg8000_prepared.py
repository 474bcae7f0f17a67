"""PostgreSQL through pg8000: each statement text prepared once per connection, then run in one
round trip; commits and rollbacks in one.

pg8000 runs a statement with parameters as an unnamed statement in three round trips (Parse,
Describe, then Bind and Execute: it waits for the server after each), after rewriting its
placeholders by scanning the SQL text character by character each time (about 0.4 µs a
character: 0.2 ms for a 450-character SELECT), and the server parses and plans it again each
time; a commit is three round trips too. SQLAlchemy sends the same few dozen statement texts over
and over, so on each connection a text is prepared once (a named server-side statement, pg8000's
own ``prepare_statement``) and every execution is pg8000's ``execute_named``: one round trip, no
rewriting, no parse. Commit and rollback are sent as simple queries (one round trip). The BEGIN
that opens a transaction (pg8000 sends it alone and waits for it, a round trip of its own) goes
in the same write as the transaction's first prepared statement, and both answers are read
after it (``_begin_and_execute``): a transaction costs its statements and its COMMIT.

Each connection's socket sends what is written at once (``TCP_NODELAY``, as libpq sets it):
pg8000 leaves Nagle's algorithm on, and a message longer than its 8 KB write buffer (a batch's
rollups, bound in one statement) went out in two writes, the second held back until the server's
delayed ACK: 40 ms per batch of ten on PostgreSQL. Unix sockets have no Nagle and are left alone.

Timestamps are read with ``datetime.fromisoformat`` (``_timestamps_read_fast``): pg8000 reads each
with ``strptime`` (12 µs a value here, 0.1 µs this way), a job's row has several and every read
or claim of one brings them; what ``fromisoformat`` does not take (BC dates, infinity, years past
9999) goes to pg8000's own reader, so the values are pg8000's.

Installed per engine by ``install`` (SQLAlchemy's ``connect`` and ``do_execute`` events; the
dialect's commit and rollback): statements without parameters and ``executemany`` keep pg8000's own path,
and so does everything when this pg8000 lacks what is used here (then nothing is installed).
Prepared statements are per connection and outlive transactions; a connection keeps at most
``MAX_PREPARED`` of them (further texts run the unnamed way).
"""

from __future__ import annotations

import socket
from datetime import datetime

from sqlalchemy import Engine, event

MAX_PREPARED = 256
_CACHE = "_sheetcalc_prepared"  # attribute of the pg8000 connection: statement text -> prepared

try:
    import pg8000
    from pg8000.converters import make_params
    from pg8000.core import SYNC_MSG, Context, CoreConnection
    from pg8000.exceptions import DatabaseError
    from pg8000.legacy import convert_paramstyle

    _USABLE = all(hasattr(CoreConnection, name) for name in ("prepare_statement", "execute_named", "execute_simple"))
except ImportError:  # pragma: no cover - the product ships pg8000
    _USABLE = False

try:  # pg8000's readers of timestamp and timestamptz, by type oid
    from pg8000 import converters as _converters

    _TIMESTAMP_READERS = {oid: _converters.PG_TYPES[oid] for oid in (_converters.TIMESTAMP, _converters.TIMESTAMPTZ)}
except (ImportError, AttributeError, KeyError):  # pragma: no cover - then pg8000 reads them itself
    _TIMESTAMP_READERS = {}


def install(engine: Engine) -> bool:
    """Run ``engine``'s statements as prepared statements, its commits and rollbacks as simple
    queries, when it is a pg8000 engine this module can drive; whether it did."""
    if engine.dialect.driver != "pg8000":
        return False
    event.listen(engine, "connect", _no_delay)
    event.listen(engine, "connect", _timestamps_read_fast)
    if not _USABLE:
        return False
    event.listen(engine, "do_execute", _execute)
    dialect = engine.dialect
    dialect.do_commit = _commit
    dialect.do_rollback = _rollback
    return True


def _no_delay(dbapi_connection, _record=None) -> None:
    sock = getattr(dbapi_connection, "_usock", None)
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _fast(pg8000_reader):
    def read(text: str):
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            return pg8000_reader(text)

    return read


def _timestamps_read_fast(dbapi_connection, _record=None) -> None:
    """``timestamp`` and ``timestamptz`` values read by ``datetime.fromisoformat``, anything it
    does not take by pg8000's own reader (on this connection: ``register_in_adapter``)."""
    register = getattr(dbapi_connection, "register_in_adapter", None)
    if register is None or not _TIMESTAMP_READERS:
        return
    for oid, pg8000_reader in _TIMESTAMP_READERS.items():
        register(oid, _fast(pg8000_reader))


def _commit(dbapi_connection) -> None:
    try:
        dbapi_connection.execute_simple("commit")
    except OSError as exc:
        raise _network_error() from exc


def _rollback(dbapi_connection) -> None:
    if dbapi_connection._in_transaction:
        try:
            dbapi_connection.execute_simple("rollback")
        except OSError as exc:
            raise _network_error() from exc


def _network_error() -> Exception:
    # What pg8000's own paths raise for a broken socket, and what SQLAlchemy's pg8000 dialect takes
    # for a disconnect (it then renews the pool). A raw ConnectionResetError would not be: the
    # pool would keep handing out dead connections (seen in CI after the server ended them).
    return pg8000.InterfaceError("network error")


def _prepare(conn, paramstyle: str, statement: str, parameters):
    """Prepare a statement text new to this connection and keep it (None once ``MAX_PREPARED`` are kept)."""
    cache = conn.__dict__.setdefault(_CACHE, {})
    if len(cache) >= MAX_PREPARED:
        return None
    sql, _ = convert_paramstyle(paramstyle, statement, parameters)
    name, columns, input_funcs = conn.prepare_statement(sql, ())
    cache[statement] = (name, columns, input_funcs, sql)
    return cache[statement]


def _begin_and_execute(conn, name, params, columns, input_funcs, sql):
    """BEGIN (a simple query) and the prepared statement in one write; both answers read, the
    first error raised once both are (the connection is left in step with the server). A BEGIN
    fails only on a connection that is failing anyway (the server ending it), and then so does
    the statement after it."""
    began = Context("begin transaction")
    began.pipelined = True  # tests/statement_counter.py: read in the same round trip as the next
    context = Context(columns=columns, input_funcs=input_funcs, statement=sql)
    conn.send_QUERY("begin transaction")
    conn.send_BIND(name, params)
    conn.send_EXECUTE()
    conn._sock.write(SYNC_MSG)
    conn._sock.flush()
    errors = []
    for answer in (began, context):
        try:
            conn.handle_messages(answer)
        except DatabaseError as exc:
            errors.append(exc)
    if errors:
        raise errors[0]
    return context


def _execute(cursor, statement, parameters, context):
    if not parameters:
        return None  # pg8000's simple query: one round trip already
    conn = cursor._c
    try:
        begin = not conn._in_transaction and not conn.autocommit
        prepared = conn.__dict__.get(_CACHE, {}).get(statement)
        if prepared is None:
            if begin:  # a text new to this connection: BEGIN first, alone, as pg8000 would
                conn.execute_simple("begin transaction")
                begin = False
            prepared = _prepare(conn, cursor.paramstyle, statement, parameters)
            if prepared is None:
                return None
        name, columns, input_funcs, sql = prepared
        params = make_params(conn.py_types, parameters)
        if begin:
            result = _begin_and_execute(conn, name, params, columns, input_funcs, sql)
        else:
            result = conn.execute_named(name, params, columns, input_funcs, sql)
    except DatabaseError as exc:
        raise _as_cursor_raises(exc) from exc
    except OSError as exc:  # the socket broke mid-statement (ConnectionResetError, BrokenPipeError, ...)
        raise _network_error() from exc
    except AttributeError:
        if conn is None or conn._sock is None:
            raise pg8000.InterfaceError("connection is closed") from None
        raise
    cursor._context = result
    cursor._row_iter = iter(() if result.rows is None else result.rows)
    cursor._input_oids = ()
    return True


def _as_cursor_raises(exc: DatabaseError) -> Exception:
    # The exception pg8000's cursor would have raised (SQLAlchemy maps these classes).
    message = exc.args[0] if exc.args else None
    if not isinstance(message, dict):
        return pg8000.ProgrammingError(message)
    code = message.get("C")
    if code == "28000":
        return pg8000.InterfaceError(message)
    if code == "23505":
        return pg8000.IntegrityError(message)
    return pg8000.ProgrammingError(message)
