"""Time, one home: the one "now" and the one conversion to UTC, for both sides of the seam.

The database keeps UTC (timestamptz on PostgreSQL; on SQLite, the UTC wall time as text, which
SQLAlchemy's DateTime writes without its zone). So every time that is stored, compared in a
query or written out is made UTC here first: a time with a zone keeps its instant (12:00-08:00
is 20:00 UTC, never 12:00 UTC), a time without one is taken as UTC, as wirewise writes them.
Never the machine's own zone: a naive datetime's astimezone() or timestamp() reads it as local
time, so the same command on a login node in another zone would compare other instants.
"""

from __future__ import annotations

from datetime import datetime, timezone


def utcnow() -> datetime:
    """Now, in UTC (zoned)."""
    return datetime.now(timezone.utc)


def as_utc(value: datetime) -> datetime:
    """A time as UTC: an offset is applied (12:00+05:00 is 07:00 UTC), a time without one is
    taken as UTC. ValueError for a time that UTC cannot hold (years 1 to 9999)."""
    try:
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError(f"{value.isoformat()} is out of range in UTC (years 1 to 9999)") from None
