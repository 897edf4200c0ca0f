"""Checks every test runs with."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reconciler.core import cycle


@pytest.fixture(autouse=True)
def _check_cycles() -> Iterator[None]:
    """Every cycle a test runs parks failed jobs (as an incremental reconcile
    does) and checks, after each pass, that no parked job could have been
    helped by what happened since it failed; and a cycle that leaves its
    settled jobs out is decided once more with them in, to the same result,
    as is one that takes up steps done ahead, without them."""
    was = cycle.CHECK_PARKED, cycle.PARK_ALWAYS, cycle.CHECK_QUICK, cycle.CHECK_AHEAD
    cycle.CHECK_PARKED = cycle.PARK_ALWAYS = cycle.CHECK_QUICK = cycle.CHECK_AHEAD = True
    yield
    cycle.CHECK_PARKED, cycle.PARK_ALWAYS, cycle.CHECK_QUICK, cycle.CHECK_AHEAD = was
