"""A fast, deterministic YAML writer for manifests.

It writes block-style YAML the way PyYAML's default dumper lays it out
(indentless sequences, source key order) several times faster, because a
manifest is only mappings, lists and scalars: a string goes out plain when
YAML would read it back as the same string, as a literal block when it has
several lines, and as a double-quoted (JSON) string otherwise. Reading the
output with any YAML loader gives back the value that was written.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from functools import lru_cache
from typing import Any

import yaml.resolver

_RESOLVER = yaml.resolver.Resolver()
_STR = "tag:yaml.org,2002:str"
_PRINTABLE = re.compile("^[\t\n\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*$")
# Printable, but not as itself inside quotes: YAML reads U+2028 and U+2029 as line
# breaks (folded to a space there), and U+FEFF as a byte order mark.
_NOT_RAW_IN_QUOTES = "\u2028\u2029\ufeff"
_ESCAPED_IN_QUOTES = re.compile(f"[{_NOT_RAW_IN_QUOTES}]")
_FIRST_BAD = set("?:,[]{}#&*!|>'\"%@` \t")
_BAD_INSIDE = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029\ufeff]|: |:$| #")
# Read differently by other YAML loaders (YAML 1.2, go-yaml): numbers in any
# spelling and the short booleans.
_NUMBERISH = re.compile(r"^[-+.]?[0-9]|^[-+]?\.(inf|nan)$", re.IGNORECASE)
_OTHER_BOOLS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}
_BLOCK_OK = re.compile(r"^[^\x00-\x08\x0b-\x1f\x7f\u0085\u2028\u2029\ufeff]*$")


@lru_cache(maxsize=1 << 16)
def _plain_ok(text: str) -> bool:
    if not text or text != text.strip() or text[0] in _FIRST_BAD:
        return False
    if not _PRINTABLE.match(text):
        return False
    if text[0] == "-" and (len(text) == 1 or text[1] == " "):
        return False
    if text.startswith(("---", "...")) or _BAD_INSIDE.search(text):
        return False
    if _NUMBERISH.match(text) or text.lower() in _OTHER_BOOLS:
        return False
    tag = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return bool(tag == _STR)


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar; every character that would not read back
    as itself there (non-printable, a line or paragraph separator, U+FEFF)
    escaped."""
    if _PRINTABLE.match(text) and not _ESCAPED_IN_QUOTES.search(text):
        return json.dumps(text, ensure_ascii=False)
    out = []
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch not in _NOT_RAW_IN_QUOTES and _PRINTABLE.match(ch):
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


@lru_cache(maxsize=1 << 16)
def _string(text: str) -> str:
    return text if _plain_ok(text) else _quoted(text)


def scalar(value: Any) -> str:
    """One scalar on one line."""
    if type(value) is str:  # most of them: straight to the memo
        return _string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        if "e" in text and "." not in text:  # YAML 1.1 floats need a dot: 1.0e-05
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        return text
    if isinstance(value, dt.datetime | dt.date):
        return _string(value.isoformat())
    return _string(str(value))


_FLOW_INDICATORS = re.compile(r"[,\[\]{}]")


def flow_scalar(value: Any) -> str:
    """A scalar inside a flow collection (``{a: 1, b: 2}``), where a plain
    string may not hold ``,[]{}``."""
    if type(value) is str:
        return _flow_string(value)
    text = scalar(value)
    if isinstance(value, str) and text == value and _FLOW_INDICATORS.search(text):
        return _quoted(value)
    return text


@lru_cache(maxsize=1 << 16)
def _flow_string(text: str) -> str:
    out = _string(text)
    return _quoted(text) if out == text and _FLOW_INDICATORS.search(text) else out


