"""Fixtures of the client's unit tests (the fakes are in client_fakes.py)."""

import pytest

from client_fakes import FakeClock, FakeService


@pytest.fixture()
def service() -> FakeService:
    return FakeService()


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock()
