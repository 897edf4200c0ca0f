"""An on-disk cache that makes reconciles after the first one cheap.

It lives in the repository's git directory (``.git/fleetq/cache-v<N>/``),
never in the work tree, and is safe to delete at any time: everything in it
can be computed again from git. Two things are kept:

- ``jobs.pickle``: the parsed jobs of every jobs-only file, keyed by
  (git blob id, path). A file whose blob did not change is not parsed again.
- ``state-<commit>.pickle``: the decisions of a state commit, so the next
  reconcile does not parse a large ``placements.yaml``.

Entries are never trusted across formats: the folder name carries the cache
format and the fleetq version, and an unreadable file is dropped.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any

from reconciler import __version__
from reconciler.core.cycle import InvalidJob
from reconciler.core.model import JobKey, PriorPlacement
from reconciler.fleet.jobs import JobSource

CACHE_FORMAT = 1

JobEntry = list[JobSource | InvalidJob]


class Cache:
    def __init__(self, git_dir: Path) -> None:
        base = git_dir / "fleetq"
        self.dir = base / f"cache-v{CACHE_FORMAT}-{__version__}"
        self._base = base
        self.jobs: dict[tuple[str, str], JobEntry] = {}
        self._jobs_loaded = False
        self.dirty = False

    # -- files -------------------------------------------------------------------

    def _read(self, name: str) -> Any:
        path = self.dir / name
        try:
            with path.open("rb") as fh:
                return pickle.load(fh)
        except FileNotFoundError:
            return None
        except Exception:  # a damaged or foreign file: drop it, compute again
            path.unlink(missing_ok=True)
            return None

    def _write(self, name: str, value: Any) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.dir / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        for old in self._base.glob("cache-v*"):
            if old != self.dir:
                shutil.rmtree(old, ignore_errors=True)

    # -- parsed jobs -------------------------------------------------------------

    def load_jobs(self) -> None:
        if not self._jobs_loaded:
            got = self._read("jobs.pickle")
            self.jobs = got if isinstance(got, dict) else {}
            self._jobs_loaded = True

    def job_entry(self, blob: str, path: str) -> JobEntry | None:
        return self.jobs.get((blob, path))

    def put_job_entry(self, blob: str, path: str, entry: JobEntry) -> None:
        self.jobs[(blob, path)] = entry
        self.dirty = True

    def save_jobs(self, keep: set[tuple[str, str]]) -> None:
        """Write the entries of the files still in the fleet (others are dropped)."""
        stale = set(self.jobs) - keep
        if not self.dirty and not stale:
            return
        for k in stale:
            del self.jobs[k]
        self._write("jobs.pickle", self.jobs)
        self.dirty = False

    # -- decisions of a state commit ----------------------------------------------

    def load_state(self, commit: str) -> dict[JobKey, PriorPlacement] | None:
        got = self._read(f"state-{commit}.pickle")
        return got if isinstance(got, dict) else None

    def save_state(self, commit: str, prior: dict[JobKey, PriorPlacement]) -> None:
        for old in self.dir.glob("state-*.pickle") if self.dir.exists() else ():
            old.unlink(missing_ok=True)
        self._write(f"state-{commit}.pickle", prior)
