"""The sandbox the fleet's own templates run in, and what one rendering may cost.

Jinja2's sandbox keeps a template from reaching what it should not, but not
from working without end: ``overlays`` renders every template here, each
rendering with a budget of work counted in the sandbox, the same whatever
the machine and however it is run (in a forked process, in a watch):

- ``OVERLAY_STEPS`` steps for an overlay (rendered for each job and
  cluster), ``STEPS`` for the commit message: each iteration of a loop and
  each call (of a macro, a method, a global) is one, and so is each
  ``PER_STEP`` characters or items of a value made as below;
- no value longer than ``LONGEST`` characters or items made by ``*``,
  ``+``, ``~`` or ``**`` (or an integer of that many bits) or by padding a
  string (``ljust``, ``rjust``, ``center``, ``zfill``, the ``center`` and
  ``indent`` filters, ``lipsum``);
- no rendering longer than ``OUTPUT`` characters.

A template that would go beyond raises ``TooCostly`` (a Jinja2
``TemplateError``) where it does, and is told as any other failing template.

Imported when a template is first rendered (it imports Jinja2).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import jinja2
import jinja2.compiler
import jinja2.filters
import jinja2.nodes
import jinja2.sandbox
import jinja2.utils
import yaml

OVERLAY_STEPS = 10_000  # of one rendering of an overlay (once per cluster and job: at 100,000
# jobs, one that runs out of its budget on each costs about 2.5 minutes)
STEPS = 10_000_000  # of any other template (the commit message: once a reconcile)
LONGEST = 10_000_000  # characters or items of a value a template makes (bits of an integer)
OUTPUT = 100_000_000  # characters of one rendering
PER_STEP = 1000  # characters or items of a value a template makes (as LONGEST) that are a step
_SEQUENCES = (str, bytes, list, tuple)
# a printf-style conversion, and a str.format field's spec: the numbers of each
# (its width, its precision) say how long what it writes may be
_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\d*|\*)(?:\.(\d*|\*))?[a-zA-Z%]")
_FIELD_SPEC = re.compile(r"\{[^{}]*?:([^{}]*)\}")
_NUMBER = re.compile(r"\d+")


def _formatted(text: str | bytes, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """At most how long ``text`` formatted (``%`` or ``str.format``) with
    ``args`` is: itself, the widths and precisions of its conversions (the
    largest whole number given, for a ``*``), and what it is given."""
    written = text.decode(errors="replace") if isinstance(text, bytes) else text
    values = (*args, *kwargs.values())
    given = max((_width(v) for v in values), default=0)
    widths = [n for m in _PRINTF.finditer(written) for n in m.groups() if n]
    widths += [n for spec in _FIELD_SPEC.findall(written) for n in _NUMBER.findall(spec)]
    return (len(written) + sum(given if n == "*" else int(n) if len(n) < 19 else LONGEST + 1
                               for n in widths)
            + sum(len(v) if isinstance(v, _SEQUENCES) else 24 for v in values))


def _replaced(text: str | bytes, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """How long ``text.replace(old, new)`` is."""
    old, new = (*args, kwargs.get("old"), kwargs.get("new"))[:2]
    if not isinstance(old, type(text)) or not isinstance(new, type(text)):
        return len(text)
    times = len(text) + 1 if not old else text.count(old)  # type: ignore[arg-type]
    return len(text) + times * max(0, len(new) - len(old))


def _padding(text: str | bytes, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    return max((_width(a) for a in (*args, *kwargs.values())), default=0)


# str methods whose result may be far longer than what they are given, with how long
_SIZED_BY = {**{name: _padding for name in ("ljust", "rjust", "center", "zfill", "expandtabs")},
             "format": _formatted, "format_map": lambda text, args, kwargs: _formatted(
                 text, tuple(args[0].values()) if args and isinstance(args[0], Mapping)
                 else args, {}),
             "replace": _replaced}


class TooCostly(jinja2.TemplateRuntimeError):
    """A template that works beyond its budget; its message says which and the fix."""


def _too_many_steps(steps: int) -> TooCostly:
    return TooCostly(f"it takes more than {steps:,} steps to render (a loop iteration, a "
                     f"call, {PER_STEP:,} characters or items of a value it makes: a loop that "
                     f"runs too long?); make it do less")


def _too_long(size: int) -> TooCostly:
    return TooCostly(f"it makes a value of {size:,} characters or items, more than "
                     f"{LONGEST:,}; make it smaller")


def _length(value: Any) -> int:
    """How many characters or items ``value`` has (the bits of an integer), 0
    for anything of neither."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value.bit_length()
    if isinstance(value, _SEQUENCES):
        return len(value)
    return 0


