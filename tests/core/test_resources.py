"""Quantities: canonical spelling and resource-vector arithmetic (``core.resources``)."""

from __future__ import annotations

import re

import pytest

from reconciler.core.resources import (
    copies_that_fit,
    first_excess,
    format_quantity,
    format_resources,
    is_binary_resource,
    pointwise_max,
    sub,
    total,
)
from reconciler.jobkinds.base import ManifestError, parse_quantity_milli
from tests.builders import GPU, res


@pytest.mark.parametrize(("name", "quantity", "expected"), [
    ("cpu", "4010m", "4010m"),
    ("cpu", "4.01", "4010m"),
    ("cpu", "10m", "10m"),
    ("cpu", "500m", "500m"),
    ("cpu", "2000m", "2"),
    ("cpu", "3", "3"),
    ("cpu", "0", "0"),
    ("cpu", "1e3", "1000"),
    ("pods", "3", "3"),
    ("kube-queue/max-jobs", "1", "1"),
    (GPU, "8", "8"),
    ("memory", "4Gi", "4Gi"),
    ("memory", "4096Mi", "4Gi"),
    ("memory", "1536Mi", "1536Mi"),
    ("memory", "1.5Gi", "1536Mi"),
    ("memory", "1Ti", "1Ti"),
    ("memory", "1024Ti", "1Pi"),
    ("memory", "1Ki", "1Ki"),
    ("memory", "1000", "1000"),
    ("memory", "1G", "1000000000"),
    ("memory", "0", "0"),
    ("ephemeral-storage", "20Gi", "20Gi"),
    ("hugepages-2Mi", "512Mi", "512Mi"),
    ("cpu", "1024", "1024"),  # a decimal resource never takes a binary suffix
])
def test_format_quantity(name: str, quantity: str, expected: str) -> None:
    assert format_quantity(name, parse_quantity_milli(quantity)) == expected


@pytest.mark.parametrize(("quantity", "milli"), [
    ("10m", 10), ("2", 2000), ("1Gi", 1073741824000), ("1e3", 1_000_000), ("0.5", 500),
])
def test_quantities_enter_the_core_as_exact_milli_units(quantity: str, milli: int) -> None:
    assert parse_quantity_milli(quantity) == milli


@pytest.mark.parametrize(("quantity", "expected"), [
    ("4Gi", "4Gi"), ("4010m", "4010m"), ("1", "1"), ("1.5Gi", "1536Mi"),
])
def test_format_round_trips_through_parse(quantity: str, expected: str) -> None:
    spelled = format_quantity("memory", parse_quantity_milli(quantity))
    assert spelled == expected
    assert parse_quantity_milli(spelled) == parse_quantity_milli(quantity)


def test_format_resources_is_name_sorted_and_canonical() -> None:
    requests = res(memory="4Gi", cpu="4010m", pods="3", max_jobs="1")
    formatted = format_resources(requests)
    assert formatted == {"cpu": "4010m", "kube-queue/max-jobs": "1", "memory": "4Gi",
                         "pods": "3"}
    assert list(formatted) == sorted(formatted)


@pytest.mark.parametrize(("name", "binary"), [
    ("memory", True), ("ephemeral-storage", True), ("storage", True),
    ("hugepages-1Gi", True), ("cpu", False), (GPU, False), ("pods", False),
])
def test_is_binary_resource(name: str, binary: bool) -> None:
    assert is_binary_resource(name) is binary


def test_arithmetic_does_not_mutate_its_arguments() -> None:
    a, b = res(cpu="2", memory="1Gi"), res(cpu="500m", gpu="1")
    a_before, b_before = dict(a), dict(b)
    assert total([a, b]) == res(cpu="2500m", memory="1Gi", gpu="1")
    assert sub(a, b) == {"cpu": 1500, "memory": parse_quantity_milli("1Gi"), GPU: -1000}
    assert pointwise_max(a, res(cpu="1", gpu="2")) == res(cpu="2", memory="1Gi", gpu="2")
    assert (a, b) == (a_before, b_before)


@pytest.mark.parametrize(("request_", "free", "expected"), [
    ({"cpu": "2"}, {"cpu": "2"}, None),
    ({"cpu": "2001m"}, {"cpu": "2"}, "cpu"),
    ({"gpu": "1"}, {"cpu": "96"}, GPU),  # absent from free counts as zero
    ({"memory": "1Gi", "cpu": "3"}, {"memory": "1Mi", "cpu": "1"}, "memory"),  # request order
    ({"cpu": "0"}, {}, None),
])
def test_first_excess(request_: dict[str, str], free: dict[str, str],
                      expected: str | None) -> None:
    assert first_excess(res(request_), res(free)) == expected


