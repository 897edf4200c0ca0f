"""Checks every test runs with."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reconciler.core import cycle


@pytest.fixture(autouse=True)
def _check_parked() -> Iterator[None]:
    """Every cycle a test runs parks failed jobs (as an incremental reconcile
    does) and checks, after each pass, that no parked job could have been
    helped by what happened since it failed."""
    was = cycle.CHECK_PARKED, cycle.PARK_ALWAYS
    cycle.CHECK_PARKED = cycle.PARK_ALWAYS = True
    yield
    cycle.CHECK_PARKED, cycle.PARK_ALWAYS = was
