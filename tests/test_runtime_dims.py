"""shapecheck.runtime.dims: replaying a jaxtyping dim string against a shape names the failing axis."""

from __future__ import annotations

import pytest

from shapecheck.runtime.dims import format_bound, match_shape, parse_dims


@pytest.mark.parametrize(
    ("dims", "shape", "bound", "problem", "after"),
    [
        ("b t d", (2, 5, 8), {}, None, {"b": 2, "t": 5, "d": 8}),
        ("b t d", (2, 5, 8), {"d": 6}, "axis 2: expected d=6, got 8", {"d": 6, "b": 2, "t": 5}),
        ("b t d", (2, 5), {}, "expected 3 dims (b t d), got 2", {}),
        ("#t t", (1, 5), {"t": 5}, None, {"t": 5}),  # broadcastable: 1 always fits
        ("#t t", (4, 5), {"t": 5}, "axis 0: expected t=5 (or 1), got 4", {"t": 5}),
        ("b 3", (2, 4), {}, "axis 1: expected 3, got 4", {"b": 2}),
        ("_ d", (7, 4), {}, None, {"d": 4}),
        ("*batch d", (2, 3, 4), {}, None, {"*batch": (2, 3), "d": 4}),
        ("*batch d", (2, 9, 4), {"*batch": (2, 3)}, "axes 0-1 (*batch): expected (2, 3), got (2, 9)", {"*batch": (2, 3)}),
        ("... d", (4,), {}, None, {"d": 4}),
        ("*batch t d", (5,), {}, "expected at least 2 dims (*batch t d), got 1", {}),
        ("t n=t-1", (5, 4), {}, None, {"t": 5}),
        ("t t-1", (5, 3), {}, "axis 1: expected t-1=4, got 3", {"t": 5}),
        ("t 2*t", (5, 3), {}, "axis 1: expected 2*t=10, got 3", {"t": 5}),
        ("t __import__('os')", (5, 3), {}, None, {"t": 5}),  # not arithmetic: no claim, and never evaluated
    ],
)
def test_match_shape(dims, shape, bound, problem, after):
    bound = dict(bound)
    assert match_shape(parse_dims(dims), shape, bound) == problem
    assert bound == after


def test_format_bound_keeps_binding_order():
    assert format_bound({"d_model": 512, "b": 2, "t": 5}) == "d_model=512 b=2 t=5"
    assert format_bound({"*batch": (2, 3)}) == "*batch=(2, 3)"
