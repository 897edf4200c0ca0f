"""Problems a user can cause, as values: ``path:line: message``.

The core reports problems instead of raising, so that one bad file never stops
the rest of the fleet from reconciling.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class Problem:
    path: str
    line: int
    message: str
    severity: str = "error"  # error | warning

    def __post_init__(self) -> None:
        if len(self.message) > MAX_MESSAGE:
            object.__setattr__(self, "message", capped(self.message))

    def __str__(self) -> str:
        path = shown_path(self.path)
        where = f"{path}:{self.line}" if self.line else path
        return f"{where}: {self.severity}: {self.message}"


MAX_MESSAGE = 2000  # characters of a message; a longer one is cut in its middle


def capped(text: str) -> str:
    """``text``, cut in its middle when longer than ``MAX_MESSAGE`` (a value
    quoted in a message can be megabytes long): its start and its end, which
    says what to do, are kept."""
    if len(text) <= MAX_MESSAGE:
        return text
    head, tail = MAX_MESSAGE * 3 // 4, MAX_MESSAGE // 5
    return f"{text[:head]} ... ({len(text) - head - tail:,} characters left out) ... " \
        f"{text[-tail:]}"


def yaml_type(value: object) -> str:
    """What a parsed YAML value is, in YAML's words (for a message): "a list",
    not Python's "list"; "a string", not "str"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, dt.datetime):
        return "a timestamp"
    if isinstance(value, dt.date):
        return "a date"
    return f"a {type(value).__name__}"


def listed(words: list[str], last: str = " or ") -> str:
    """``words`` as a sentence lists them: "a, b or c" (``last``: ", or ", " and ")."""
    return ", ".join(words[:-1]) + (last if len(words) > 1 else "") + words[-1]


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """`` (did you mean X?)``, X the choice closest to a mistyped ``word``;
    "" when none is close."""
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def first_of(words: Sequence[str], most: int) -> str:
    """The first ``most`` of ``words``, with how many more: "a, b and 3 more"."""
    more = f" and {len(words) - most} more" if len(words) > most else ""
    return ", ".join(words[:most]) + more


BOOLEAN_WORDS = "YAML reads on, off, yes, no, true and false unquoted as booleans"


def as_written(value: object) -> str:
    """A value as a message quotes it, in YAML's words for YAML's own: true,
    false and null, not Python's True, False and None."""
    if isinstance(value, bool):
        return str(value).lower()
    return "null" if value is None else repr(value)


def quote_it(value: object) -> str:
    """The end of "must be a string, not ...": quote a scalar; a list or a
    mapping is no string quoting makes."""
    if isinstance(value, list | tuple | dict):
        return f"; write one string in place of {yaml_type(value)}"
    return "; quote it"


def as_read(value: object) -> str:
    """A value that should have been a string, as a message shows it: a boolean
    as the YAML it was read from could have been written, and why."""
    if isinstance(value, bool):
        return f"{str(value).lower()} ({BOOLEAN_WORDS})"
    return repr(value)


# (git's own escapes of a byte in a quoted path; any other byte in octal)
_C_ESCAPES = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r",
              0x22: '"', 0x5C: "\\"}
_C_BYTES = {letter: byte for byte, letter in _C_ESCAPES.items()}
_QUOTED = re.compile(r'^"|[\x00-\x1f\x7f\ud800-\udfff]')
_ESCAPE = re.compile(r'\\([0-3][0-7]{2}|[abtnvfr"\\])')


def shown_path(path: str) -> str:
    """A file's path as fleetq writes it (placements.yaml, every output, every
    message): as it is, unless its bytes are not UTF-8 (git takes any; read,
    they are kept as surrogate escapes, which no JSON or terminal takes), it
    holds a control character, or it begins with a double quote; then as git
    writes it (``core.quotePath``): in double quotes, each byte that is not
    printable ASCII in octal (or as C writes it), ``"`` and ``\\`` escaped:
    ``"jobs/caf\\351.yaml"``. ``read_path`` reads it back."""
    if not _QUOTED.search(path):
        return path
    out = []
    for byte in path.encode("utf-8", "surrogateescape"):
        if byte in _C_ESCAPES:
            out.append("\\" + _C_ESCAPES[byte])
        elif byte < 0x20 or byte > 0x7E:
            out.append(f"\\{byte:03o}")
        else:
            out.append(chr(byte))
    return '"' + "".join(out) + '"'


def read_path(text: str) -> str:
    """The path that ``shown_path`` wrote as ``text``."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text
    out = bytearray()
    body, at = text[1:-1], 0
    for escape in _ESCAPE.finditer(body):
        out += body[at:escape.start()].encode("utf-8", "surrogateescape")
        code = escape.group(1)
        out.append(_C_BYTES[code] if code in _C_BYTES else int(code, 8))
        at = escape.end()
    out += body[at:].encode("utf-8", "surrogateescape")
    return out.decode("utf-8", "surrogateescape")
