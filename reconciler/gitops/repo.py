"""Git plumbing for fleetq: read a commit's files, write trees and commits, move refs.

Reading lists a commit's tree once (``ls-tree -r``) and streams the blobs it
needs through one ``cat-file --batch`` process. Writing never touches the work
tree or the index: blobs, trees and the commit are written as loose objects
from Python, and the state branch moves by compare-and-swap (``update-ref``
with the old value), or by a push with a lease on a remote.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import git as gitpython


class GitError(Exception):
    """The repository cannot be read or written as asked (an environment error)."""


@dataclass(frozen=True, slots=True)
class TreeEntry:
    mode: str
    type: str
    sha: str
    path: str


@dataclass(frozen=True, slots=True)
class CommitInfo:
    sha: str
    tree: str
    committed_at: str  # RFC 3339, UTC
    message: str


@dataclass(frozen=True, slots=True)
class Identity:
    name: str
    email: str


TMP_OBJECT = "tmp_obj_"  # (git's own prefix of an object being written: git gc prunes it)


def _write_loose(kind: bytes, body: bytes, target: Path) -> None:
    """One loose object, whole or not at all (written aside, then renamed; the
    file aside named as git names its own, which ``git gc`` removes should a
    kill leave one)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=TMP_OBJECT)
        with os.fdopen(fd, "wb") as fh:
            deflate = zlib.compressobj(1)
            fh.write(deflate.compress(kind + b" " + str(len(body)).encode() + b"\0"))
            fh.write(deflate.compress(body))
            fh.write(deflate.flush())
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise


def blob_id(data: bytes) -> str:
    """The git object id of a blob holding ``data``."""
    digest = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


PACK_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3}
PACK_NAMES = {v: k for k, v in PACK_TYPES.items()}
PACK_MIN_OBJECTS = 500  # fewer new files than this are written as loose objects
BEHIND_MIN_BYTES = 4 << 20  # a blob this large is compressed and written in the background
LOCK_TRIES, LOCK_WAIT = 10, 0.2  # a ref locked by another git: tried again for 2 s
MEMO_COMMITS = 4096  # commits remembered as such, and read (see resolve, commit_info)


# What a remote says when it failed to move a ref another push moved meanwhile
# (git's receive-pack: "failed to lock", "cannot lock ref ...: is at X but expected
# Y", "failed to update ref", "incorrect old value provided")
_RACED = ("failed to lock", "cannot lock ref", "but expected", "failed to update ref",
          "incorrect old value")


