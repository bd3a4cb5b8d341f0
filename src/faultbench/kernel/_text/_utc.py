"""Times moved to UTC, where a time near the ends of the calendar would overflow.

`datetime` holds the years 1 to 9999 *in its own offset*: `9999-12-31T23:59:59-12:00` is a
valid RFC 3339 time, but in UTC it is in the year 10000, and `astimezone(UTC)` (or comparing
it with a UTC time) raises `OverflowError`. Every time that enters the kernel from outside
(world files, tool arguments, the clock, event logs) goes through `to_utc`, so such a time is
a `ValueError` that says what is allowed, at the place it came in.
"""

from __future__ import annotations

from datetime import UTC, datetime

#: the message's tail: what a caller may send instead
UTC_RANGE = "expected a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z in UTC"


def to_utc(dt: datetime) -> datetime:
    """`dt` in UTC (naive means UTC already). ValueError, not OverflowError, when that is
    before the year 1 or after 9999."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    try:
        return dt.astimezone(UTC)
    except OverflowError:
        raise ValueError(
            f"time {dt.isoformat()} is outside the calendar in UTC; {UTC_RANGE}"
        ) from None
