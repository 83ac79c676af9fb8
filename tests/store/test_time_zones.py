"""Times in another zone (issue 34): one conversion to UTC (wirewise.clock.as_utc) for every time
that is stored, queried or printed, whatever zone the machine or the database session is in.

Run with TZ=America/Los_Angeles (a naive datetime's astimezone() would read it as Pacific time)
and, on PostgreSQL, with the database's `timezone` set to it too, as initdb sets it on a server
installed in that zone: timestamptz then comes back as Pacific time unless wirewise converts it.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import wirewise, wirewise_json
from tests.placement.test_case_identity import TOPO, collective
from wirewise.orchestrator.record.ingest import store_measurement
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.read import POSTGRESQL, SQLITE

ZONE = "America/Los_Angeles"
PACIFIC = ZoneInfo(ZONE)


def test_a_zoned_moment_is_bound_as_its_utc_instant():
    """10:00 Pacific is 18:00 UTC in the query: SQLite compares the UTC wall time as text, so
    writing 10:00 took results from eight hours earlier; a naive time is UTC, as stored."""
    pacific = datetime(2026, 12, 1, 10, 0, tzinfo=PACIFIC)
    assert SQLITE.moment(pacific) == "2026-12-01 18:00:00.000000"
    assert SQLITE.moment(datetime(2026, 12, 1, 18, 0)) == "2026-12-01 18:00:00.000000"
    bound = POSTGRESQL.moment(pacific)
    assert bound.utcoffset() == timedelta(0) and bound == pacific
    assert POSTGRESQL.moment(datetime(2026, 12, 1, 18, 0)) == datetime(2026, 12, 1, 18, 0, tzinfo=timezone.utc)
    assert SQLITE.when("2026-12-01 18:00:00.000000") == POSTGRESQL.when(pacific) == pacific
    assert POSTGRESQL.when(pacific).tzinfo == timezone.utc


def _in_pacific(url: str) -> None:
    """The PostgreSQL database's sessions in Pacific time, as on a server installed there."""
    if url.startswith("postgresql"):
        import psycopg

        from wirewise.orchestrator.store.read import libpq_uri

        with psycopg.connect(libpq_uri(url), autocommit=True) as conn:
            conn.execute(f"ALTER DATABASE \"{url.rsplit('/', 1)[1]}\" SET timezone TO '{ZONE}'")


def test_since_and_stored_times_are_utc_in_any_zone(url):
    """Results at 17:00, 18:00 and 19:00 UTC: `--since 2026-12-01T10:00-08:00` is 18:00 UTC and
    takes two, as does the naive 18:00 (UTC); a node last seen at 05:00 UTC on Dec 2 is listed
    with that time and date, not the Pacific 21:00 of Dec 1."""
    start = datetime(2026, 12, 1, 17, 0, tzinfo=timezone.utc)
    records = [collective("n1", [0, 1], 100.0 + hour, started_at=start + timedelta(hours=hour),
                          ended_at=start + timedelta(hours=hour, seconds=30)) for hour in range(3)]
    store = Store(url)
    store_measurement(store, records, TOPO, "n1")
    seen = datetime(2026, 12, 2, 5, 0, tzinfo=timezone.utc)
    with store.engine.begin() as conn:
        from sqlalchemy import text

        conn.execute(text("UPDATE node_topologies SET last_seen = :seen"), {"seen": seen})
    _in_pacific(url)
    env = {"TZ": ZONE, "PGTZ": None}
    for since in ("2026-12-01T10:00-08:00", "2026-12-01T18:00", "2026-12-01T18:00:00+00:00"):
        rows = wirewise_json("results", "--db", url, "--since", since, env=env)
        assert sum(row["count"] for row in rows) == 2, (since, rows)
    listed = wirewise_json("topo", "list", "--db", url, env=env)
    assert [row["last_seen"] for row in listed] == ["2026-12-02T05:00:00+00:00"]
    table = wirewise("topo", "list", "--db", url, env=env, check=True).stdout
    assert "2026-12-02" in table and "2026-12-01" not in table


@pytest.mark.parametrize("since", ["2026-12-01T10:00-08:00", "2026-12-01T18:00"])
def test_the_zone_of_since_is_applied_not_dropped(since):
    from wirewise.orchestrator.results.filters import parse_since

    assert parse_since(since) == datetime(2026, 12, 1, 18, 0, tzinfo=timezone.utc)
