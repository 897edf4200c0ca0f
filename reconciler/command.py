"""The ``fleetq`` command: the command line, imported so that a Ctrl-C while
fleetq is still loading is told as one at any other time (``fleetq:
interrupted``, exit 130), not as a Python traceback."""

from __future__ import annotations

import os
import sys

EXIT_INTERRUPTED = 130  # (as ``cli.EXIT_INTERRUPTED``: cli is not loaded yet)


def main() -> None:
    try:
        from reconciler.cli import run
    except KeyboardInterrupt:
        print("\nfleetq: interrupted", file=sys.stderr)
        os._exit(EXIT_INTERRUPTED)
    run()


if __name__ == "__main__":
    main()
