"""Kill tests written by the lead (2 Dec 2026, eleventh session) for the engine code changed in that
session: ``scalars._super`` with explicit arguments (``super(Class, self)``) and
``dispatch._where_operands`` (``Tensor.where`` by keyword).

Black-box through the engine, like tests/test_mutation_kills_ops.py; each shape is torch 2.13's
answer (checked in a scratch script), and where Python raises the test asserts an unknown value.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine.domain.values import UNKNOWN
from shapecheck.linter import lint_source

from test_engine_ops import HEADER, _shape, analyze_src, run_of
from test_project_analysis import REGISTRY  # transformers' AttentionInterface, written from scratch

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


# ------------------------------------------------------------------ dicts of known keys (twelfth session)

DICT_KEYS = """
from settings import pick_key


def make(dim, **kwargs):
    if 'depthwise' not in kwargs:
        return nn.Conv1d(dim, 2 * dim, 3)
    return nn.Conv1d(dim, dim, 3, groups=dim)


def by_int_key(dim):
    options = {'depthwise': True}
    if 1 in options:
        return nn.Conv1d(dim, 3 * dim, 3)
    return nn.Conv1d(dim, 4 * dim, 3)


def by_unknown_key(dim):
    options = {'depthwise': True}
    if pick_key() in options:
        return nn.Conv1d(dim, 5 * dim, 3)
    return nn.Conv1d(dim, 6 * dim, 3)


def tuple_key(dim):
    options = {}
    options['depthwise', 'bias'] = True
    return make(dim, **options)


def slices(dim):
    options = {'depthwise': True}
    options[1:] = True
    del options[:1]
    return make(dim, **options)


def deleted_unknown(dim):
    options = dict(depthwise=True)
    del options[pick_key()]
    after = options
    bias = options.get('bias')
    return make(dim, bias=bias)


class Stem(nn.Module):
    def __init__(self, dim):
        super().__init__()
        name = 'depthwise'
        self.cfg = dict(bias=True)
        self.cfg[name] = True
        self.conv = make(dim, **self.cfg)
        self.table = torch.zeros(10, dim)
        self.table[0] = 1.0
        self.proj = nn.Linear(self.table.shape[1], dim)

    def forward(self, x):
        return self.conv(x) + self.table[:, :1]


plain = make(8, bias=True)
depthwise = make(8, depthwise=True)
a = by_int_key(8)
b = by_unknown_key(8)
c = tuple_key(8)
d = slices(8)
e = deleted_unknown(8)
stem = Stem(8)
"""


def test_dicts_of_known_keys_decide_in_and_not_in_only_for_string_keys_they_read():
    """``'k' not in kwargs`` is the negation of ``in``; an int key or a key the engine cannot read
    leaves the test undecided (both branches); a tuple key (``d['a', 'b'] = v``), a slice assigned or
    deleted, or a deleted key it cannot read make the dict's keys unknown; the key of an item set on
    a dict attribute may be a name (``self.cfg[name] = True``); a tensor attribute written into
    (``self.table[0] = 1``) stays that tensor."""
    facts = analyze_src(HEADER + textwrap.dedent(DICT_KEYS))
    assert facts.internal_errors == []
    built: dict[str, set[int]] = {}
    for construction in facts.constructions:
        outermost = list(construction.run.chain())[-1] if construction.run is not None else None
        if construction.kind == "Conv1d" and outermost is not None and outermost.inlined:
            # a call with the module level's numbers: dim is 8
            built.setdefault(outermost.qualname, set()).add(construction.params["out_channels"].dim.value // 8)
    assert built == {
        "make": {1, 2},  # plain (not in: 2*dim) and depthwise (dim), one module-level call each
        "by_int_key": {3, 4},
        "by_unknown_key": {5, 6},
        "tuple_key": {1, 2},
        "slices": {1, 2},
        "deleted_unknown": {2},
        "Stem.__init__": {1},
    }
    widths = {
        c.params["in_features"].dim.value for c in facts.constructions
        if c.kind == "Linear" and c.run is not None and c.run.qualname == "Stem.__init__" and c.run.inlined
    }
    assert widths == {8}  # the table written into is still (10, 8)
    after = [a.value for run in facts.runs if run.qualname == "deleted_unknown" for a in run.assignments if a.name == "after"]
    assert after and all(value is UNKNOWN for value in after)  # a Value the engine reads as unknown


TABLE_OF_IMPLEMENTATIONS = textwrap.dedent(REGISTRY) + """



def eager_attention_forward(query, key, value):
    weights = torch.matmul(query, key.transpose(2, 3)).softmax(dim=-1)
    return torch.matmul(weights, value)


def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"], v: Float[Tensor, "b h s d"], implementation):
    by_super = ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)
    by_mapping = ALL_ATTENTION_FUNCTIONS.lookup(implementation, eager_attention_forward)
    y1 = by_super(q, k, v)
    y2 = by_mapping(q, k, v)