def _width(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


_STEP = "loop_step"  # (the first statement of each loop's body, ``Sandbox._parse``)


class _CodeGenerator(jinja2.compiler.CodeGenerator):
    """Jinja2's, with each loop step spent (``Sandbox.spend``) and what ``~``
    joins measured (``Sandbox.sized``)."""

    def visit_ExprStmt(self, node: jinja2.nodes.ExprStmt, frame: jinja2.compiler.Frame) -> None:
        if isinstance(node.node, jinja2.nodes.EnvironmentAttribute) and node.node.name == _STEP:
            self.writeline("environment.spend(1)", node)
        else:
            super().visit_ExprStmt(node, frame)

    def visit_Concat(self, node: jinja2.nodes.Concat, frame: jinja2.compiler.Frame) -> None:
        self.write("environment.sized(")
        super().visit_Concat(node, frame)
        self.write(")")


class Sandbox(jinja2.sandbox.SandboxedEnvironment):
    """A Jinja2 sandbox whose every rendering has a budget (see the module's
    docstring); ``render`` renders with a whole one."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _CodeGenerator

    def __init__(self, sources: Mapping[str, str]) -> None:
        super().__init__(loader=jinja2.DictLoader(dict(sources)),
                         undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                         autoescape=False)
        self.steps, self.steps_left = STEPS, STEPS
        self.filters["to_yaml"] = lambda v: yaml.safe_dump(v, default_flow_style=True).strip()
        self.filters["center"] = _padded(self, jinja2.filters.do_center, "width", 1)
        self.filters["indent"] = _padded(self, jinja2.filters.do_indent, "width", 1)
        self.globals["lipsum"] = _padded(self, jinja2.utils.generate_lorem_ipsum, "n", 0, 100)
        # (the filters of str.replace and of ``%``: measured as those are, ``_SIZED_BY``)
        self.filters["replace"] = _sized(self, jinja2.filters.do_replace,
                                         lambda a, k: _replaced(str(a[1]), a[2:4], {}))
        self.filters["format"] = _sized(self, jinja2.filters.do_format,
                                        lambda a, k: _formatted(str(a[0]), a[1:], k))

    def _parse(self, source: str, name: str | None,
               filename: str | None) -> jinja2.nodes.Template:
        """The template, each of its loops taking a step per iteration."""
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(jinja2.nodes.For):
            step = jinja2.nodes.ExprStmt(jinja2.nodes.EnvironmentAttribute(_STEP))
            loop.body.insert(0, step.set_lineno(loop.lineno).set_environment(self))
        return tree

    def wrap_str_format(self, value: Any) -> Any:
        """Jinja2's ``str.format`` (and ``format_map``) of the sandbox, taken at
        access, measured as ``call`` measures the other str methods."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text, size_of = value.__self__, _SIZED_BY[value.__name__]

        def measured(*args: Any, **kwargs: Any) -> Any:
            self.make(size_of(text, args, kwargs))
            return wrapped(*args, **kwargs)
        return measured

    def spend(self, steps: int) -> None:
        self.steps_left -= steps
        if self.steps_left < 0:
            raise _too_many_steps(self.steps)

    def call(__self, __context: Any, __obj: Any,  # (named as Jinja2 names them)
             *args: Any, **kwargs: Any) -> Any:
        __self.spend(1)
        name, of = getattr(__obj, "__name__", None), getattr(__obj, "__self__", None)
        if isinstance(of, (str, bytes)) and name in _SIZED_BY:
            __self.make(_SIZED_BY[name](of, args, kwargs))
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "%" and isinstance(left, (str, bytes)):  # (printf-style: its widths)
            size = _formatted(left, right if isinstance(right, tuple) else (right,), {})
        elif operator == "**":  # (bits: a base of 1 or -1 makes none more)
            size = _length(left) * _width(right) if _length(left) > 1 else 0
        elif operator == "*" and isinstance(left, _SEQUENCES):
            size = len(left) * _width(right)
        elif operator == "*" and isinstance(right, _SEQUENCES):
            size = _width(left) * len(right)
        else:  # (the bits of a product of integers, a sum)
            size = _length(left) + _length(right)
        self.make(size)
        return super().call_binop(context, operator, left, right)

    def sized(self, value: Any) -> Any:
        self.make(_length(value))
        return value

    def make(self, size: int) -> None:
        """Let a value of ``size`` characters or items be made: refused beyond
        ``LONGEST``, else its steps spent."""
        if size > LONGEST:
            raise _too_long(size)
        self.spend(size // PER_STEP)


def _padded(env: Sandbox, function: Any, width: str, at: int, scale: int = 1) -> Any:
    """``function`` (``_sized``), of an argument ``width`` (or its ``at``-th)
    that says how long a value it makes, of ``scale`` characters or items each."""
    return _sized(env, function, lambda args, kwargs: _width(
        kwargs.get(width, args[at] if len(args) > at else 0)) * scale)


def _sized(env: Sandbox, function: Any, size_of: Any) -> Any:
    """``function`` (a filter), refusing a call whose result ``size_of`` its
    arguments says is too long, and spending the steps of what it makes."""
    @functools.wraps(function)  # (with what Jinja2 marked it with)
    def sized(*args: Any, **kwargs: Any) -> Any:
        env.make(size_of(args, kwargs))
        return function(*args, **kwargs)
    return sized


def render(template: jinja2.Template, context: Mapping[str, Any], *,
           steps: int = STEPS) -> str:
    """``template`` rendered with ``context`` and a whole budget of ``steps``
    (``TooCostly`` beyond it; any error of its rendering raised)."""
    env = template.environment
    if isinstance(env, Sandbox):
        env.steps, env.steps_left = steps, steps
    parts, size = [], 0
    for part in template.generate(context):
        size += len(part)
        if size > OUTPUT:
            raise TooCostly(f"it renders more than {OUTPUT:,} characters; make it render less")
        parts.append(part)
    return "".join(parts)
