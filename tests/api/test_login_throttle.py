"""Login throttling: wrong passwords lock an account, or an address, out for a while (429).

The throttle's clock is injected (``clock``); no test waits for real time to pass.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from fastapi.testclient import TestClient

from shared.api.app import create_app
from shared.services import login_throttle
from tests.envtools import Clock
from tests.factories import create_tenant, sign_in

WRONG = "not the password at all"
INVALID = {"detail": "Invalid email or password"}


def locked_out(seconds: int) -> dict:
    return {"detail": f"Too many failed login attempts. Try again in {seconds} seconds."}


@pytest.fixture()
def clock(monkeypatch) -> Clock:
    moved = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc))
    monkeypatch.setattr(login_throttle, "utcnow", moved)
    return moved


@pytest.fixture()
def account(client):
    """A tenant administrator with a known password: (email, password)."""
    admin = sign_in(client, create_tenant())
    return admin.email, admin.password


def login(client, email: str, password: str):
    return client.post("/auth/login", json={"email": email, "password": password})


def from_address(app, address: str) -> TestClient:
    return TestClient(app, client=(address, 50000))


def test_after_ten_wrong_passwords_even_the_right_one_is_refused_with_429(client, account, clock):
    email, password = account
    # GIVEN the default settings, and ten wrong passwords for one account
    for _ in range(10):
        assert login(client, email, WRONG).json() == INVALID

    # WHEN the right password comes next
    r = login(client, email, password)

    # THEN it is refused for the lockout (15 minutes from the latest failure), and says when to retry
    assert (r.status_code, r.json()) == (429, locked_out(900))
    assert r.headers["Retry-After"] == "900"
    assert "auth_token" not in r.cookies


def test_the_lockout_is_shared_by_every_api_process_and_ends_on_time(client, account, clock, configure):
    configure(login_max_failures=3, login_lockout_seconds=600)
    email, password = account
    # GIVEN three failures through one API process
    for _ in range(3):
        assert login(client, email, WRONG).json() == INVALID

    # WHEN another process (another Lambda) is asked, five minutes later
    clock.advance(300)
    with TestClient(create_app()) as other:
        r = login(other, email, password)
    # THEN it knows: the count is in the database
    assert (r.status_code, r.headers["Retry-After"]) == (429, "300")
    assert r.json() == locked_out(300)

    # AND once the lockout has passed, the right password works again
    clock.advance(301)
    assert login(client, email, password).status_code == 200


def test_a_refused_attempt_does_not_extend_the_lockout(client, account, clock, configure):
    configure(login_max_failures=2, login_lockout_seconds=60)
    email, password = account
    login(client, email, WRONG)
    login(client, email, WRONG)
    clock.advance(30)
    # WHEN more attempts come during the lockout THEN they are refused without being counted
    assert login(client, email, WRONG).json() == locked_out(30)
    clock.advance(31)
    assert login(client, email, password).status_code == 200


def test_a_successful_login_clears_the_accounts_failures(client, account, clock, configure):
    configure(login_max_failures=3)
    email, password = account
    # GIVEN two failures, then a success
    login(client, email, WRONG)
    login(client, email, WRONG)
    assert login(client, email, password).status_code == 200
    # WHEN two more failures follow THEN the right password still works: the count started again
    login(client, email, WRONG)
    login(client, email, WRONG)
    assert login(client, email, password).status_code == 200


def test_failures_further_apart_than_the_lockout_never_add_up(client, account, clock, configure):
    configure(login_max_failures=3, login_lockout_seconds=60)
    email, password = account
    for _ in range(5):
        assert login(client, email, WRONG).status_code == 401
        clock.advance(61)
    assert login(client, email, password).status_code == 200


def test_unknown_accounts_are_throttled_alike_so_a_429_reveals_nothing(client, clock, configure):
    configure(login_max_failures=2)
    for _ in range(2):
        assert login(client, "nobody@nowhere.example", WRONG).json() == INVALID
    r = login(client, "nobody@nowhere.example", WRONG)
    assert (r.status_code, r.json()) == (429, locked_out(900))


def test_the_account_is_the_same_whatever_the_case_of_its_address(client, account, clock, configure):
    configure(login_max_failures=2)
    email, password = account
    login(client, email.upper(), WRONG)
    login(client, f"  {email}", WRONG)
    assert login(client, email, password).status_code == 429


def test_one_address_guessing_at_many_accounts_is_locked_out_but_not_other_addresses(app, account, clock, configure):
    configure(login_max_failures_per_address=4)
    email, password = account
    with from_address(app, "198.51.100.20") as attacker, from_address(app, "198.51.100.21") as colleague:
        # GIVEN one address that tried four accounts' passwords, one wrong guess each
        for n in range(4):
            assert login(attacker, f"user{n}@elsewhere.example", WRONG).status_code == 401

        # WHEN it tries a fifth account, even with that account's right password
        r = login(attacker, email, password)

        # THEN it is refused for the address's lockout
        assert (r.status_code, r.json()) == (429, locked_out(900))
        # AND the same account logs in from another address, its own count untouched
        assert login(colleague, email, password).status_code == 200


def test_a_valid_login_does_not_clear_its_addresss_failures(app, account, clock, configure):
    configure(login_max_failures_per_address=3)
    email, password = account
    with from_address(app, "198.51.100.30") as attacker:
        login(attacker, "a@elsewhere.example", WRONG)
        login(attacker, "b@elsewhere.example", WRONG)
        assert login(attacker, email, password).status_code == 200
        login(attacker, "c@elsewhere.example", WRONG)
        assert login(attacker, "d@elsewhere.example", WRONG).status_code == 429


def test_zero_turns_the_throttle_off(client, account, clock, configure):
    configure(login_max_failures=0, login_max_failures_per_address=0)
    email, password = account
    for _ in range(30):
        login(client, email, WRONG)
    assert login(client, email, password).status_code == 200


def test_the_openapi_document_describes_the_429_and_its_retry_after(client):
    answers = client.get("/openapi.json").json()["paths"]["/auth/login"]["post"]["responses"]
    assert "Retry-After" in answers["429"]["headers"]


def test_expired_counts_are_cleared_as_new_failures_come(client, clock):
    from sqlalchemy import select

    from shared.db.models import ThrottleCounter
    from shared.db.session import session_scope

    # GIVEN failures for five made-up accounts, and the lockout period passed
    for n in range(5):
        login(client, f"ghost{n}@nowhere.example", WRONG)
    clock.advance(901)
    # WHEN another failure comes THEN only its own account's and its address's counts are left
    # (of the sign-in counts: the table also holds API keys' request counts, which run on their own windows)
    login(client, "late-ghost@nowhere.example", WRONG)
    with session_scope() as session:
        keys = session.scalars(select(ThrottleCounter.key)).all()
        assert len([key for key in keys if not key.startswith("rate:")]) == 2, keys