"""


def test_a_table_of_implementations_of_the_file_is_followed_to_its_fallback():
    """``super().get(impl, eager)`` of a ``MutableMapping`` subclass and ``self._mapping.get(impl,
    eager)`` with ``impl`` unknown are the eager function (transformers' ``AttentionInterface``)."""
    facts = analyze_src(HEADER + textwrap.dedent(TABLE_OF_IMPLEMENTATIONS))
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert type(values["by_super"]).__name__ == "FunctionValue"
    assert type(values["by_mapping"]).__name__ == "FunctionValue"
    assert _shape(values["y1"]) == "(b, h, t, d)"
    assert _shape(values["y2"]) == "(b, h, t, d)"


CATS_WITH_UNKNOWN = """
from helpers import rotate


def f(v: Float[Tensor, "*batch 3"], w: Float[Tensor, "b 3 4"]):
    x = torch.randn(2, 3)
    with_variadic = torch.cat([x, v, rotate(x)], dim=0)
    ranks_differ = torch.cat([x, w, rotate(x)], dim=0)
    out_of_range = torch.cat([x, rotate(x)], dim=5)
"""


def test_a_cat_with_an_unknown_operand_takes_the_fully_known_shape_only_when_it_can():
    """Beside an operand known only by its trailing dims, the fully known one still gives the rank
    (torch requires one rank): ``(_, 3)``; known operands of two ranks (torch raises) or an axis out
    of range give an unknown shape, without an internal error."""
    facts = analyze_src(HEADER + textwrap.dedent(CATS_WITH_UNKNOWN))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert _shape(values["with_variadic"]) == "(_, 3)"
    assert _shape(values["ranks_differ"]) is None
    assert _shape(values["out_of_range"]) is None


FEATURE_SLICES = """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x: Float[Tensor, "b t 8"], idx):
        qkv = self.qkv(x)
        q = qkv[..., :8]
        k = qkv[..., 8:16]
        full = qkv[:, :, 8:16]
        rows = qkv[:, 1:]
        whole = qkv[..., :]
        picked = qkv[0, :, 8:16]
        widened = qkv[:, None, 8:16]
        by_tuple = qkv[idx]
        last_int = qkv[..., 3]
        return q, k
"""


def test_a_slice_along_a_fused_projections_features_is_a_piece_named_by_its_text():
    """``_feature_slice``: ``qkv[..., a:b]`` and ``qkv[:, :, a:b]`` (all axes written) cut the
    features: a piece named by the slice's text, the slice its node; a slice of another axis, an
    unrestricted ``:``, an inserted axis, an index the engine cannot split into parts or an int at
    the end are not pieces of it."""
    from shapecheck.engine.domain.values import ProjectionTag

    facts = analyze_src(HEADER + textwrap.dedent(FEATURE_SLICES))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    parts = {name: values[name].tag(ProjectionTag).part for name in values if hasattr(values[name], "tag") and values[name].tag(ProjectionTag)}
    assert parts["q"] == (":8",) and parts["k"] == ("8:16",)
    assert parts["full"] == ("8:16",) and parts["picked"] == (0, "8:16")
    assert parts["rows"] == () and parts["whole"] == () and parts["widened"] == ()
    assert parts["last_int"] == (3,)
    assert all(not isinstance(p, str) for p in parts.get("by_tuple", ()))  # an index of unknown parts: no slice piece
    nodes = {name: values[name].tag(ProjectionTag).node for name in ("q", "k", "rows")}
    assert isinstance(nodes["q"], cst.Subscript) and isinstance(nodes["k"], cst.Subscript)
    assert not isinstance(nodes["rows"], cst.Subscript)


JOINED_PIECES = """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x: Float[Tensor, "b t 8"]):
        q = self.qkv(x)
        same = torch.cat([q, q], dim=-1)
        head = q[..., :4]
        twice = torch.cat([head, head], dim=-1)
        whole_and_piece = torch.cat([q, head], dim=-1)
        piece_and_whole = torch.cat([head, q], dim=-1)
        stacked = self.qkv(x).view(x.shape[0], x.shape[1], 3, 8)
        first = stacked[:, :, 0]
        second = stacked[:, :, 1]
        halves = torch.cat([first[..., 4:], first[..., :4]], dim=-1)
        crossed = torch.cat([first[..., :4], second[..., 4:]], dim=-1)
        mixed = torch.cat([head, first], dim=-1)
"""


def test_pieces_of_one_projection_joined_back_are_that_projection():
    """``joins._one_projection``: a cat of equal pieces keeps their piece; of the feature slices of
    one piece (``first[..., 4:]``, ``first[..., :4]``), that piece (``(0,)``); of a projection and a
    slice of it, of slices of two pieces, or of a slice and an int-picked piece, no projection."""
    from shapecheck.engine.domain.values import ProjectionTag

    facts = analyze_src(HEADER + textwrap.dedent(JOINED_PIECES))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    part = lambda name: values[name].tag(ProjectionTag).part if values[name].tag(ProjectionTag) else None
    assert part("same") == () and part("twice") == (":4",)
    assert part("whole_and_piece") is None and part("piece_and_whole") is None
    assert part("first") == (0,) and part("halves") == (0,)
    assert part("crossed") is None and part("mixed") is None
