"""What the check of a job's fields costs, beside parsing the job.

Reads the job files of a fleet repo's ``HEAD`` (``git cat-file --batch``), parses
each with libyaml, then times ``schema.check_fields`` over every job parsed, in one
process, and prints both times and their ratio::

    python -m benchmarks.fields FLEET [--jobs N]

The check runs on the manifests parsed once, so the ratio is the check's share
of parsing alone (fleetq reads each file once, and reads its parsed jobs from the
cache afterwards: only a cold reconcile, or a pushed file, pays it).
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

import yaml

from reconciler.jobkinds.schema import check_fields


def job_blobs(fleet: Path, most: int) -> list[bytes]:
    listing = subprocess.run(["git", "-C", str(fleet), "ls-tree", "-r", "HEAD", "jobs/"],
                             capture_output=True, check=True, text=True).stdout
    blobs = [line.split()[2] for line in listing.splitlines()
             if line.endswith(".yaml") and " blob " in line][:most]
    out = subprocess.run(["git", "-C", str(fleet), "cat-file", "--batch"],
                         input="".join(f"{b}\n" for b in blobs).encode(), capture_output=True,
                         check=True).stdout
    texts, at = [], 0
    for _ in blobs:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        texts.append(out[header_end + 1:header_end + 1 + size])
        at = header_end + 1 + size + 1
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fleet", type=Path)
    parser.add_argument("--jobs", type=int, default=10_000, help="at most this many files")
    args = parser.parse_args()
    texts = job_blobs(args.fleet, args.jobs)
    started = time.perf_counter()
    docs = [d for text in texts for d in yaml.load_all(text, Loader=yaml.CSafeLoader)
            if isinstance(d, dict)]
    parsing = time.perf_counter() - started
    check_fields(docs[0], str(docs[0].get("apiVersion")), str(docs[0].get("kind")))  # (models)
    started = time.perf_counter()
    told = 0
    for doc in docs:
        found = check_fields(doc, str(doc.get("apiVersion")), str(doc.get("kind")))
        told += len(found.errors) + len(found.unknown)
    checking = time.perf_counter() - started
    print(f"{len(docs):,} jobs: parsing {parsing:.2f} s, checking their fields {checking:.2f} s "
          f"({checking / parsing:.3f} × parsing, {checking / len(docs) * 1e6:.0f} µs a job); "
          f"{told} mistake(s) found")


if __name__ == "__main__":
    main()