class FleetRepo:
    """A fleet repository on disk (a work tree or a bare repository)."""

    def __init__(self, path: str | Path) -> None:
        if not str(path):
            raise GitError("--repo '' names no folder: pass the path of a fleet repo (or leave "
                           "--repo out for this folder)")
        try:
            repo = gitpython.Repo(str(path), search_parent_directories=True)
        except gitpython.NoSuchPathError:
            raise GitError(f"{path}: no such directory; pass --repo the path of a fleet "
                           f"repo") from None
        except gitpython.InvalidGitRepositoryError:
            raise GitError(f"{path} is not inside a git repository; run fleetq in a fleet "
                           f"repo or pass --repo PATH") from None
        self.bare = repo.bare
        self.root = Path(repo.git_dir if repo.bare else (repo.working_tree_dir or repo.git_dir))
        self.git_dir = Path(repo.git_dir)
        repo.close()
        self._behind: list[threading.Thread] = []  # large blobs being written (see settle)
        self._behind_failed: list[tuple[str, BaseException]] = []
        form, objects = self.run("rev-parse", "--show-object-format", "--git-path",
                                 "objects").decode().strip().split("\n")
        if form != "sha1":  # (fleetq names and writes objects by their SHA-1 ids)
            raise GitError(f"{self.root} is a repository of {form} object ids, which fleetq "
                           f"does not read or write (it works with git's default, sha1): "
                           f"keep the fleet in a sha1 repository (git init "
                           f"--object-format=sha1, then push its history there with git "
                           f"fast-export | git fast-import)")
        self.objects = Path(objects) if os.path.isabs(objects) else self.root / objects
        self.last_refusal: str | None = None  # what the remote said to the last push raced
        self._written: set[str] = set()
        self._batch: list[tuple[int, bytes, str]] | None = None  # objects for one pack
        # the files of the last tree written, and of the commit made of it: a watch
        # lists the state it committed at its next round (objects never change)
        self._tree_listing: tuple[str, list[TreeEntry]] | None = None
        self._commit_listing: tuple[str, list[TreeEntry]] | None = None
        self._commits: set[str] = set()  # ids known to be of commits (see resolve)
        self._commit_infos: dict[str, CommitInfo] = {}  # (see commit_info)

    # -- running git -----------------------------------------------------------

    def run(self, *args: str, data: bytes | None = None,
            env: Mapping[str, str] | None = None, check: bool = True) -> bytes:
        self.settle()
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        proc = subprocess.run(["git", *args], cwd=self.root, input=data, env=full_env,
                              capture_output=True, check=False)
        if check and proc.returncode != 0:
            raise GitError(f"git {' '.join(args)} failed: "
                           f"{proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout

    def resolve(self, rev: str) -> str | None:
        """The commit ``rev`` names, else ``None``. (A commit seen once is known
        as one: naming it again is not peeled again, which reads the whole
        commit, and a state commit's message can be long.)"""
        self.settle()
        proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet", rev],
                              cwd=self.root, capture_output=True, check=False)
        sha = proc.stdout.decode().strip() if proc.returncode == 0 else ""
        if not sha:
            return None
        if sha in self._commits:
            return sha
        proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}"],
                              cwd=self.root, capture_output=True, check=False)
        commit = proc.stdout.decode().strip() if proc.returncode == 0 else ""
        if commit == sha:
            self._known_commit(sha)
        return commit or None

    def _known_commit(self, sha: str) -> None:
        if len(self._commits) >= MEMO_COMMITS:
            self._commits.clear()
        self._commits.add(sha)

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Is commit ``older`` in the history of ``newer`` (or the same)?"""
        proc = subprocess.run(["git", "merge-base", "--is-ancestor", older, newer],
                              cwd=self.root, capture_output=True, check=False)
        return proc.returncode == 0

    def branches(self) -> dict[str, tuple[str, str]]:
        """Every branch: its ref -> (its commit, the folder of the work tree that
        has it checked out, this one or a linked one, else ""). One git command."""
        out = self.run("for-each-ref", "--format=%(refname)%00%(objectname)%00%(worktreepath)",
                       "refs/heads/", check=False).decode("utf-8", "surrogateescape")
        got = {}
        for line in out.splitlines():
            ref, sha, where = [*line.split("\0"), "", ""][:3]
            got[ref] = (sha, where)
        return got

    def full_name(self, rev: str) -> str | None:
        """The ref ``rev`` names in full (``refs/heads/main``), if it names one."""
        proc = subprocess.run(["git", "rev-parse", "--symbolic-full-name", "--verify", "--quiet",
                               rev], cwd=self.root, capture_output=True, check=False)
        return proc.stdout.decode().strip() or None

    def remotes(self) -> list[str]:
        """The names of this repository's remotes (``git remote``)."""
        return self.run("remote", check=False).decode().split()

    def current_branch(self) -> str | None:
        out = subprocess.run(["git", "symbolic-ref", "--quiet", "--short", "HEAD"],
                             cwd=self.root, capture_output=True, check=False)
        return out.stdout.decode().strip() or None

    def commit_info(self, sha: str) -> CommitInfo:
        """What a commit holds; read once per commit id (commits never change)."""
        got = self._commit_infos.get(sha)
        if got is not None:
            return got
        out = self.run("show", "-s", "--format=%T%x00%ct%x00%B", sha).decode()
        tree, ts, message = out.split("\0", 2)
        if not ts.isdigit():  # (a committer line git cannot read: written by hand, or
            # by a tool that let an angle bracket or a newline into a name)
            raise GitError(
                f"commit {sha[:12]} is malformed: git reads no committer date in it (git "
                f"fsck {sha[:12]} tells what is wrong); if it is the head of a branch fleetq "
                f"reads, put the branch back on the commit before it (git update-ref "
                f"refs/heads/BRANCH {sha[:12]}^)")
        when = dt.datetime.fromtimestamp(int(ts), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        info = CommitInfo(sha=sha, tree=tree, committed_at=when, message=message)
        if len(sha) == 40 and all(c in "0123456789abcdef" for c in sha):
            if len(self._commit_infos) >= MEMO_COMMITS:
                self._commit_infos.clear()
            self._commit_infos[sha] = info
        return info

    # -- reading ---------------------------------------------------------------

    def list_tree(self, rev: str, under: str | None = None) -> list[TreeEntry]:
        """The files of a commit (or tree), as ``git ls-tree -r`` lists them;
        ``under``: those in that folder (``inventory/``) alone."""
        if under is None and self._commit_listing is not None and \
                self._commit_listing[0] == rev:
            return list(self._commit_listing[1])  # a commit this wrote
        out = self.run("ls-tree", "-r", "-z", "--full-tree", rev,
                       *(("--", under) if under is not None else ()))
        entries = []
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, path = record.split(b"\t", 1)
            mode, kind, sha = meta.decode().split(" ")
            entries.append(TreeEntry(mode, kind, sha, path.decode("utf-8", "surrogateescape")))
        return entries

    def changed_files(self, old_tree: str, new_tree: str) -> list[tuple[str, str, str]]:
        """(path, old blob, new blob) of each file that differs between two trees;
        a missing side is the all-zero id. One ``git diff-tree``."""
        out = self.run("diff-tree", "-r", "-z", "--no-renames", old_tree, new_tree)
        fields = out.split(b"\0")
        changes = []
        for i in range(0, len(fields) - 1, 2):
            meta = fields[i].decode().split(" ")
            if len(meta) < 5:
                break
            changes.append((fields[i + 1].decode("utf-8", "surrogateescape"), meta[2], meta[3]))
        return changes

    def read_blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """The contents of many blobs through one ``git cat-file --batch``."""
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return {}
        self.settle()
        proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.root,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None

        def feed() -> None:
            assert proc.stdin is not None
            try:
                proc.stdin.write("".join(f"{s}\n" for s in wanted).encode())
                proc.stdin.close()
            except BrokenPipeError:  # pragma: no cover - git died; reported below
                pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        out: dict[str, bytes] = {}
        stream = proc.stdout
        read = False
        try:
            for sha in wanted:
                header = stream.readline().split()
                if len(header) < 2 or header[1] == b"missing":
                    raise GitError(f"object {sha} is missing from the repository")
                size = int(header[2])
                out[sha] = stream.read(size)
                stream.read(1)
            read = True
        finally:
            if not read:  # (stopped, or an error: git, blocked writing what nobody reads,
                proc.kill()  # and the writer, blocked feeding it, would wait for ever)
            writer.join()
            proc.stdout.close()
            proc.wait()
        return out

    def blob_of(self, rev: str, path: str) -> str | None:
        """The blob id of the file ``path`` (at the top of the tree) of commit
        ``rev``, else ``None``."""
        out = self.run("ls-tree", "-z", "--full-tree", rev, "--", path, check=False)
        meta, _, name = out.rstrip(b"\0").partition(b"\t")
        parts = meta.decode().split(" ")
        return parts[2] if len(parts) == 3 and parts[1] == "blob" and \
            name == path.encode("utf-8", "surrogateescape") else None

    def blobs_in(self, trees: Sequence[str], path: str) -> list[str | None]:
        """The blob id of the file ``path`` in each of ``trees`` (``None``: not
        a file there), with one ``git cat-file --batch-check``."""
        if "\n" in path:  # (a line each: such a name is asked of each tree alone)
            return [self.blob_of(tree, path) for tree in trees]
        if not trees:
            return []
        out = self.run("cat-file", "--batch-check=%(objectname) %(objecttype)",
                       data="".join(f"{tree}:{path}\n" for tree in trees).encode(
                           "utf-8", "surrogateescape"))
        lines = out.decode("utf-8", "surrogateescape").splitlines()
        return [parts[0] if len(parts) == 2 and parts[1] == "blob" else None
                for parts in (line.split(" ") for line in lines)]

    def tree_id(self, rev: str, path: str) -> str | None:
        """The id of the folder ``path`` of commit ``rev``, else ``None``."""
        self.settle()
        proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}:{path}"],
                              cwd=self.root, capture_output=True, check=False)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def read_file(self, rev: str, path: str) -> bytes | None:
        self.settle()
        proc = subprocess.run(["git", "cat-file", "blob", f"{rev}:{path}"], cwd=self.root,
                              capture_output=True, check=False)
        return proc.stdout if proc.returncode == 0 else None

    # -- writing ---------------------------------------------------------------

    def _store(self, kind: bytes, body: bytes) -> str:
        digest = hashlib.sha1(kind + b" " + str(len(body)).encode() + b"\0",
                              usedforsecurity=False)
        digest.update(body)  # (not hashed joined to its header: a large body is not copied)
        sha = digest.hexdigest()
        if sha in self._written:
            return sha
        self._written.add(sha)
        if self._batch is not None:
            self._batch.append((PACK_TYPES[kind], body, sha))
            return sha
        return self._store_loose(kind, body, sha)

    def _store_loose(self, kind: bytes, body: bytes, sha: str) -> str:
        target = self.objects / sha[:2] / sha[2:]
        if target.exists():
            return sha
        if len(body) < BEHIND_MIN_BYTES:
            _write_loose(kind, body, target)
            return sha
        # zlib lets go of the interpreter while it compresses: the caller goes
        # on meanwhile, and whatever runs git next waits for it (settle)
        thread = threading.Thread(target=self._write_behind, args=(kind, body, target, sha),
                                  name=f"fleetq-write-{sha[:12]}")  # (finished at exit)
        self._behind.append(thread)
        thread.start()
        return sha

    def _write_behind(self, kind: bytes, body: bytes, target: Path, sha: str) -> None:
        try:
            _write_loose(kind, body, target)
        except BaseException as exc:  # raised by settle, in the caller's thread
            self._behind_failed.append((sha, exc))

    def settle(self) -> None:
        """Wait for the large blobs still being written in the background: git
        runs only once every object written is on disk. A write that failed is
        raised here (and its object no longer counts as written)."""
        while self._behind:
            self._behind.pop().join()
        if self._behind_failed:
            failed, self._behind_failed = self._behind_failed, []
            self._written.difference_update(sha for sha, _ in failed)
            sha, exc = failed[0]
            raise GitError(f"could not write object {sha} into {self.objects}: {exc}") from exc

    @contextlib.contextmanager
    def work_tree_commit(self, identity: Identity, when: dt.datetime) -> Iterator[str | None]:
        """A commit of the work tree as ``git add -A`` would stage it (the
        files ``.gitignore`` leaves out are left out), child of HEAD, on no
        branch, for the time of the ``with``; HEAD itself when the work tree
        holds what it holds; ``None`` in a bare repository.

        Made with a temporary index, started from a copy of git's (whose file
        times spare re-reading unchanged files), into a temporary object
        folder that git reads beside the repository's while the ``with``
        lasts (``GIT_ALTERNATE_OBJECT_DIRECTORIES``), then removed: git's
        index, objects, staged changes and branches are left as they were
        (nothing is written into the repository: it may be read-only, and
        the blobs of files never committed would pile up there)."""
        if self.bare:
            yield None
            return
        head = self.resolve("HEAD")
        index = Path(self.run("rev-parse", "--git-path", "index").decode().strip())
        index = index if index.is_absolute() else self.root / index
        with tempfile.TemporaryDirectory(prefix="fleetq-work-tree-") as temp:
            objects = Path(temp) / "objects"
            objects.mkdir()
            if index.exists():
                shutil.copyfile(index, Path(temp) / "index")
            env = {"GIT_INDEX_FILE": str(Path(temp) / "index"),
                   "GIT_OBJECT_DIRECTORY": str(objects),
                   "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(self.objects),
                   "GIT_AUTHOR_NAME": identity.name, "GIT_AUTHOR_EMAIL": identity.email,
                   "GIT_COMMITTER_NAME": identity.name, "GIT_COMMITTER_EMAIL": identity.email,
                   "GIT_AUTHOR_DATE": f"{int(when.timestamp())} +0000",
                   "GIT_COMMITTER_DATE": f"{int(when.timestamp())} +0000"}
            self.run("add", "-A", "--", ".", env=env)
            tree = self.run("write-tree", env=env).decode().strip()
            if head is not None and self.commit_info(head).tree == tree:
                yield head
                return
            sha = self.run("commit-tree", tree, *(("-p", head) if head else ()), "-m",
                           "the work tree, not committed", env=env).decode().strip()
            before = os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES")
            os.environ["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.pathsep.join(
                [str(objects), *([before] if before else [])])
            try:
                yield sha
            finally:
                if before is None:
                    del os.environ["GIT_ALTERNATE_OBJECT_DIRECTORIES"]
                else:
                    os.environ["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = before

    def write_blob(self, data: bytes) -> str:
        return self._store(b"blob", data)

    def write_tree(self, files: Mapping[str, bytes | str]) -> str:
        """A tree object for ``path -> bytes`` (or an existing blob sha).

        Many new objects go into one pack (indexed by ``git index-pack``)
        rather than one loose file each.
        """
        root: dict[str, object] = {}
        new = 0
        for path, content in files.items():
            node = root
            parts = path.split("/")
            for part in parts[:-1]:
                child = node.setdefault(part, {})
                assert isinstance(child, dict), f"{path}: a file is in the way"
                node = child
            node[parts[-1]] = content
            new += not isinstance(content, str)
        listing: list[TreeEntry] = []
        if new < PACK_MIN_OBJECTS:
            sha = self._write_dir(root, "", listing)
            self._tree_listing = (sha, listing)
            return sha
        batch: list[tuple[int, bytes, str]] = []
        self._batch = batch
        try:
            sha = self._write_dir(root, "", listing)
            self._batch = None
            # what the repository holds already (a state mostly as it was) is left out
            have = self.have_objects(oid for _, _, oid in batch)
            new_objects = [(kind, body, oid) for kind, body, oid in batch if oid not in have]
            if len(new_objects) >= PACK_MIN_OBJECTS:
                self._write_pack([(kind, body) for kind, body, _ in new_objects])
            else:
                for kind, body, oid in new_objects:
                    self._store_loose(PACK_NAMES[kind], body, oid)
        except BaseException:
            self._written.difference_update(oid for _, _, oid in batch)  # none was stored
            raise
        finally:
            self._batch = None
        self._tree_listing = (sha, listing)
        return sha

    def have_objects(self, shas: Iterable[str]) -> set[str]:
        """Those of ``shas`` the repository holds (one ``git cat-file --batch-check``)."""
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return set()
        out = self.run("cat-file", "--batch-check=%(objectname) %(objecttype)",
                       data="".join(f"{s}\n" for s in wanted).encode())
        return {line.split()[0] for line in out.decode().splitlines()
                if not line.endswith(" missing")}

    def _write_pack(self, objects: list[tuple[int, bytes]]) -> None:
        """Write ``objects`` (pack type, body) as one pack with its index."""
        pack_dir = self.objects / "pack"
        pack_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=pack_dir, prefix="tmp_fleetq_", suffix=".pack")
        digest = hashlib.sha1(usedforsecurity=False)
        try:
            with os.fdopen(fd, "wb") as fh:
                def put(data: bytes) -> None:
                    digest.update(data)
                    fh.write(data)

                put(b"PACK" + struct.pack(">II", 2, len(objects)))
                for type_code, body in objects:
                    size = len(body)
                    head = bytearray()
                    byte = (type_code << 4) | (size & 0x0F)
                    size >>= 4
                    while size:
                        head.append(byte | 0x80)
                        byte = size & 0x7F
                        size >>= 7
                    head.append(byte)
                    put(bytes(head) + zlib.compress(body, 1))
                fh.write(digest.digest())
            name = self.run("index-pack", tmp).decode().split()[-1]
            index = tmp[:-len(".pack")] + ".idx"
            os.replace(tmp, pack_dir / f"pack-{name}.pack")
            os.replace(index, pack_dir / f"pack-{name}.idx")
        finally:
            Path(tmp).unlink(missing_ok=True)
            Path(tmp[:-len(".pack")] + ".idx").unlink(missing_ok=True)

    def _write_dir(self, node: Mapping[str, object], prefix: str,
                   listing: list[TreeEntry]) -> str:
        """The tree of ``node``; its files are added to ``listing`` in the
        order ``git ls-tree -r`` lists them (that of the tree's entries)."""
        entries: list[tuple[bytes, bytes, bytes, list[TreeEntry]]] = []
        for name, value in node.items():
            raw = name.encode("utf-8", "surrogateescape")
            if isinstance(value, dict):
                below: list[TreeEntry] = []
                sha = self._write_dir(value, f"{prefix}{name}/", below)
                entries.append((raw + b"/", b"40000 " + raw, bytes.fromhex(sha), below))
            else:
                sha = value if isinstance(value, str) else self.write_blob(value)  # type: ignore[arg-type]
                entries.append((raw, b"100644 " + raw, bytes.fromhex(sha),
                                [TreeEntry("100644", "blob", sha, prefix + name)]))
        entries.sort(key=lambda e: e[0])
        for entry in entries:
            listing.extend(entry[3])
        body = b"".join(head + b"\0" + sha for _, head, sha, _ in entries)
        return self._store(b"tree", body)

    def write_commit(self, *, tree: str, parents: Iterable[str], message: str,
                     identity: Identity, when: dt.datetime) -> str:
        stamp = f"{int(when.timestamp())} +0000"
        person = f"{identity.name} <{identity.email}> {stamp}"
        lines = [f"tree {tree}"]
        lines.extend(f"parent {p}" for p in parents)
        lines.append(f"author {person}")
        lines.append(f"committer {person}")
        body = ("\n".join(lines) + "\n\n" + message.rstrip("\n") + "\n").encode()
        sha = self._store(b"commit", body)
        if self._tree_listing is not None and self._tree_listing[0] == tree:
            self._commit_listing = (sha, self._tree_listing[1])
        return sha

    def advance_ref(self, ref: str, new: str, message: str = "fleetq reconcile") -> None:
        """Move ``ref`` forward to ``new``: only when it is absent or in ``new``'s
        history, by compare-and-swap, so that another writer that moved it past
        ``new`` meanwhile keeps its move (two reconciles of one clone at once)."""
        for _ in range(LOCK_TRIES):
            now = self.resolve(ref)
            if now == new or (now is not None and not self.is_ancestor(now, new)):
                return
            if self.update_ref(ref, new, now, message):
                return

    def update_ref(self, ref: str, new: str, old: str | None,
                   message: str = "fleetq reconcile") -> bool:
        """Move ``ref`` to ``new`` only if it still points at ``old`` (None:
        absent): False when it moved meanwhile (a race lost); a ``GitError``
        when git could not move it for another reason (a lock file left by a
        git that was killed, a full disk, ...)."""
        expected = old or "0" * 40
        self.settle()
        for attempt in range(LOCK_TRIES):
            proc = subprocess.run(["git", "update-ref", "-m", message, ref, new, expected],
                                  cwd=self.root, capture_output=True, check=False)
            if proc.returncode == 0:
                return True
            if self.resolve(ref) != old:
                return False
            err = proc.stderr.decode(errors="replace").strip()
            locked = ".lock" in err
            if not locked or attempt == LOCK_TRIES - 1:
                break
            time.sleep(LOCK_WAIT)  # (another writer holds the lock: it may be moving it)
        said = err.splitlines()[0] if err else f"exit code {proc.returncode}"
        fix = ("; if no git command runs in this repository, delete that lock file (left by "
               "a git that was stopped) and run fleetq again" if locked else "")
        raise GitError(f"git could not move {ref} (it is still at {(old or 'nothing')[:12]}: "
                       f"no other writer moved it): {said}{fix}")

    # -- remotes ---------------------------------------------------------------

    def fetch(self, remote: str, branch: str) -> str | None:
        """Fetch ``branch`` of ``remote``; its sha, or None when it does not exist there."""
        tracking = f"refs/remotes/{remote}/{branch}"
        self.settle()
        for attempt in range(LOCK_TRIES):
            proc = subprocess.run(["git", "fetch", "--quiet", "--no-tags", remote,
                                   f"+refs/heads/{branch}:{tracking}"], cwd=self.root,
                                  capture_output=True, check=False)
            err = proc.stderr.decode(errors="replace")
            # (another fetch of this clone at once moved the remote's copy, or holds its
            # lock: it fetched the same, and this one goes on once it is done)
            if proc.returncode == 0 or "cannot lock ref" not in err or \
                    attempt == LOCK_TRIES - 1:
                break
            time.sleep(LOCK_WAIT)
        if proc.returncode != 0:
            if "couldn't find remote ref" in err or "could not find remote ref" in err:
                subprocess.run(["git", "update-ref", "-d", tracking], cwd=self.root,
                               capture_output=True, check=False)
                return None
            said = err.strip() or (f"stopped by signal {-proc.returncode}" if proc.returncode < 0
                                   else f"exit code {proc.returncode}")
            raise GitError(f"git fetch {remote} {branch} failed: {said}")
        return self.resolve(tracking)

    def remote_head(self, remote: str, branch: str) -> str | None:
        """The commit ``remote``'s ``branch`` is at there (``git ls-remote``,
        nothing fetched), ``None`` when it has none; ``GitError`` when the
        remote cannot be asked."""
        proc = subprocess.run(["git", "ls-remote", "--heads", remote, f"refs/heads/{branch}"],
                              cwd=self.root, capture_output=True, check=False,
                              env=dict(os.environ, GIT_TERMINAL_PROMPT="0"))
        if proc.returncode != 0:
            raise GitError(f"git ls-remote {remote} failed: "
                           f"{proc.stderr.decode(errors='replace').strip()}")
        for line in proc.stdout.decode().splitlines():
            sha, _, ref = line.partition("\t")
            if ref == f"refs/heads/{branch}":
                return sha
        return None

    def push_with_lease(self, remote: str, branch: str, new: str, old: str | None) -> bool:
        """Push ``new`` to ``remote``'s ``branch`` only if it is still at ``old``."""
        lease = f"--force-with-lease=refs/heads/{branch}:{old or ''}"
        self.last_refusal = None
        self.settle()
        proc = subprocess.run(["git", "push", "--quiet", "--porcelain", lease, remote,
                               f"{new}:refs/heads/{branch}"], cwd=self.root,
                              capture_output=True, check=False)
        if proc.returncode == 0:
            with contextlib.suppress(GitError):  # (a copy: the next fetch puts it right)
                self.advance_ref(f"refs/remotes/{remote}/{branch}", new, "fleetq: pushed")
            return True
        text = (proc.stdout + proc.stderr).decode(errors="replace")
        if "stale info" in text or "[rejected]" in text:
            return False  # (the lease, or not a fast-forward: it moved meanwhile)
        if "[remote rejected]" in text:
            # two pushes at once: the remote failed to lock or update the ref (a race);
            # else its hook, a protected branch's rules, its limits: no race
            if any(sign in text for sign in _RACED):
                self.last_refusal = text.strip()
                return False
            raise GitError(f"{remote} refused the push of the state branch {branch}: "
                           f"{text.strip()}; let the account fleetq pushes with push to "
                           f"{branch} (a protected branch's rules, a pre-receive hook), or "
                           f"lift the limit the remote names")
        raise GitError(f"git push {remote} {branch} failed: {text.strip()}")