def _block(text: str, pad: str) -> list[str] | None:
    """A multi-line string as a literal block (``|``), when that is exact."""
    if (not _PRINTABLE.match(text) or not _BLOCK_OK.match(text) or text[:1] in (" ", "\t")
            or "\r" in text or not text.strip()):
        return None
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
        indicator = "|" if not text.endswith("\n\n") else "|+"
    else:
        indicator = "|-"
    if any(line != line.rstrip(" \t") for line in lines):
        return None
    if next(line for line in lines if line)[:1] in (" ", "\t"):
        return None  # the block's indentation is read off its first non-empty line
    if indicator == "|+":
        while lines and lines[-1] == "":
            lines.pop()
        extra = len(text) - len(text.rstrip("\n")) - 1
        lines.extend([""] * extra)
    return [indicator] + [pad + line if line else "" for line in lines]


def _emit_keys(mapping: dict[Any, Any], indent: int, out: list[str]) -> None:
    """The items of a non-empty mapping, each key at ``indent``."""
    pad = " " * indent
    for k, v in mapping.items():
        if type(v) is str and type(k) is str:  # most of them: one memo look-up
            out.append(_string_pair(indent, k, v))
        else:
            _emit_pair(f"{pad}{scalar(k)}:", v, indent, out)


def _emit_pair(head: str, v: Any, indent: int, out: list[str]) -> None:
    """``head`` (``"  key:"``, the key at ``indent``) and its value: nested keys
    go two further in, a sequence's items at the key's own indent."""
    if isinstance(v, dict) and v:
        out.append(head)
        _emit_keys(v, indent + 2, out)
    elif isinstance(v, list) and v:
        out.append(head)
        for item in v:
            _emit_item(item, indent, out)
    else:
        _emit_leaf(v, head, " " * (indent + 2), out)


@lru_cache(maxsize=1 << 16)
def _string_pair(indent: int, key: str, value: str) -> str:
    """The line (or lines) of a string value under a string key at ``indent``."""
    out: list[str] = []
    _emit_leaf(value, f"{' ' * indent}{_string(key)}:", " " * (indent + 2), out)
    return "\n".join(out)


@lru_cache(maxsize=1 << 16)
def _string_item(indent: int, value: str) -> str:
    """The line (or lines) of a string item of a sequence at ``indent``."""
    out: list[str] = []
    _emit_leaf(value, f"{' ' * indent}-", " " * (indent + 2), out)
    return "\n".join(out)


def _emit_leaf(v: Any, head: str, block_pad: str, out: list[str]) -> None:
    """An empty collection or a scalar after ``head`` (a multi-line string as a block)."""
    if isinstance(v, dict):
        out.append(head + " {}")
    elif isinstance(v, list):
        out.append(head + " []")
    elif isinstance(v, str) and "\n" in v:
        lines = _block(v, block_pad)
        if lines is None:
            out.append(f"{head} {_string(v)}")
        else:
            out.append(f"{head} {lines[0]}")
            out.extend(lines[1:])
    else:
        out.append(f"{head} {scalar(v)}")


def _emit_item(item: Any, indent: int, out: list[str]) -> None:
    """One sequence item at ``indent`` (indentless: ``- `` under its key)."""
    if type(item) is str:
        out.append(_string_item(indent, item))
        return
    pad = " " * indent
    inner = indent + 2
    if isinstance(item, dict) and item:
        first = True
        for k, v in item.items():
            if first:
                _emit_pair(f"{pad}- {scalar(k)}:", v, inner, out)
                first = False
            elif type(v) is str and type(k) is str:
                out.append(_string_pair(inner, k, v))
            else:
                _emit_pair(f"{' ' * inner}{scalar(k)}:", v, inner, out)
    elif isinstance(item, list) and item:
        out.append(f"{pad}-")
        for sub in item:
            _emit_item(sub, inner, out)
    else:
        _emit_leaf(item, f"{pad}-", " " * inner, out)


def dump(value: Any) -> str:
    """``value`` (a mapping, as manifests are) as a YAML document."""
    out: list[str] = []
    if isinstance(value, dict) and value:
        _emit_keys(value, 0, out)
    elif isinstance(value, list) and value:
        for item in value:
            _emit_item(item, 0, out)
    else:
        out.append(scalar(value) if not isinstance(value, (dict, list)) else
                   ("{}" if isinstance(value, dict) else "[]"))
    return "\n".join(out) + "\n"
