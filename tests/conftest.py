"""Checks every test runs with, and fixtures tests share."""

from __future__ import annotations

import os
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


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The processes forked while the test runs, by pid: ``os.fork`` itself,
    each child it makes counted."""
    forked: list[int] = []
    real_fork = os.fork

    def counted_fork() -> int:
        pid = real_fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted_fork)
    return forked