@pytest.mark.parametrize(("per_pod", "free", "limit", "expected"), [
    ({"cpu": "2"}, {"cpu": "7"}, 10, 3),
    ({"cpu": "2", "gpu": "4"}, {"cpu": "96", "gpu": "8"}, 10, 2),
    ({"cpu": "2"}, {"cpu": "96"}, 5, 5),
    ({"gpu": "1"}, {"cpu": "96"}, 5, 0),
])
def test_copies_that_fit(per_pod: dict[str, str], free: dict[str, str], limit: int,
                         expected: int) -> None:
    assert copies_that_fit(res(per_pod), res(free), limit) == expected


QUANTITIES = ["10m", "2", "1Gi", "1e3", "0.5", "1.5Gi", "4096Mi", "1G", "20Ki", "3E", "7n",
              "123456789u", "1.25", "+5"]


def test_the_quantity_parser_is_kubernetes_own_without_its_package() -> None:
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from reconciler.jobkinds.base import parse_quantity_milli\n"
        f"print([parse_quantity_milli(q) for q in {QUANTITIES!r}])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    # its own values, as the package's import gives them ...
    from decimal import ROUND_CEILING, Decimal

    from kubernetes.utils.quantity import parse_quantity
    expected = [int((Decimal(parse_quantity(q)) * 1000).to_integral_value(ROUND_CEILING))
                for q in QUANTITIES]
    assert out[0] == repr(expected)
    assert out[1] == "[]"  # ... and the API client and its config never imported


def test_the_quantity_parser_falls_back_to_the_package_import(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from reconciler.jobkinds import base

    monkeypatch.delitem(__import__("sys").modules, base.QUANTITY_MODULE, raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: None)
    base.quantity_parser.cache_clear()
    base.kubernetes_folder.cache_clear()  # (the folder found once: found anew, as not there)
    try:
        parse = base.quantity_parser()
        assert parse.__module__ == base.QUANTITY_MODULE
        assert parse("1Gi") == 1073741824
    finally:
        base.quantity_parser.cache_clear()
        base.kubernetes_folder.cache_clear()


def test_a_bad_quantity_names_the_field() -> None:
    with pytest.raises(ManifestError, match=r"spec\.cpu: '12x' is not a Kubernetes quantity"):
        parse_quantity_milli("12x", "spec.cpu")


@pytest.mark.parametrize(("value", "said"), [
    ("NaN", "'NaN' is not a Kubernetes quantity (not a finite number)"),
    ("Infinity", "'Infinity' is not a Kubernetes quantity (not a finite number)"),
    # (YAML's .inf, .nan, true and null, in YAML's words)
    (float("inf"), ".inf is not a Kubernetes quantity (not a finite number)"),
    (float("nan"), ".nan is not a Kubernetes quantity (not a finite number)"),
    (True, "true is not a Kubernetes quantity"),
    (None, "null is not a Kubernetes quantity"),
    ("-1000", "'-1000' is negative: Kubernetes takes no negative quantity of a resource"),
    ("-1m", "'-1m' is negative"),
    ("1e100000000", "'1e100000000' is too large for a quantity of a resource"),
    # the parser's words named a part ("Invalid number format: 10m"); and it took blanks
    ("10mm", "'10mm' is not a Kubernetes quantity (a number with an optional suffix: m, k, "),
    ("1 Gi", "'1 Gi' is not a Kubernetes quantity (a number with an optional suffix"),
    ("2Gi\n", "'2Gi\\n' is not a Kubernetes quantity (a number with an optional suffix"),
])
def test_a_quantity_kubernetes_would_refuse_is_an_error_not_a_crash(value: object,
                                                                       said: str) -> None:
    """NaN and Infinity crashed every reconcile (int() of them), a negative
    request lowered the quota's usage, and a huge exponent took minutes."""
    with pytest.raises(ManifestError, match=re.escape(f"spec.cpu: {said}")):
        parse_quantity_milli(value, "spec.cpu")


def test_the_largest_quantities_that_make_sense_are_taken() -> None:
    assert parse_quantity_milli("1Ei") == (1 << 60) * 1000
    assert parse_quantity_milli("-0") == 0
