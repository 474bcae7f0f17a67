"""A PostgreSQL URL's libpq ``sslmode`` decides whether and how pg8000 uses TLS.

pg8000 does not read libpq's URL words; left alone it tries TLS on every connection and, when the
server offers it, encrypts without checking the certificate. The service reads ``sslmode`` and
``sslrootcert`` itself (shared/db/session.py), so an operator can demand a verified connection.
"""

import os
import ssl

import pg8000
import pytest
import sqlalchemy

from shared.db.session import _pg_connect_args

ON_POSTGRES = os.environ.get("SHEETCALC_TEST_DATABASE_URL")  # as tests/conftest.py chooses


def test_a_loopback_host_without_sslmode_connects_without_tls():
    url, args = _pg_connect_args("postgresql+pg8000://app@127.0.0.1:5432/db")
    assert args == {"ssl_context": False}
    assert url == "postgresql+pg8000://app@127.0.0.1:5432/db"


def test_another_host_without_sslmode_keeps_pg8000s_default():
    assert _pg_connect_args("postgresql+pg8000://app@db.example.com/db")[1] == {}


def test_sslmode_and_sslrootcert_are_taken_off_the_url_the_driver_sees():
    url, args = _pg_connect_args("postgresql+pg8000://app:pw@db.example.com/db?sslmode=require&application_name=x")
    assert url == "postgresql+pg8000://app:pw@db.example.com/db?application_name=x"
    context = args["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_NONE and not context.check_hostname


def test_verify_full_checks_the_certificate_and_the_host_name():
    context = _pg_connect_args("postgresql+pg8000://app@db.example.com/db?sslmode=verify-full")[1]["ssl_context"]
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_verify_ca_checks_the_certificate_but_not_the_host_name():
    context = _pg_connect_args("postgresql+pg8000://app@db.example.com/db?sslmode=verify-ca")[1]["ssl_context"]
    assert context.verify_mode == ssl.CERT_REQUIRED and not context.check_hostname


def test_disable_on_a_remote_host_turns_tls_off():
    assert _pg_connect_args("postgresql+pg8000://app@db.example.com/db?sslmode=disable")[1] == {"ssl_context": False}


def test_an_unknown_sslmode_is_refused_by_name():
    with pytest.raises(ValueError, match="sslmode must be one of"):
        _pg_connect_args("postgresql+pg8000://app@db.example.com/db?sslmode=always")


@pytest.mark.skipif(not ON_POSTGRES, reason="PostgreSQL: run with SHEETCALC_TEST_DATABASE_URL")
def test_require_never_falls_back_to_plain_text():
    url, args = _pg_connect_args(ON_POSTGRES + "?sslmode=require")
    engine = sqlalchemy.create_engine(url, connect_args=args)
    try:
        with engine.connect() as connection:
            tls_on = connection.exec_driver_sql("SHOW ssl").scalar() == "on"
    except sqlalchemy.exc.DBAPIError as error:  # the server here runs without TLS
        assert isinstance(error.orig, pg8000.InterfaceError) and "refuses SSL" in str(error.orig)
    else:
        assert tls_on, "connected with sslmode=require to a server that has TLS off"
    finally:
        engine.dispose()


def test_a_connection_made_outside_the_pool_asks_for_the_same_tls():
    # GIVEN an engine for a URL that requires TLS (made, not connected)
    from shared.db.session import dbapi_connect_args, get_engine

    engine = get_engine("postgresql+pg8000://app@db.example.com/db?sslmode=verify-full")
    try:
        # WHEN the arguments for a connection outside its pool are asked for (the completion listener's)
        _, params = dbapi_connect_args(engine)
    finally:
        engine.dispose()

    # THEN they carry the verifying SSL context, not pg8000's unverified default
    assert params["host"] == "db.example.com" and params["database"] == "db"
    assert isinstance(params["ssl_context"], ssl.SSLContext)
    assert params["ssl_context"].verify_mode == ssl.CERT_REQUIRED and params["ssl_context"].check_hostname
