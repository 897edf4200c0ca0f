"""Wait for a fleet repo's revisions to move: the git side of ``fleetq watch``.

A ``RefWatcher`` resolves a few revisions (the source, the state branch) and
waits until one of them names another commit. watchdog reports each write to
the refs (a commit, a push into this repository, a fetch, ``git reset``), so a
change is seen at once; the revisions are also resolved again every
``interval`` seconds, because file events can be lost (a full inotify queue, a
network file system) or unavailable. With a ``remote``, that remote is fetched
on each of those rounds, so that ``origin/main`` moves when someone pushes.

Everything here is read-only: the reconcile that follows a change does the
writing, through ``FleetRepo``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from reconciler.gitops.repo import FleetRepo

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent

SETTLE = 0.05  # seconds to let git finish a ref update once its first write is seen
Revisions = tuple[str | None, ...]
READS = {"opened", "closed_no_write"}  # watchdog's events that change nothing


def _ref_events(wake: threading.Event, roots: Sequence[Path]) -> Any:
    """watchdog's handler: any write to refs, HEAD or packed-refs sets ``wake``.
    (watchdog is imported here, by a watch: every other command starts without it.)"""
    from watchdog.events import FileSystemEventHandler

    names = ("HEAD", "packed-refs", "FETCH_HEAD", "ORIG_HEAD")
    refs = tuple(str(root / "refs") for root in roots)
    # (fleetq's own notes, refs/fleetq/: the state it last saw or wrote, never a
    # revision a watch follows; each round writes them)
    own = tuple(str(root / "refs" / "fleetq") + os.sep for root in roots)

    class RefEvents(FileSystemEventHandler):
        def dispatch(self, event: FileSystemEvent) -> None:
            if event.event_type in READS:
                return  # resolving the revisions opens these files too
            for raw in (event.src_path, event.dest_path):
                path = os.fsdecode(raw or "")
                name = os.path.basename(path).removesuffix(".lock")
                if path.startswith(own):
                    continue
                if path.startswith(refs) or name in names:
                    wake.set()
                    return

    return RefEvents()


class RefWatcher:
    """Use as a context manager: ``with RefWatcher(repo, revs) as w: w.wait(seen, stop)``."""

    def __init__(self, repo: FleetRepo, revisions: Sequence[str], *, interval: float = 5.0,
                 remote: str | None = None, events: bool = True) -> None:
        self.repo = repo
        self.revisions = tuple(revisions)
        self.interval = interval
        self.remote = remote
        self.events = events
        self.wake = threading.Event()
        self._observer: Any = None  # None: no file events, only the periodic check

    def __enter__(self) -> RefWatcher:
        if self.events:
            self._start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._observer is not None:
            # watchdog logs an error when its reader wakes up stopped: nothing is wrong
            log = logging.getLogger("watchdog")
            level = log.level
            log.setLevel(logging.CRITICAL)
            try:
                self._observer.stop()
                self._observer.join(timeout=5)
            finally:
                log.setLevel(level)
            self._observer = None

    def _start(self) -> None:
        common = self.repo.run("rev-parse", "--git-common-dir").decode().strip()
        roots = [self.repo.git_dir]
        shared = Path(common) if os.path.isabs(common) else self.repo.root / common
        if shared.resolve() != self.repo.git_dir.resolve():
            roots.append(shared)  # a linked work tree: its refs live in the main one
        from watchdog.observers import Observer

        try:
            observer = Observer()
            handler = _ref_events(self.wake, roots)
            for root in roots:
                observer.schedule(handler, str(root), recursive=False)
                if (root / "refs").is_dir():
                    observer.schedule(handler, str(root / "refs"), recursive=True)
            observer.daemon = True
            observer.start()
        except (OSError, RuntimeError):  # no inotify (limits, file system): poll only
            return
        self._observer = observer

    def current(self) -> Revisions:
        """The commit each revision names now (``None``: it does not resolve)."""
        return tuple(self.repo.resolve(rev) for rev in self.revisions)

    def fetch(self) -> None:
        if self.remote:
            self.repo.run("fetch", "--quiet", "--prune", self.remote)

    def wait(self, seen: Revisions, stop: threading.Event,
             until: float | None = None) -> Revisions | None:
        """Block until the revisions differ from ``seen`` and return them, or
        until ``until`` (a ``time.monotonic()``: they are returned as they
        are); ``None`` once ``stop`` is set. A failed fetch raises ``GitError``
        (the caller says so and waits again)."""
        deadline = time.monotonic() + self.interval
        while not stop.is_set():
            if until is not None and time.monotonic() >= until:
                return self.current()
            left = deadline - time.monotonic()
            woke = self.wake.wait(timeout=max(0.0, min(left, 0.5)))
            if stop.is_set():
                break
            if not woke and time.monotonic() < deadline:
                continue
            if woke:
                time.sleep(SETTLE)
                self.wake.clear()
            else:
                deadline = time.monotonic() + self.interval
                self.fetch()
            now = self.current()
            if now != seen:
                return now
        return None
