"""Work split in two processes: the same result as in one, even when the other fails."""

from __future__ import annotations

import os
from collections.abc import Sequence

from reconciler.halves import in_two


def squares(items: Sequence[int]) -> list[int]:
    return [i * i for i in items]


def test_each_half_is_done_once_and_in_order() -> None:
    parent = os.getpid()
    done_where: list[tuple[int, int]] = []

    def work(items: Sequence[int]) -> list[tuple[int, int]]:
        here = [(os.getpid(), i) for i in items]
        done_where.extend(here)  # (only this process's list: the other's is its own copy)
        return here

    mine, theirs = in_two(work, list(range(9)))
    assert [i for _, i in mine + theirs] == list(range(9))
    assert {pid for pid, _ in mine} == {parent}
    assert {pid for pid, _ in theirs} != {parent}  # done by the forked process
    assert done_where == mine  # this process did its half only


def test_a_failing_forked_process_has_its_half_done_here() -> None:
    parent = os.getpid()

    def work(items: Sequence[int]) -> list[int]:
        if os.getpid() != parent:
            os._exit(3)  # the forked process dies before it sends anything
        return squares(items)

    assert in_two(work, list(range(7))) == ([0, 1, 4], [9, 16, 25, 36])


def test_a_forked_process_that_raises_has_its_half_done_here() -> None:
    parent = os.getpid()

    def work(items: Sequence[int]) -> list[int]:
        if os.getpid() != parent:
            raise RuntimeError("the forked half fails")
        return squares(items)

    assert in_two(work, [5, 6, 7]) == ([25], [36, 49])


def test_the_halves_split_where_asked() -> None:
    assert in_two(squares, [1, 2, 3, 4, 5], at=4) == ([1, 4, 9, 16], [25])
    assert in_two(squares, [1, 2, 3, 4, 5], at=1) == ([1], [4, 9, 16, 25])
