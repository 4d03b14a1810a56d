"""Kill tests written by the lead (2 Dec 2026, eleventh session) for the engine code changed in that
session: ``scalars._super`` with explicit arguments (``super(Class, self)``) and
``dispatch._where_operands`` (``Tensor.where`` by keyword).

Black-box through the engine, like tests/test_mutation_kills_ops.py; each shape is torch 2.13's
answer (checked in a scratch script), and where Python raises the test asserts an unknown value.
"""

from __future__ import annotations

import textwrap

from shapecheck.engine.domain.values import UNKNOWN
from shapecheck.linter import lint_source

from test_engine_ops import HEADER, _shape, analyze_src, run_of

LAYERS = HEADER + """
class Base(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.heads = heads

    def forward(self, x):
        return x * 2


class Projections(Base):
    def __init__(self, dim, heads):
        super().__init__(dim, heads)
        self.qkv = nn.Linear(dim, dim)


class SingleHead(Projections):
    def __init__(self, dim, heads):
        super().__init__(dim, 1)
"""


def _assigned(source: str, qualname: str) -> dict:
    facts = analyze_src(source)
    assert facts.internal_errors == []
    return {a.name: a.value for a in run_of(facts, qualname, inlined=True).assignments}


def test_scalars_super_may_name_a_grandparent() -> None:
    """``super(Projections, self)`` two levels up runs ``Base.__init__`` (``qkv`` of 3 * 64), not
    ``Projections``' (64) nor ``SingleHead``'s."""
    source = LAYERS + """
class Attention(SingleHead):
    def __init__(self, dim=64, heads=4):
        super(Projections, self).__init__(dim, heads)

    def forward(self, x):
        y = self.qkv(x)


def f(x: Float[Tensor, "b t 64"]):
    out = Attention()(x)
"""
    assert _shape(_assigned(source, "Attention.forward")["y"]) == "(b, t, 192)"


def test_scalars_super_of_a_class_beside_the_parents_is_not_followed() -> None:
    """``Other`` derives from ``Base``; ``super(SingleHead, self)`` there raises TypeError in Python:
    nothing runs, ``qkv`` stays unknown (its output too) (a class among the parents of an unrelated one is not enough)."""
    source = LAYERS + """
class Other(Base):
    def __init__(self, dim=64, heads=4):
        super(SingleHead, self).__init__(dim, heads)
        self.out = nn.Linear(dim, 32)

    def forward(self, x):
        y = self.qkv(x)
        z = self.out(x)


def f(x: Float[Tensor, "b t 64"]):
    out = Other()(x)
"""
    assigned = _assigned(source, "Other.forward")
    assert _shape(assigned["y"]) is None
    assert _shape(assigned["z"]) == "(b, t, 32)"  # the rest of the constructor and forward did run


def test_scalars_super_with_other_arguments_is_unknown() -> None:
    """``super(type(self), self)`` (a class the engine cannot name), ``super(Base)`` (one argument:
    an unbound super object) and ``super()`` in a static method (Python raises) are unknown calls and
    crash nothing (a layer never built stays unknown: a projection of unknown shape)."""
    source = LAYERS + """
class Child(Base):
    def __init__(self, dim=64, heads=4):
        super(type(self), self).__init__(dim, heads)
        self.out = nn.Linear(dim, 32)

    def forward(self, x):
        unbound = super(Base)
        y = self.qkv(x)
        z = self.out(x)
        doubled = Child.twice(x)

    @staticmethod
    def twice(x):
        z = super().forward(x)
        return z


def f(x: Float[Tensor, "b t 64"]):
    out = Child()(x)
"""
    assigned = _assigned(source, "Child.forward")
    assert assigned["unbound"] is UNKNOWN and _shape(assigned["y"]) is None
    assert _shape(assigned["doubled"]) is None
    assert _shape(assigned["z"]) == "(b, t, 32)"  # the rest of the constructor and forward did run


def test_dispatch_tensor_where_keeps_the_node_of_an_operand_given_by_keyword() -> None:
    """``scores.where(condition=keep, other=-inf)`` with a float 0/1 triangle (torch 2.13 raises:
    "where expected condition to be a boolean tensor"): SC201 points at the condition written by
    keyword and offers its fix, as for the positional form."""
    source = textwrap.dedent('''
        import math

        import torch
        from jaxtyping import Float
        from torch import Tensor


        def attend(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
            t = q.size(-2)
            keep = torch.tril(torch.ones(t, t))
            scores = q @ k.transpose(-2, -1) / math.sqrt(64)
            scores = scores.where(condition=keep, other=float("-inf"))
            return scores.softmax(dim=-1) @ v
    ''')
    (found,) = lint_source(source, "where.py").diagnostics
    assert (found.code, found.span.line, found.span.column) == ("SC201", 13, 37)
    assert found.fix is not None


def test_dispatch_tensor_where_of_an_unseen_tensor_broadcasts_it() -> None:
    """``x.where(keep, fallback)`` with ``x`` a parameter the engine cannot see: torch broadcasts
    ``x`` with the two others, so the result's shape is unknown (not ``fallback``'s ``(t, t)``)."""
    source = HEADER + """
def pick(x, keep: Bool[Tensor, "t t"], fallback: Float[Tensor, "t t"]):
    chosen = x.where(keep, fallback)
    same = fallback.where(keep, x)
"""
    facts = analyze_src(source)
    assigned = {a.name: a.value for a in run_of(facts, "pick").assignments}
    assert _shape(assigned["chosen"]) is None
    assert (_shape(assigned["same"]), assigned["same"].dtype) == ("(t, t)", "float")


def test_arithmetic_masked_probabilities_take_the_promoted_dtype() -> None:
    """``tensor_binary``'s probabilities branches: probabilities cast to int64 times a float 0/1
    triangle, or divided by their sum (true division), are float32 in torch 2.13, not the
    probabilities' own int."""
    source = HEADER + """
def attend(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"]):
    t = q.size(-2)
    keep = torch.tril(torch.ones(t, t))
    probs = (q @ k.transpose(-2, -1) / math.sqrt(64)).softmax(dim=-1).long()
    kept = probs * keep
    renormalised = probs / probs.sum(dim=-1, keepdim=True)
"""
    assigned = {a.name: a.value for a in run_of(analyze_src(source), "attend").assignments}
    assert (assigned["probs"].dtype, assigned["kept"].dtype, assigned["renormalised"].dtype) == ("int", "float", "float")
    assert _shape(assigned["kept"]) == _shape(assigned["renormalised"]) == "(b, h, t, t)"
