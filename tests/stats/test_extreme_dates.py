"""Statistics bounds at the ends of the calendar: every date Python can hold is answered, on
every statistics endpoint, with figures (200) or a validation error (422), never a server error.

The tenant has one job on the calendar's first instant and one on its last, so the answers also
show that the bounds are compared as instants on both databases, whole days and partial days alike.
"""

from __future__ import annotations

import itertools
import uuid

import pytest

from shared.db.session import session_scope
from tests.stats.test_stats import Ref, add_consumer, add_engine, add_job, add_version

FIRST_INSTANT = "0001-01-01T00:00:00"
LAST_INSTANT = "9999-12-31T23:59:59.999999"


@pytest.fixture()
def edges(admin):
    """GIVEN a tenant whose only jobs were created at the calendar's first and last instants."""
    tenant_id = uuid.UUID(admin.tenant_id)
    with session_scope() as s:
        engine = add_engine(s, tenant_id, "Edges", f"edges-{uuid.uuid4().hex[:8]}")
        version = add_version(s, engine, "1.0")
        consumer = add_consumer(s, tenant_id, "Timeless")
        refs = {"engine": Ref(engine.id, engine.name, engine.slug), "version": Ref(version.id, "1.0"),
                "consumer": Ref(consumer.id, consumer.name)}
        add_job(s, tenant_id, created=FIRST_INSTANT, status="completed", ms=10, **refs)
        add_job(s, tenant_id, created=LAST_INSTANT, status="failed", **refs)
        paths = ("/tenant/stats", f"/engines/{engine.id}/stats", f"/consumers/{consumer.id}/stats")
    return admin, paths


def calls(admin, path, params) -> int:
    r = admin.get(path, params=params)
    assert r.status_code == 200, (path, params, r.text)
    return r.json()["summary"]["total_calls"]


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"start_date": "9999-12-31T23:59:59"}, 1),  # a start within the last day: no whole day after it
        ({"start_date": "9999-12-31T23:59:59.999999Z"}, 1),
        ({"start_date": "9999-12-31"}, 1),
        ({"end_date": "9999-12-31T23:59:59"}, 1),
        ({"end_date": "9999-12-31"}, 2),
        ({"end_date": "0001-01-01T00:00:00"}, 1),  # an end within the first day: no whole day before it
        ({"end_date": "0001-01-01"}, 1),
        ({"start_date": "0001-01-01T00:00:00.000001"}, 1),
        ({"start_date": "0001-01-01", "end_date": "9999-12-31"}, 2),  # as far apart as dates go
        ({"start_date": FIRST_INSTANT, "end_date": LAST_INSTANT}, 2),
        ({"start_date": FIRST_INSTANT, "end_date": FIRST_INSTANT}, 1),
        ({"start_date": LAST_INSTANT, "end_date": LAST_INSTANT}, 1),
        ({"start_date": "0001-01-01T14:00:00+14:00"}, 2),  # the first instant, written east of UTC
        ({"start_date": "0001-01-01T14:00:00.000001+14:00"}, 1),
        ({"end_date": "9999-12-31T09:59:59.999999-14:00"}, 2),  # the last instant, written west of UTC
        ({"end_date": "9999-12-31T09:59:59-14:00"}, 1),
        ({"start_date": "0002-01-01", "end_date": "9999-12-30T23:59:59"}, 0),
    ],
)
def test_bounds_at_the_ends_of_the_calendar_are_counted(edges, params, expected):
    admin, paths = edges
    # WHEN any statistics endpoint is asked about a period touching the calendar's ends
    # THEN it answers with the jobs inside that period
    for path in paths:
        assert calls(admin, path, params) == expected, (path, params)


@pytest.mark.parametrize(
    "params",
    [
        {"start_date": "0001-01-01T00:00:00+14:00"},  # 13:00 on 31 December of year 0, in UTC
        {"start_date": "0001-01-01T13:59:59.999999+14:00"},
        {"end_date": "0001-01-01T00:00:00+00:01"},
        {"end_date": "9999-12-31T23:59:59-14:00"},  # in year 10000, in UTC
        {"start_date": "9999-12-31T10:00:00-14:00"},
        {"start_date": "0001-01-01", "end_date": "9999-12-31T23:59:59.999999-00:01"},
        {"start_date": "0000-12-31"},
        {"end_date": "10000-01-01"},
        {"end_date": "9999-12-32"},
    ],
)
def test_instants_outside_the_calendar_are_422(edges, params):
    admin, paths = edges
    for path in paths:
        # WHEN a bound names an instant no date can hold
        r = admin.get(path, params=params)
        # THEN it is refused as the other bad dates are: 422, the query value named
        assert r.status_code == 422, (path, params, r.text)
        detail = r.json()["detail"]
        assert isinstance(detail, list) and detail[0]["loc"][0] == "query", detail
        # AND the service keeps answering
        assert calls(admin, path, {}) == 2


EXTREMES = [
    None, "0001-01-01", "0001-01-02", "9999-12-30", "9999-12-31", FIRST_INSTANT, LAST_INSTANT,
    "0001-01-01T23:59:59.999999", "9999-12-31T00:00:00", "0001-01-01T00:00:00+14:00", "0001-01-01T00:00:00-14:00",
    "9999-12-31T23:59:59+14:00", "9999-12-31T23:59:59-14:00", "9999-12-31T00:00:00-23:59", "0001-01-01T23:59:59+23:59",
]


def test_no_pair_of_extreme_bounds_is_a_server_error(edges):
    admin, paths = edges
    # WHEN every pair of extreme bounds, offsets at both edges included, is asked of every endpoint
    answers = set()
    for start, end in itertools.product(EXTREMES, repeat=2):
        params = {k: v for k, v in (("start_date", start), ("end_date", end)) if v is not None}
        for path in paths:
            status = admin.get(path, params=params).status_code
            # THEN each is figures or a validation error
            assert status in (200, 422), (path, params, status)
            answers.add(status)
    assert answers == {200, 422}


def test_the_first_and_last_days_are_reported_as_days(edges):
    admin, paths = edges
    both = [("0001-01-01", 1), ("9999-12-31", 1)]
    periods = [
        ({}, both),
        ({"start_date": FIRST_INSTANT, "end_date": LAST_INSTANT}, both),
        ({"start_date": "0001-01-01T00:00:00.000001", "end_date": "9999-12-31T23:59:59.999998"}, []),
    ]
    for path in paths:
        for params, expected in periods:
            # WHEN a period reaching the calendar's ends, or stopping just short of them, is asked about
            r = admin.get(path, params=params)
            assert r.status_code == 200, r.text
            # THEN the jobs inside it are listed under their UTC days, the calendar's first and last
            assert [(d["date"], d["total_calls"]) for d in r.json()["by_day"]] == expected, (path, params)
