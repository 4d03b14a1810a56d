"""Rule decisions pinned one by one, where a snippet per branch would be clumsy.

Each test names the rule code in its name, so ``-k SC102`` selects a rule's tests (the mutation
testing script, benchmarks/mutation_testing.py, relies on it).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from shapecheck.engine.symbolic.dims import Dim
from shapecheck.engine.domain.values import Scale
from shapecheck.rules.sc102_wrong_attention_scale import _judge

d, h = Dim.sym("d"), Dim.sym("h")
HALF = Fraction(1, 2)


def power(base: Dim, exponent: Fraction, coef: float = 1.0) -> Scale:
    return Scale(coef, ((base, exponent),))


def const(value: float) -> Scale:
    return Scale(value)


@pytest.mark.parametrize(
    ("factor", "head_dim", "heads", "expected"),
    [
        (power(d, -HALF), d, h, None),  # 1/sqrt(d_k): right
        (power(d, Fraction(-1, 4)), d, h, "that is by d_k ** -0.25; expected d_k ** -0.5"),  # half of a split scale
        (power(d, Fraction(1)), d, h, "that is by d_k ** 1; expected d_k ** -0.5"),  # multiplied by d_k
        (power(d, Fraction(-3, 2)), d, None, "that is by d_k ** -1.5"),
        (power(h, Fraction(-1, 4)), d, h, None),  # a power of another size: no claim
        (power(d, Fraction(-1)), d, h, "scores scaled by 1/d, that is by d_k = d itself; expected 1/sqrt(d)"),
        (power(d, HALF), d, h, "scores multiplied by sqrt(d_k) = sqrt(d); expected divided by sqrt(d)"),
        (power(h * d, -HALF), d, h, "the model width"),
        (power(h * d, -HALF), d, Dim.const(1), None),  # one head: the width is d_k
        (power(h * d, -HALF), d, None, None),  # heads unknown
        (power(d, -HALF, 2.0), d, h, None),  # 2/sqrt(d): a deliberate temperature, not a known mistake
        (const(0.125), Dim.const(16), Dim.const(4), "= 1/sqrt(64), the model width"),
        (const(0.25), Dim.const(16), Dim.const(4), None),  # 1/sqrt(16): right
        (const(0.25), Dim.const(16), Dim.const(1), None),
        (const(0.125), Dim.const(16), None, None),
        (const(1 / 64), Dim.const(64), None, "= 1/64, that is by d_k itself; expected 1/sqrt(64)"),
        (const(8.0), Dim.const(64), None, "= sqrt(64); expected divided by it"),
        (const(1.0), Dim.const(1), None, None),  # d_k = 1: every form is the same
        (const(0.5), Dim.const(7), None, None),  # some other constant: no claim
    ],
)
def test_SC102_judge(factor: Scale, head_dim: Dim, heads: Dim | None, expected: str | None) -> None:
    problem = _judge(factor, head_dim, heads, None)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None and expected in problem, problem


@pytest.mark.parametrize(
    ("seq", "length", "agree"),
    [
        ("ids|embeds", "ids|embeds|position_ids", True),  # one path's length on both sides
        ("ids|embeds", "max_positions", False),  # a plain table length: the rule judges it
        ("T", "max_len", False),  # no path join: two plain sizes
        ("a|b", "c|d", False),  # joins of different sizes on every path
    ],
)
def test_SC302_lengths_that_differ_per_path(seq: str, length: str, agree: bool) -> None:
    from shapecheck.engine.domain.joins import may_agree_on_a_path

    assert may_agree_on_a_path(Dim.sym(seq), Dim.sym(length)) is agree


@pytest.mark.parametrize(
    ("factor", "text"),
    [
        (power(Dim.sym("head_dim"), Fraction(-1)), "1/head_dim"),
        (power(Dim.sym("config.head_dim"), Fraction(-1)), "1/config.head_dim"),
        (power(Dim.sym("d") // Dim.sym("h"), Fraction(-1)), "1/(d//h)"),
        (power(Dim.sym("d") // Dim.sym("h"), Fraction(-1, 4)), "(d//h)**(-1/4)"),
        (power(Dim.sym("window_size[0]"), Fraction(2)), "window_size[0]**2"),
    ],
)
def test_scale_factors_print_as_python_reads_them(factor: Scale, text: str) -> None:
    """The factor in SC102's messages: a compound size or a fractional exponent in brackets, a
    name (dotted, or an item) bare."""
    assert factor.describe() == text
