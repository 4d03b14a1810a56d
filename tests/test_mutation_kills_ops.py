"""Op-rule behaviour that mutation testing found unpinned (benchmarks/mutation_testing.py).

Black-box through the engine, like tests/test_engine_ops.py: each test analyses a small function and
asserts the shape, dtype, tags or conflicts the engine infers; shapes are what torch gives.
"""

from __future__ import annotations

import math
import re
import textwrap
import traceback
from pathlib import Path, PurePosixPath

import libcst as cst

from shapecheck.engine.domain.tags import (
    AttentionOutputTag,
    CauseTag,
    LayerOutputTag,
    LeadingOfUnknownRank,
    ModelOutputTag,
    NormalisedTag,
    PaddingTag,
    ParameterTag,
    FilledTag,
    KernelLayout,
    KeyTransposed,
    Permuted,
    Reordered,
    SequenceOriginTag,
    ShiftTag,
    StreamTag,
)
from shapecheck.engine.domain.values import (
    UNKNOWN,
    MaskedTag,
    PositionTag,
    ProbsTag,
    ProjectionTag,
    ScaleTag,
    ScoresTag,
    TensorValue,
    TokenEmbeddingTag,
    TriangleTag,
)
from shapecheck.engine.facts.training import training_calls

from test_engine_ops import HEADER, _shape, analyze_src, body, run_of, values_of
from test_engine_training import facts_of as training_facts_of

CODE = cst.Module([])


def _code(node: cst.CSTNode | None) -> str | None:
    return None if node is None else CODE.code_for_node(node)


def _run(src: str, func: str = "f"):
    facts = analyze_src(HEADER + textwrap.dedent(src))
    assert facts.internal_errors == []  # an op rule that raises gives up silently: never in these tests
    return {a.name: a.value for a in run_of(facts, func).assignments}, facts.conflicts


# --- casts ---------------------------------------------------------------------------------------


def test_casts_keep_the_shape_and_set_the_dtype_class() -> None:
    values = values_of(body(
        """
        y1 = i.float()
        y2 = x.long()
        y3 = x.bool()
        y4 = i.half()
        y5 = x.int()
        """
    ))
    found = {name: (_shape(values[name]), values[name].dtype) for name in ("y1", "y2", "y3", "y4", "y5")}
    assert found == {
        "y1": ("(b, t)", "float"),
        "y2": ("(b, t, d)", "int"),
        "y3": ("(b, t, d)", "bool"),
        "y4": ("(b, t)", "float"),
        "y5": ("(b, t, d)", "int"),
    }


# --- transposes: which tensor is a transposed key, which axis of the scores holds the keys -----------


TRANSPOSES = """
kt = q.transpose(-2, -1)
scores = q @ kt
flipped = scores.transpose(-2, -1)
back = flipped.transpose(-1, -2)
flipped_mt = scores.mT
kt_back = kt.transpose(-2, -1)
"""


def test_a_transposed_key_is_marked_and_transposing_back_unmarks_it() -> None:
    values = values_of(body(TRANSPOSES))
    marked = values["kt"].tag(KeyTransposed)
    assert marked is not None and _shape(marked.source) == "(b, h, t, k)"
    assert not values["kt_back"].has(KeyTransposed)


def test_transposing_the_scores_moves_their_key_axis() -> None:
    values = values_of(body(TRANSPOSES))
    axes = {name: values[name].tag(ScoresTag).key_axis for name in ("scores", "flipped", "back", "flipped_mt")}
    assert axes == {"scores": -1, "flipped": -2, "back": -1, "flipped_mt": -2}


def test_a_reordering_records_its_call_its_source_and_the_layout() -> None:
    values = values_of(body(
        """
        y = q.permute(0, 2, 1, 3)
        z = y.permute(0, 2, 1, 3)
        """
    ))
    y, z = values["y"], values["z"]
    reordered = y.tag(Reordered)
    assert reordered.order == (0, 2, 1, 3) and _code(reordered.node) == "q.permute(0, 2, 1, 3)"
    assert _shape(reordered.source) == "(b, h, t, k)"
    permuted = y.tag(Permuted)
    assert permuted.order == (0, 2, 1, 3) and _code(permuted.node) == "q.permute(0, 2, 1, 3)"
    assert not z.has(Permuted)  # permuted back: contiguous again
    assert z.tag(Reordered).source is y


# --- views -----------------------------------------------------------------------------------------


def test_a_view_derived_from_the_source_size_keeps_its_leading_dims() -> None:
    values, conflicts = _run(
        """
        def f(p: Float[Tensor, "*batch d"], r: Float[Tensor, "b t 12"], x: Float[Tensor, "b t d"],
              g: Float[Tensor, "b 3 4"], w: Float[Tensor, "b 12"], n: int):
            y1 = p.view(p.size()[:-1] + (4, -1))
            y2 = p.view(shape=p.size()[:-1] + (2, p.shape[-1] // 2))
            y3 = r.view(r.size()[:-1] + (3, -1))
            y4 = x.view(x.size()[:-1] + (2, x.shape[-1] // 2))
            y5 = r.view(r.size()[:-1] + (5, -1))
            y6 = r.view(r.size()[:-1] + (5, 2))
            y7 = r.view(r.size()[:-1] + (4, 4))
            y8 = g.view(g.size()[:-2] + (3, 1))
            y9 = x.view(x.size()[:-1] + (n, x.shape[-1]))
            y10 = w.view(x.size()[:-2] + (3, 4))
        """
    )
    names = [f"y{i}" for i in range(1, 11)]
    shapes = {name: _shape(values[name]) for name in names}
    assert shapes == {
        "y1": "(*, 4, d//4)",  # the hidden prefix stays: a plain view of a variadic shape would not know
        "y2": "(*, 2, d//2)",
        "y3": "(b, t, 3, 4)",
        "y4": "(b, t, 2, d//2)",
        "y5": None,  # 12 is not divisible by 5: torch raises, no shape
        "y6": None,
        "y7": None,
        "y8": None,
        "y9": None,
        "y10": "(b, 3, 4)",  # another tensor's sizes: an ordinary view
    }
    assert all(values[name].dtype == "float" for name in names)  # still the source's values
    assert [(c.kind, c.op, _code(c.node)) for c in conflicts] == [
        ("heads", "view", "r.view(r.size()[:-1] + (5, 2))"),  # 5 heads of 12 // 5 = 2
        ("reshape", "view", "r.view(r.size()[:-1] + (4, 4))"),
        ("reshape", "view", "g.view(g.size()[:-2] + (3, 1))"),  # 3 * 4 elements, not 3: no head split
        ("reshape", "view", "x.view(x.size()[:-1] + (n, x.shape[-1]))"),  # forgot to divide by n
    ]
    assert "(12)" in conflicts[0].detail and "(5, 2)" in conflicts[0].detail


def test_a_view_of_an_unknown_tensor_takes_the_sizes_given() -> None:
    values, conflicts = _run(
        """
        def f(z, n: int):
            y = z.view(0, 4)
            w = z.view(2, -1)
            u = z.view(n, 0)
        """
    )
    assert _shape(values["y"]) == "(0, 4)"  # an empty tensor is a valid view target
    assert _shape(values["u"]) == "(n, 0)"
    assert str(values["w"].shape).startswith("(2, ")
    assert conflicts == []


UNEVEN = """
def f(r: Float[Tensor, "b t 12"], w: Float[Tensor, "b 12"], o: Float[Tensor, "b t 13"], v: Float[Tensor, "13"],
      x: Float[Tensor, "b t d"], n: int):
    B, T, C = r.shape
    a = r.view(B, T, 5, 2)
    b = w.view(w.shape[0], 5, 2)
    c = o.view(B, T, 2, 6)
    d = v.view(2, 6)
    e = r.view(B, T, 4, 4)
    g = r.view(B, T, 2, 4, 3)
    h = x.view(B, T, x.shape[-1], 5, 2)
    k = r.view(B, T, n, 12)
"""


def test_an_uneven_head_split_is_a_heads_conflict_and_other_numel_errors_are_reshapes() -> None:
    values, conflicts = _run(UNEVEN)
    kinds = [(c.kind, _code(c.node)) for c in conflicts]
    assert kinds == [
        ("heads", "r.view(B, T, 5, 2)"),  # 12 // 5 = 2: two features lost
        ("heads", "w.view(w.shape[0], 5, 2)"),
        ("heads", "o.view(B, T, 2, 6)"),  # two heads of 13
        ("heads", "v.view(2, 6)"),
        ("reshape", "r.view(B, T, 4, 4)"),  # 4 heads of 4 is not 12 // 4
        ("reshape", "r.view(B, T, 2, 4, 3)"),  # 12 = 4 * 3, but an extra axis of 2
        ("reshape", "x.view(B, T, x.shape[-1], 5, 2)"),  # an unknown width d: no head split to judge
        ("reshape", "r.view(B, T, n, 12)"),  # n heads of the whole width: right only if n == 1
    ]
    lost = conflicts[0].detail
    assert "12" in lost and "5" in lost  # the width and the head count
    assert all(_shape(values[name]) is None for name in "abcdeg")


CONFIGURED = """
from dataclasses import dataclass


@dataclass
class Config:
    n_embd: int = 12
    n_head: int = 5


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head

    def forward(self, x: Float[Tensor, "b t 12"], v: Float[Tensor, "12"]):
        B, T, C = x.size()
        a = x.view(B, T, self.n_head, C // self.n_head)
        b = x.view((B, T, self.n_head, C // self.n_head))
        c = v.view(self.n_head, C // self.n_head)
        return a


model = Attention(Config())
"""


def test_an_uneven_head_split_lands_on_the_configured_head_count() -> None:
    facts = analyze_src(HEADER + textwrap.dedent(CONFIGURED))
    heads = [c for c in facts.conflicts if c.kind == "heads"]
    assert [_code(c.node).split("(")[0] for c in heads] == ["x.view", "x.view", "v.view"]
    assert [_code(c.at) for c in heads] == ["5", "5", "5"]  # the n_head default, not n_embd's 12
    assert all("Config.n_head" in c.detail for c in heads)


def test_an_uneven_head_split_of_a_width_the_path_pins_down() -> None:
    """``C`` is a symbol, but ``assert C == 12`` binds it: five heads of 12 lose two features."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t c"]):
            B, T, C = x.shape
            assert C == 12
            y = x.view(B, T, 5, 2)
            w = x.view(B, T, 1, 12)
        """
    )
    assert [(c.kind, _code(c.node)) for c in conflicts] == [("heads", "x.view(B, T, 5, 2)")]
    assert "12" in conflicts[0].detail and "5" in conflicts[0].detail
    assert _shape(values["w"]) == "(b, t, 1, 12)"  # one head: fine


def test_a_derived_view_of_one_dim_into_one_size_learns_the_width() -> None:
    """``x.view(x.size()[:-1] + (12,))`` runs, so d == 12 from then on: five heads of d lose features."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"]):
            B, T, D = x.shape
            y = x.view(x.size()[:-1] + (12,))
            bad = x.view(B, T, 5, 2)
        """
    )
    assert _shape(values["y"]) == "(b, t, 12)"
    assert [(c.kind, _code(c.node)) for c in conflicts] == [("heads", "x.view(B, T, 5, 2)")]


# --- the op rules' own bodies (mutated since the rules are registered without a decorator) -----------


def _analysed(code: str):
    """The values of ``f`` (standard inputs, ``n`` a size the engine cannot read), and the facts."""
    facts = analyze_src(body("n = B + 0\n" + textwrap.dedent(code)))
    return {a.name: a.value for a in run_of(facts, "f").assignments}, facts


def _shapes_and_dtypes(code: str) -> dict:
    values, facts = _analysed(code)
    assert facts.internal_errors == []
    return {name: (_shape(value), getattr(value, "dtype", None)) for name, value in values.items() if name not in "BTDn"}


def test_reshaping_ops_by_keyword_and_by_unreadable_arguments() -> None:
    """Shapes torch gives (None where the sizes cannot be read or torch raises); the dtype always stays."""
    assert _shapes_and_dtypes(
        """
        a1 = x.flatten(start_dim=1)
        a2 = x.flatten(end_dim=1)
        a3 = x.flatten(1, 1)
        a4 = i.flatten(n)
        a5 = i.flatten(0, n)
        a6 = x.flatten(2, 1)
        a7 = p.flatten(1)
        a8 = i.flatten(start_dim=n)
        a9 = i.flatten(0, end_dim=n)
        a10 = x.flatten(5)
        a11 = i.flatten(n).flatten(0, 1)
        b1 = u.squeeze(dim=1)
        b2 = i.squeeze(n)
        b3 = u.squeeze((1,))
        b4 = col.squeeze((n,))
        c1 = i.unsqueeze(dim=1)
        c2 = i.unsqueeze(n)
        c3 = i.unsqueeze(-1)
        f1 = x.unflatten(dim=1, sizes=(2, -1))
        f2 = i.unflatten(n, (2, -1))
        f3 = i.unflatten(5, (2, -1))
        f4 = r.unflatten(-1, (3, 4))
        f5 = r.unflatten(2, sizes=(2, 2, 3))
        f6 = p.unflatten(-1, (2, -1))
        """
    ) == {
        "a1": ("(b, d*t)", "float"),
        "a2": ("(b*t, d)", "float"),
        "a3": ("(b, t, d)", "float"),
        "a4": (None, "int"),
        "a5": (None, "int"),
        "a6": (None, "float"),  # start after end: torch raises
        "a7": (None, "float"),
        "a8": (None, "int"),
        "a9": (None, "int"),
        "a10": (None, "float"),  # no axis 5: torch raises
        "a11": (None, "int"),
        "b1": ("(b, t)", "float"),
        "b2": (None, "int"),
        "b3": ("(b, t)", "float"),
        "b4": (None, "float"),
        "c1": ("(b, 1, t)", "int"),
        "c2": (None, "int"),
        "c3": ("(b, t, 1)", "int"),
        "f1": ("(b, 2, t//2, d)", "float"),
        "f2": (None, "int"),
        "f3": (None, "int"),  # no axis 5: torch raises
        "f4": ("(b, t, 3, 4)", "float"),
        "f5": ("(b, t, 2, 2, 3)", "float"),
        "f6": ("(*, 2, d//2)", "float"),
    }


def test_an_unflatten_that_loses_features_is_a_heads_conflict_and_other_sizes_a_reshape() -> None:
    values, facts = _analysed(
        """
        y = r.unflatten(-1, (5, 2))
        z = r.unflatten(-1, (5, 3))
        """
    )
    found = [(c.kind, c.op, _code(c.node), c.detail) for c in facts.conflicts]
    assert found == [
        ("heads", "unflatten", "r.unflatten(-1, (5, 2))", "cannot unflatten axis -1 of size 12 into (5, 2)"),
        ("reshape", "unflatten", "r.unflatten(-1, (5, 3))", "cannot unflatten axis -1 of size 12 into (5, 3)"),
    ]
    assert (_shape(values["y"]), values["y"].dtype) == (None, "float")


def test_axis_order_ops_by_keyword_and_by_unreadable_arguments() -> None:
    values, facts = _analysed(
        """
        d1 = q.transpose(dim0=1, dim1=2)
        d2 = i.transpose(0, n)
        d3 = q.transpose(1, dim1=3)
        d4 = i.transpose(n, 1)
        e1 = q.permute(dims=(0, 2, 1, 3))
        e2 = i.permute(n, 0)
        e3 = i.permute(0, 2)
        e4 = i.permute(1, -1)
        e5 = q.permute(0, 1, -1, -2)
        e6 = q.permute(1, 0, 3, 2)
        e7 = x.permute(2, 0, 1)
        e8 = x.permute(0, 2, 1)
        e9 = x.permute(-3, -1, -2)
        e10 = x.permute(3, 1, 2)
        g1 = md.T
        g2 = x.T
        g3 = md.t()
        g4 = q.mT
        g5 = md.mT
        g6 = p.T
        """
    )
    assert facts.internal_errors == []
    shapes = {name: (_shape(value), value.dtype) for name, value in values.items() if name[0] in "deg"}
    assert shapes == {
        "d1": ("(b, t, h, k)", "float"),
        "d2": (None, "int"),
        "d3": ("(b, k, t, h)", "float"),
        "d4": (None, "int"),
        "e1": ("(b, t, h, k)", "float"),
        "e2": (None, "int"),
        "e3": (None, "int"),  # not a permutation of (0, 1): torch raises
        "e4": (None, "int"),  # axis 1 twice
        "e5": ("(b, h, k, t)", "float"),
        "e6": ("(h, b, k, t)", "float"),
        "e7": ("(d, b, t)", "float"),
        "e8": ("(b, d, t)", "float"),
        "e9": ("(b, d, t)", "float"),
        "e10": (None, "float"),  # no axis 3: torch raises
        "g1": ("(d, t)", "float"),
        "g2": ("(d, t, b)", "float"),
        "g3": ("(d, t)", "float"),
        "g4": ("(b, h, k, t)", "float"),
        "g5": ("(d, t)", "float"),
        "g6": (None, "float"),
    }
    # A transposed key: the last two axes swapped, the batch axes in place.
    transposed = {name for name, value in values.items() if name[0] in "deg" and value.has(KeyTransposed)}
    assert transposed == {"e5", "e8", "e9", "g1", "g3", "g4", "g5"}
    orders = {name: values[name].tag(Permuted).order for name in ("d1", "e6", "e7", "g2", "g4", "g5")}
    assert orders == {"d1": (0, 2, 1, 3), "e6": (1, 0, 3, 2), "e7": (2, 0, 1), "g2": (2, 1, 0), "g4": (0, 1, 3, 2), "g5": (1, 0)}
    assert _code(values["g4"].tag(Reordered).node) == "q.mT"
    assert all(not values[name].has(Permuted) for name in ("d2", "e2", "e3", "g6"))


def test_an_unreadable_transpose_or_permute_forgets_a_transposed_key() -> None:
    values, facts = _analysed(
        """
        kt = q.transpose(-2, -1)
        a = kt.transpose(1, n)
        b = kt.permute(0, n, 2, 3)
        c = md.T
        d = c.T
        """
    )
    assert values["kt"].has(KeyTransposed)
    assert not values["a"].has(KeyTransposed) and not values["b"].has(KeyTransposed)
    assert (values["a"].dtype, values["b"].dtype) == ("float", "float")
    assert values["c"].has(KeyTransposed) and not values["d"].has(KeyTransposed)  # transposed back
    assert _shape(values["d"]) == "(t, d)"


def test_dtype_and_identity_ops() -> None:
    values, facts = _analysed(
        """
        h1 = x.to(torch.int64)
        h2 = x.to(dtype=torch.bool)
        h3 = i.to("cpu", torch.float16)
        h4 = i.to(x)
        h5 = i.to("cpu")
        h6 = x.type_as(i)
        h7 = i.type_as(other=x)
        o1 = col.expand_as(x)
        o2 = i.view_as(bm)
        o3 = x.reshape_as(x.transpose(1, 2))
        k1 = bm.scatter(1, i, True)
        k2 = i.scatter_add(1, i, i)
        y = q.permute(0, 2, 1, 3)
        c1 = y.clone()
        c2 = y.contiguous()
        c3 = y.cpu()
        c4 = y.detach()
        """
    )
    assert facts.internal_errors == []
    found = {name: (_shape(value), value.dtype) for name, value in values.items() if name[0] in "hok"}
    assert found == {
        "h1": ("(b, t, d)", "int"),
        "h2": ("(b, t, d)", "bool"),
        "h3": ("(b, t)", "float"),
        "h4": ("(b, t)", "float"),
        "h5": ("(b, t)", "int"),
        "h6": ("(b, t, d)", "int"),
        "h7": ("(b, t)", "float"),
        "o1": ("(b, t, d)", "float"),
        "o2": ("(t, t)", "int"),
        "o3": ("(b, d, t)", "float"),
        "k1": ("(t, t)", "bool"),
        "k2": ("(b, t)", "int"),
    }
    assert _code(values["k1"].node) == "bm.scatter(1, i, True)"
    # A copy is contiguous: the permutation is forgotten; detach returns the very tensor.
    assert [values[name].has(Permuted) for name in ("y", "c1", "c2", "c3", "c4")] == [True, False, False, False, True]
    assert _shape(values["c1"]) == "(b, t, h, k)"


def test_a_scatter_keeps_the_provenance_of_its_source() -> None:
    values, facts = _analysed(
        """
        emb = nn.Embedding(10, 4)
        e = emb(i)
        y = e.scatter(1, i, 0.0)
        """
    )
    kinds = {type(tag).__name__ for tag in values["e"].tags}
    assert kinds and kinds <= {type(tag).__name__ for tag in values["y"].tags}


def test_fill_records_its_value() -> None:
    values, facts = _analysed(
        """
        a = torch.empty(T, T).fill_(0.5)
        b = torch.empty(T, D).fill_(value=-2.0)
        c = torch.empty(T, D).fill_(x.foo)
        """
    )
    assert facts.internal_errors == []
    assert values["a"].tag(FilledTag).value.value == 0.5 and _shape(values["a"]) == "(t, t)"
    assert values["b"].tag(FilledTag).value.value == -2.0
    assert not values["c"].has(FilledTag) and _shape(values["c"]) == "(t, d)"  # a value it cannot read
    assert _code(values["a"].node) == "torch.empty(T, T).fill_(0.5)"


def test_broadcasts_repeats_and_size_queries() -> None:
    values, facts = _analysed(
        """
        l1 = col.expand(-1, -1, 5)
        l2 = col.expand(4, -1, -1, 5)
        l3 = p.expand(-1, 3)
        l4 = col.expand(n, -1, 5)
        l5 = i.expand(n)
        l6 = col.expand(-1, 4, -1, 5)
        m1 = x.repeat(2, 1, 3)
        m2 = x.repeat(2, 1)
        m3 = p.repeat(2, 2)
        m4 = i.repeat(3, 1, 2)
        m5 = i.repeat(n, 1)
        m6 = x.repeat(repeats=(2, 1, 1))
        m7 = x.repeat(x.foo)
        l7 = col.expand(x.foo)
        f1 = x.unflatten(1, (-1, -1))
        r1 = x.repeat_interleave(repeats=2, dim=1)
        r2 = p.repeat_interleave(2, dim=-1)
        r3 = p.repeat_interleave(2, dim=0)
        r4 = p.repeat_interleave(2, dim=-3)
        r5 = x.repeat_interleave(2, dim=-1)
        r6 = x.repeat_interleave(2, dim=3)
        r7 = x.repeat_interleave(3, 0)
        r8 = x.repeat_interleave(2, dim=n)
        s1 = x.size(dim=1)
        s2 = x.size(-1)
        s4 = x.size()
        s5 = x.dim()
        s6 = q.ndimension()
        s7 = x.numel()
        s8 = p.dim()
        s9 = p.numel()
        """
    )
    assert facts.internal_errors == []
    found = {name: _shape(value) for name, value in values.items() if name[0] in "lmr" and name != "f1"}
    assert found == {
        "l1": "(b, t, 5)",
        "l2": "(4, b, t, 5)",
        "l3": None,
        "l4": "(b, t, 5)",
        "l5": "(b)",
        "l6": None,  # a -1 on a new leading axis: torch raises
        "m1": "(2*b, t, 3*d)",
        "m2": None,  # fewer repeats than dims: torch raises
        "m3": None,
        "m4": "(3, b, 2*t)",
        "m5": "(b**2, t)",
        "m6": "(2*b, t, d)",
        "m7": None,
        "l7": None,
        "r1": "(b, 2*t, d)",
        "r2": "(*, 2*d)",
        "r3": None,
        "r4": None,
        "r5": "(b, t, 2*d)",
        "r6": None,
        "r7": "(3*b, t, d)",
        "r8": None,
    }
    assert {name: values[name].dtype for name in ("l1", "l3", "m2", "m5", "r3", "r6", "r8")} == {
        "l1": "float", "l3": "float", "m2": "float", "m5": "int", "r3": "float", "r6": "float", "r8": "float"
    }
    assert {name: str(values[name].dim) for name in ("s1", "s2", "s5", "s6", "s7")} == {
        "s1": "t", "s2": "d", "s5": "3", "s6": "4", "s7": "b*d*t"
    }
    size = values["s4"]  # x.size(): the sizes, and the tensor they were read from
    assert (_shape(size), _code(size.source), _shape(size.base)) == ("(b, t, d)", "x", "(b, t, d)")
    assert not hasattr(values["s8"], "dim") and not hasattr(values["s9"], "dim")  # unknown, not a size
    assert [(_shape(values[name]), values[name].dtype) for name in ("m7", "l7", "f1")] == [(None, "float")] * 3


def test_resize_takes_the_new_sizes() -> None:
    values, facts = _analysed(
        """
        a = torch.zeros(B, T, dtype=torch.long).resize_(4, 5)
        b = torch.zeros(B, T).resize_(n)
        """
    )
    assert (_shape(values["a"]), values["a"].dtype) == ("(4, 5)", "int")
    assert (_shape(values["b"]), values["b"].dtype) == ("(b)", "float")


def test_views_by_dtype_by_keyword_and_of_unreadable_sizes() -> None:
    values, facts = _analysed(
        """
        z = x.foo
        v1 = i.view(torch.float32)
        v2 = x.reshape(shape=(B, -1))
        v3 = x.view(z)
        v4 = r.view(B, T, 5)
        v5 = r.view(B, T, 5, 2)
        """
    )
    assert facts.internal_errors == []
    found = {name: (_shape(values[name]), values[name].dtype) for name in ("v1", "v2", "v3", "v4", "v5")}
    assert found == {
        "v1": (None, "float"),  # the bytes read as another dtype: the last size may change
        "v2": ("(b, d*t)", "float"),
        "v3": (None, "float"),
        "v4": (None, "float"),
        "v5": (None, "float"),
    }
    assert [(c.kind, c.op, _code(c.node), c.detail) for c in facts.conflicts] == [
        ("reshape", "view", "r.view(B, T, 5)",
         "cannot view a tensor of shape (b, t, 12) (numel 12*b*t) as (b, t, 5) (numel 5*b*t)"),
        ("heads", "view", "r.view(B, T, 5, 2)",
         "the width 12 is not divisible by 5, the head count: 5 heads of 12 // 5 = 2 lose 2 features"),
    ]


def test_axis_ops_on_a_tensor_of_unknown_shape_keep_its_dtype_and_invent_no_layout() -> None:
    values, facts = _analysed(
        """
        w0 = i.flatten(n)
        w1 = w0.squeeze()
        w2 = w0.transpose(0, 1)
        w3 = w0.squeeze(0)
        kt = q.transpose(2, 3)
        t5 = torch.zeros(B).resize_(x.foo)
        """
    )
    assert facts.internal_errors == []
    found = {name: (_shape(values[name]), values[name].dtype) for name in ("w1", "w2", "w3", "t5")}
    assert found == {"w1": (None, "int"), "w2": (None, "int"), "w3": (None, "int"), "t5": (None, "float")}
    assert not values["w2"].has(Reordered)  # the rank is unknown: no axis order to record
    assert values["kt"].has(KeyTransposed)  # axes 2 and 3 of a 4-D tensor are its last two


# --- products ----------------------------------------------------------------------------------------


def test_baddbmm_is_a_batched_product_and_its_alpha_scales_scores() -> None:
    values, facts = _analysed(
        """
        q3 = q.flatten(0, 1)
        kt = q3.transpose(1, 2)
        b1 = torch.baddbmm(torch.empty(T, T), q3, kt, beta=0, alpha=0.125)
        b2 = torch.baddbmm(torch.empty(T, T), q3, kt)
        b3 = torch.baddbmm(torch.empty(T, T), batch1=q3, batch2=kt, alpha=0.5)
        b4 = torch.baddbmm(torch.empty(T, T), q3, md.unsqueeze(0), alpha=0.5)
        b5 = torch.baddbmm(torch.empty(T, T), r, torch.ones(B, 5, T))
        """
    )
    assert facts.internal_errors == []
    found = {name: (_shape(values[name]), values[name].dtype) for name in ("b1", "b2", "b3", "b4")}
    assert found == {
        "b1": ("(b*h, t, t)", "float"),
        "b2": ("(b*h, t, t)", "float"),
        "b3": ("(b*h, t, t)", "float"),
        "b4": ("(b*h, t, d)", "float"),
    }
    assert [values[name].has(ScoresTag) for name in ("b1", "b2", "b3", "b4")] == [True, True, True, False]
    assert values["b1"].tag(ScoresTag).key_axis == -1 and _shape(values["b1"].tag(ScoresTag).query) == "(b*h, t, k)"
    scales = {name: values[name].tag(ScaleTag) for name in ("b1", "b2", "b3", "b4")}
    assert scales["b1"].factor.coef == 0.125 and _code(scales["b1"].node).startswith("torch.baddbmm(")
    assert scales["b3"].factor.coef == 0.5
    assert scales["b2"] is None and scales["b4"] is None  # no alpha; alpha on a product that is not scores
    assert [(c.kind, c.op, _code(c.node)) for c in facts.conflicts] == [
        ("matmul", "baddbmm", "torch.baddbmm(torch.empty(T, T), r, torch.ones(B, 5, T))"),  # inner 12 vs 5
    ]


def test_outer_products_of_vectors() -> None:
    values, facts = _analysed(
        """
        o1 = torch.outer(v, i[0].float())
        o2 = torch.ger(v, v)
        o3 = torch.outer(md, v)
        o4 = torch.outer(i[0], i[0])
        o5 = torch.outer(v, md)
        """
    )
    found = {name: (_shape(values[name]), values[name].dtype) for name in ("o1", "o2", "o3", "o4", "o5")}
    assert found == {
        "o1": ("(d, t)", "float"),
        "o2": ("(d, d)", "float"),
        "o3": (None, "float"),  # torch.outer takes vectors: it raises on a matrix
        "o4": ("(t, t)", "int"),
        "o5": (None, "float"),
    }


def test_multinomial_draws_integer_indices() -> None:
    values, facts = _analysed("m1 = torch.multinomial(logits.softmax(-1), 1)\n")
    assert (_shape(values["m1"]), values["m1"].dtype) == (None, "int")
    assert _code(values["m1"].node) == "torch.multinomial(logits.softmax(-1), 1)"


def test_functional_embedding_lookups() -> None:
    values, facts = _analysed(
        """
        e1 = F.embedding(i, w)
        e2 = F.embedding(i, weight=w)
        e3 = F.embedding(i.flatten(n), w)
        e4 = F.embedding(i, x.foo)
        e5 = F.embedding(torch.arange(T), w)
        e6 = F.embedding(p.long(), w)
        e7 = F.embedding(torch.arange(T), x.foo)
        e8 = F.embedding(i, x)
        """
    )
    names = [f"e{k}" for k in range(1, 9)]
    assert {name: _shape(values[name]) for name in names} == {
        "e1": "(b, t, e)",
        "e2": "(b, t, e)",
        "e3": "(*, e)",  # ids of unknown shape: whatever they are, one row of width e each
        "e4": None,
        "e5": "(t, e)",
        "e6": "(*, d, e)",
        "e7": None,
        "e8": None,  # a 3-D weight is no table
    }
    assert all(values[name].dtype == "float" for name in names)
    tokens = {name: values[name].tag(TokenEmbeddingTag) for name in ("e1", "e2", "e4", "e8")}
    assert [str(tag.width) if tag.width is not None else None for tag in tokens.values()] == ["e", "e", None, None]
    assert _code(tokens["e1"].node) == "F.embedding(i, w)" and _code(values["e1"].node) == "F.embedding(i, w)"
    positions = {name: values[name].tag(PositionTag) for name in ("e5", "e7")}
    assert [(tag.kind, str(tag.full_length), tag.sliced) for tag in positions.values()] == [
        ("embedding", "d", True),  # the table's rows: how many positions it holds
        ("embedding", "None", True),
    ]
    assert _code(positions["e5"].node) == "F.embedding(torch.arange(T), w)"
    assert not values["e5"].has(TokenEmbeddingTag) and not values["e1"].has(PositionTag)


PROJECTIONS = """
import einops


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.randn(8, 12))
        self.E = nn.Parameter(torch.randn(100, 12))

    def forward(self, x: Float[Tensor, "b t 12"], p: Float[Tensor, "*batch 12"], ids: Int[Tensor, "b t"],
                y: Float[Tensor, "b t 5"], z):
        a1 = F.linear(x, self.W)
        a2 = F.linear(x, weight=self.W)
        a3 = F.linear(y, self.W)
        a4 = torch.mm(p, self.W.T)
        a5 = torch.bmm(p, x)
        a6 = F.linear(x, z)
        a7 = F.linear(input=x, weight=self.W)
        a8 = torch.matmul(input=x, other=self.W.T)
        a9 = torch.bmm(input=x, mat2=x.transpose(1, 2))
        e = F.embedding(ids, self.E)
        pos = F.embedding(torch.arange(5), self.E)
        s1 = torch.einsum("btd,bsd->bts", e, x)
        s2 = torch.einsum("btd,bsd->bts", x, z)
        r1 = einops.rearrange(x, "b t (h d) -> b h t d", h=5)
        o1 = F.scaled_dot_product_attention(query=e, key=x, value=y)
        o2 = F.scaled_dot_product_attention(x, e, y)
        o3 = F.scaled_dot_product_attention(x, y, e)
        o4 = F.scaled_dot_product_attention(x, x, pos)
        o5 = F.scaled_dot_product_attention(p, p, p)
        return a1


m = M()
"""


def test_functional_products_read_their_operands_by_position_and_keyword() -> None:
    facts = analyze_src(HEADER + textwrap.dedent(PROJECTIONS))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    shapes = {name: _shape(values[name]) for name in ("a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "s1", "r1", "o1", "o2", "o3", "o5")}
    assert shapes == {
        "a1": "(b, t, 8)",
        "a2": "(b, t, 8)",
        "a3": "(b, t, 8)",  # the output width holds even when the input width is wrong
        "a4": "(n1, 8)",  # mm makes the batch of a (*, 12) operand one leading dim
        "a5": "(b, n3, 12)",  # bmm makes p 3-D, (n2, n3, 12); x's t must then be 12; n2 (made up) fits b
        "a6": None,
        "a7": "(b, t, 8)",  # operands by keyword: torch's ``input`` / ``weight``, ``other``, ``mat2``
        "a8": "(b, t, 8)",
        "a9": "(b, t, t)",
        "s1": "(b, t, t)",
        "r1": "(b, 5, t, 2)",
        "o1": "(b, t, 5)",
        "o2": "(b, t, 5)",
        "o3": "(b, t, 12)",
        "o5": None,
    }
    projected = {name: values[name].tag(ProjectionTag) for name in ("a1", "a2", "a3", "a7")}
    assert all(tag is not None and tag.ident == projected["a1"].ident for tag in projected.values())
    assert _shape(projected["a2"].source) == "(b, t, 12)"  # the projected input
    assert _code(projected["a1"].node) == "F.linear(x, self.W)"
    assert not values["a6"].has(ProjectionTag)  # a weight that is no parameter of the model
    kinds = sorted({(c.kind, c.op, _code(c.node)) for c in facts.conflicts})
    assert kinds == [
        ("heads", "rearrange", 'einops.rearrange(x, "b t (h d) -> b h t d", h=5)'),
        ("linear", "linear", "F.linear(y, self.W)"),
    ]
    linear = next(c for c in facts.conflicts if c.kind == "linear")
    assert linear.detail.startswith("F.linear expects 12 input features")
    # einsum: an operand the engine cannot see may carry positions; the format string is no operand.
    assert values["s2"].tag(PositionTag).kind == "unknown" and not values["s1"].has(PositionTag)
    assert values["s1"].has(TokenEmbeddingTag)
    # sdpa: what flows in from query, key or value flows out; the output and its layout are the call's.
    assert [values[name].has(TokenEmbeddingTag) for name in ("o1", "o2", "o3")] == [True, True, True]
    assert values["o4"].has(PositionTag)
    attention = values["o1"].tag(AttentionOutputTag)
    assert _code(attention.node) == "F.scaled_dot_product_attention(query=e, key=x, value=y)"
    assert _code(values["o1"].tag(KernelLayout).node) == _code(attention.node)
    assert _code(values["o1"].node) == _code(attention.node)


def test_a_loss_keeps_which_model_call_its_logits_came_from_by_keyword_too() -> None:
    module, facts = training_facts_of(
        """
        model = Net()
        for step in range(10):
            loss = F.cross_entropy(input=model(ids).flatten(0, 1), target=ids.flatten())
            loss.backward()
        """
    )
    assert [module.code_for_node(call.node) for call in training_calls(facts)] == ["model(ids)"]
    losses = [e for e in facts.events if e.op == "cross_entropy"]
    assert [(e.result.dtype, module.code_for_node(e.result.node)) for e in losses] == [
        ("float", "F.cross_entropy(input=model(ids).flatten(0, 1), target=ids.flatten())")
    ]


def test_a_matmul_equates_its_inner_dims_and_names_its_conflicts() -> None:
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"], w: Float[Tensor, "e f"], v2: Float[Tensor, "g"], y: Float[Tensor, "b t c"],
              q: Float[Tensor, "b 4 6 8"], k: Float[Tensor, "b 4 6 8"], m: Float[Tensor, "5 3"], r: Float[Tensor, "b t 12"]):
            B, T, D = x.shape
            a = x @ w
            a1 = x.view(B, T, -1, w.shape[0])
            b = y @ v2
            b1 = y.view(B, T, -1, v2.shape[0])
            s1 = q @ k.transpose(1, 3)
            s2 = torch.matmul(r, m)
        """
    )
    # The product ran, so d == e (and c == g): the -1 of these views is 1.
    assert [_shape(values[name]) for name in ("a", "a1", "b", "b1")] == ["(b, t, f)", "(b, t, 1, e)", "(b, t)", "(b, t, 1, g)"]
    assert [(c.kind, c.op, _code(c.node), c.detail) for c in conflicts] == [
        ("key-transpose", "matmul", "q @ k.transpose(1, 3)",
         "matmul of (b, 4, 6, 8) and (b, 8, 6, 4): inner dims 8 and 6 differ"),  # keys transposed over the wrong axes
        ("matmul", "matmul", "torch.matmul(r, m)", "matmul of (b, t, 12) and (5, 3): inner dims 12 and 5 differ"),
    ]


def test_a_derived_view_resolves_its_minus_one_with_what_the_path_knows() -> None:
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t c"], r: Float[Tensor, "b t 12"]):
            B, T, C = x.shape
            assert C == 12
            y = x.view(x.size()[:-1] + (5, -1))
            w = x.view(x.size()[:-1] + (4, -1))
            z = r.view(r.size()[:-1] + (-1, -1))
            u = x.unflatten(-1, (5, -1))
        """
    )
    assert [(c.kind, c.op, _code(c.node)) for c in conflicts] == [("reshape", "unflatten", "x.unflatten(-1, (5, -1))")]
    # c == 12 on this path: 5 does not divide it (torch raises), 4 does; two -1s are never valid.
    assert {name: _shape(values[name]) for name in "ywz"} == {"y": None, "w": "(b, t, 4, 3)", "z": None}
    assert all(values[name].dtype == "float" for name in "ywz")


# --- indexing ------------------------------------------------------------------------------------------


def test_slicing_and_indexing_a_tensor() -> None:
    """What torch gives for these subscripts (r's last axis is 12); an unnamed size (``_``) where
    the engine cannot tell the length of a slice (a negative start on a symbolic axis, a step on a
    bounded slice: the axis is still there); None where torch raises (too many indices, two
    ellipses, a negative step)."""
    values, facts = _analysed(
        """
        c1 = r[..., 4:]
        c2 = r[..., -4:]
        c3 = r[..., 20:]
        c4 = r[..., -20:]
        c5 = r[..., :5]
        c6 = r[..., :20]
        c7 = r[..., 2:5]
        c8 = r[..., 5:2]
        c9 = r[..., :-1]
        c10 = r[..., 2:-1]
        c11 = r[..., -3:-1]
        c12 = r[..., ::2]
        c13 = r[..., ::5]
        c14 = r[..., 1::2]
        c15 = r[..., ::-1]
        c16 = r[..., -3:5]
        c17 = r[..., :-20]
        s1 = x[:, 1:]
        s2 = x[:, :-1]
        s3 = x[:, 2:-1]
        s4 = x[:, :T]
        s5 = x[:, ::2]
        s6 = x[:, 0:]
        s7 = x[:, 3:]
        s8 = x[:, -3:]
        s9 = x[:, 1:T]
        s10 = x[:, ::1]
        s11 = x[:, :n]
        s12 = x[:, n:]
        s13 = x[:, :-1:2]
        k1 = x[0]
        k2 = x[:, 0]
        k3 = x[..., 0]
        k4 = x[None]
        k5 = x[:, None]
        k6 = x[..., None]
        k7 = x[0, 0, 0, 0]
        k8 = x[..., ..., 0]
        k9 = x[i]
        k10 = x[:, :, :, None]
        k11 = x[None, ..., None]
        k12 = x[0, ..., 1:]
        k13 = x[n]
        v1 = p[..., 0]
        v2 = p[..., :4]
        v3 = p[0]
        v4 = p[None, ..., 0]
        v5 = p[0, ..., 0]
        v6 = p[..., 0, 0]
        v7 = p[..., None]
        v8 = p[..., 1:]
        """
    )
    assert facts.internal_errors == []
    assert {name: _shape(value) for name, value in values.items() if name[0] in "cskv"} == {
        "c1": "(b, t, 8)", "c2": "(b, t, 4)", "c3": "(b, t, 0)", "c4": "(b, t, _)", "c5": "(b, t, 5)",
        "c6": "(b, t, 12)", "c7": "(b, t, 3)", "c8": "(b, t, 0)", "c9": "(b, t, 11)", "c10": "(b, t, 9)",
        "c11": "(b, t, _)", "c12": "(b, t, 6)", "c13": "(b, t, 3)", "c14": "(b, t, 6)", "c15": None,
        "c16": "(b, t, _)", "c17": "(b, t, 0)",
        "s1": "(b, t-1, d)", "s2": "(b, t-1, d)", "s3": "(b, t-3, d)", "s4": "(b, t, d)",
        "s5": "(b, (t+1)//2, d)", "s6": "(b, t, d)", "s7": "(b, t-3, d)", "s8": "(b, _, d)", "s9": "(b, t-1, d)",
        "s10": "(b, t, d)", "s11": "(b, b, d)", "s12": "(b, t-b, d)", "s13": "(b, _, d)",
        "k1": "(t, d)", "k2": "(b, d)", "k3": "(b, t)", "k4": "(1, b, t, d)", "k5": "(b, 1, t, d)",
        "k6": "(b, t, d, 1)", "k7": None, "k8": None, "k9": "(b, t, t, d)", "k10": "(b, t, d, 1)",
        "k11": "(1, b, t, d, 1)", "k12": "(t, d-1)", "k13": "(t, d)",
        "v1": "(*)", "v2": "(*, 4)", "v3": None, "v4": "(*)", "v5": None, "v6": None, "v7": "(*, d, 1)",
        "v8": "(*, d-1)",
    }
    assert all(value.dtype == "float" for name, value in values.items() if name[0] in "cskv")
    # A next-token shift drops one position at one end: ``1:`` or ``:-1``, nothing else.
    shifted = {name for name, value in values.items() if name[0] in "cskv" and value.has(ShiftTag)}
    assert shifted == {"c9", "s1", "s2", "k12", "v8"}
    assert _code(values["s1"].tag(ShiftTag).node) == "x[:, 1:]" and _code(values["s1"].node) == "x[:, 1:]"


INDEXED = """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(12, 36)
        self.layers = nn.ModuleList([nn.Linear(12, 12) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(12, 4), "b": nn.Linear(12, 5)})
        self.register_buffer("mask", torch.tril(torch.ones(16, 16)).view(1, 1, 16, 16))

    def forward(self, x: Float[Tensor, "b t 12"], k: int, opts: dict):
        B, T, C = x.size()
        a1 = x.shape[1:]
        a2 = x.shape[:-1]
        a3 = x.shape[::2]
        a4 = x.size()[-1]
        a5 = x.shape[5]
        a7 = x.shape[0:k]
        a8 = x.shape[-2:]
        a9 = x.shape[:-5]
        t1 = (x, x[0], x[0, 0])
        t2 = t1[1]
        t3 = t1[-1]
        t4 = t1[3]
        t5 = t1[1:]
        t6 = t1[k:]
        parts = self.qkv(x).split(12, dim=2)
        p1 = parts[0]
        p2 = parts[1:]
        p3 = parts[-1]
        l1 = self.layers[0](x)
        l2 = self.heads["b"](x)
        l3 = self.heads["c"]
        d1 = {"ctx": x}["ctx"]
        d2 = {"ctx": x}["other"]
        m1 = self.mask[:, :, :T, :T]
        m2 = self.mask[0, 0]
        fused = self.qkv(x).view(B, T, 3, 12).permute(2, 0, 1, 3)
        f0 = fused[0]
        f1 = fused[1]
        return x


m = M()
"""


def test_indexing_sizes_tuples_pieces_and_containers() -> None:
    facts = analyze_src(HEADER + textwrap.dedent(INDEXED))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    sizes = {name: [str(item.dim) for item in values[name].items] for name in ("a1", "a8")}
    assert sizes == {"a1": ["t", "12"], "a8": ["t", "12"]}
    assert _shape(values["a2"]) == "(b, t)" and _shape(values["a2"].base) == "(b, t, 12)"
    assert values["a2"].dropped == 1
    assert str(values["a4"].dim) == "12"
    assert str(values["a5"].dim) not in ("b", "t", "12")  # no axis 5: a size of its own
    assert not hasattr(values["a3"], "items") and not hasattr(values["a7"], "items")  # unknown
    assert not hasattr(values["a9"], "shape")  # more dims dropped than x has: torch gives (), unknown here
    assert [_shape(values[name]) for name in ("t2", "t3")] == ["(t, 12)", "(12)"]
    assert not hasattr(values["t4"], "shape") and not hasattr(values["t6"], "items")
    assert [_shape(item) for item in values["t5"].items] == ["(t, 12)", "(12)"]
    assert [_shape(values[name]) for name in ("p1", "p3", "l1", "l2", "d1")] == [
        "(b, t, 12)", "(b, t, 12)", "(b, t, 12)", "(b, t, 5)", "(b, t, 12)"
    ]
    assert len(values["p2"].items) == 2
    assert not hasattr(values["d2"], "shape") and not hasattr(values["l3"], "shape")
    # A slice of a triangle is a sliced triangle; a picked piece of a fused projection is that piece.
    assert values["m1"].tag(TriangleTag).sliced and _shape(values["m1"]) == "(1, 1, t, t)"
    assert not values["m2"].tag(TriangleTag).sliced and _shape(values["m2"]) == "(16, 16)"
    parts = [values[name].tag(ProjectionTag).part for name in ("f0", "f1", "p1", "p3")]
    assert parts[0] != parts[1] and parts[0][-1:] == (0,) and parts[1][-1:] == (1,)


def test_a_matmul_with_an_operand_of_unknown_shape() -> None:
    values, conflicts = _run(
        """
        def f(z, z2, q: Float[Tensor, "b h t k"], ids: Int[Tensor, "b t"], md: Float[Tensor, "t d"],
              e: Float[Tensor, "b t k"]):
            te = F.embedding(ids, torch.randn(10, 8))
            u1 = torch.matmul(z, z2)
            u2 = z @ q
            u3 = z @ q.transpose(-2, -1)
            u4 = te @ torch.randn(8, 3)
            u5 = torch.randn(3, 8) @ te.transpose(1, 2)
            s = q @ q.transpose(-2, -1)
            p = s.softmax(-1)
            o1 = p @ q
            o2 = p @ q.transpose(-2, -1)
            u7 = z @ md.T
            u8 = z @ e.transpose(1, 2)
        """
    )
    assert conflicts == []
    # The query unknown: the head dim is the contracted dim of the transposed key, at any rank.
    assert [str(values[name].tag(ScoresTag).head_dim) for name in ("u7", "u8")] == ["d", "k"]
    shapes = {name: _shape(values[name]) for name in ("u2", "u3", "u4", "u5", "o1", "o2")}
    assert shapes == {
        "u2": "(*, _, _, k)",  # whatever z is, the product ends in q's last dim after q's batch dims
        "u3": "(*, _, _, t)",
        "u4": "(b, t, 3)",
        "u5": "(b, 3, t)",
        "o1": "(b, h, t, k)",
        "o2": "(b, h, t, t)",
    }
    assert values["u2"].dtype == "float" and _code(values["u2"].node) == "z @ q"
    assert values["u4"].has(TokenEmbeddingTag) and values["u5"].has(TokenEmbeddingTag)  # from either side
    assert str(values["u3"].tag(ScoresTag).head_dim) == "k"  # the key's contracted dim when the query is unknown
    assert str(values["s"].tag(ScoresTag).head_dim) == "k"
    # Probabilities times anything are an attention output, never new scores.
    assert values["o2"].has(AttentionOutputTag) and not values["o2"].has(ScoresTag)


def test_transposes_of_a_tensor_of_unknown_rank() -> None:
    values, conflicts = _run(
        """
        def f(z, v: Float[Tensor, "d"]):
            kt = z.transpose(-2, -1)
            a = kt.T
            b = z.mT
            c = v.mT
        """
    )
    assert values["kt"].has(KeyTransposed)  # the last two axes, whatever the rank
    assert not values["a"].has(KeyTransposed)  # .T of an unknown rank: which axes it swaps is unknown
    assert not values["b"].has(Reordered) and not values["c"].has(Reordered)  # no axis order to record
    assert values["b"].has(KeyTransposed)


def test_mm_and_bmm_fix_the_rank_of_either_operand() -> None:
    values, conflicts = _run(
        """
        def f(z, md: Float[Tensor, "t d"], p: Float[Tensor, "*batch 12"], q: Float[Tensor, "b h t k"],
              x: Float[Tensor, "b t 12"]):
            a = torch.mm(md, p)
            c = torch.bmm(x, p)
            u = torch.matmul(z, q)
        """
    )
    # mm: p is (n, 12) and its n is md's d; bmm: p is (n2, n3, 12), and x's 12 must be n3; the
    # made-up batch n2 is presumed to fit x's b.
    assert {name: _shape(values[name]) for name in "acu"} == {"a": "(t, 12)", "c": "(b, t, 12)", "u": "(*, _, _, k)"}
    maybe = values["u"].tag(PositionTag)  # z may carry positions the engine cannot see
    assert maybe.kind == "unknown" and _code(maybe.node) == "torch.matmul(z, q)"


# --- Python numbers, enumerate, tolist and the sinusoidal frequencies (ops/scalars, sequences,
# --- training, frequencies: no engine test reached these rules) ------------------------------------


def test_python_numbers_built_from_sizes() -> None:
    import math

    from shapecheck.engine.domain.tags import Repeated
    from shapecheck.engine.domain.values import FloatValue, IntValue, Opaque, TupleValue

    values = values_of(body(
        """
        n = len((x, x, x))
        m = len(x)
        r = math.sqrt(x.shape[-1])
        lg = math.log(10000.0)
        lg_size = math.log(x.shape[-1])
        lg_zero = math.log(0.0)
        lg_tensor = math.log(x)
        k_root = int(r)
        k_twice = int(2.0 * x.shape[-1])
        k_ratio = int(2.0 * x.shape[-1] / x.shape[1])
        k_half = int(x.shape[-1] / 2)
        k_float = int(7.9)
        k_inf = int(float("inf"))
        k_size = int(x.shape[-1])
        lo = min(4, 3)
        hi = max(2, 5)
        ab = abs(-3)
        lo_size = min(x.shape[-1], 3)
        """
    ))

    def dim(name):
        value = values[name]
        return str(value.dim) if isinstance(value, IntValue) else None

    assert (dim("n"), dim("m"), dim("k_twice"), dim("k_ratio"), dim("k_float"), dim("k_size")) == (
        "3", "b", "2*d", "2*d//t", "7", "d"
    )
    assert (dim("lo"), dim("hi"), dim("ab")) == ("3", "5", "3")
    assert dim("k_root") is dim("k_half") is dim("k_inf") is None  # not an int we can name
    assert dim("lo_size") == "min(3,d)"  # a size of its own, named by the call (tests/test_engine_rc403.py)
    root = values["r"]
    assert isinstance(root, FloatValue) and str(root.scale.factors) == "((Dim('d'), Fraction(1, 2)),)"
    assert isinstance(values["lg"], FloatValue) and values["lg"].scale.coef == math.log(10000.0)
    assert values["lg_size"] == Opaque("log") and values["lg_zero"] == Opaque("log")  # numbers, not tensors
    assert not isinstance(values["lg_tensor"], (FloatValue, Opaque))
    assert not isinstance(values["m"], (Repeated, TupleValue))


def test_enumerate_pairs_one_index_symbol_with_each_item() -> None:
    from shapecheck.engine.domain.tags import Repeated
    from shapecheck.engine.domain.values import IntValue, TupleValue

    src = body(
        """
        pairs = enumerate((x, i))
        for j, item in enumerate([x, i]):
            last = item
        """
    )
    values = values_of(src)
    pairs = values["pairs"]
    assert isinstance(pairs, TupleValue) and len(pairs.items) == 2
    (i0, x0), (i1, x1) = (pair.items for pair in pairs.items)
    assert isinstance(i0, IntValue) and i0 == i1  # one symbol for every index
    assert (_shape(x0), _shape(x1)) == ("(b, t, d)", "(b, t)")
    assert _shape(values["last"]) == "(b, t)" and isinstance(values["j"], IntValue)
    unknown = values_of(body("pairs = enumerate(x.unbind(0))"))["pairs"]
    assert isinstance(unknown, (Repeated, TupleValue))


def test_tolist_of_a_1d_integer_tensor_is_its_elements() -> None:
    from shapecheck.engine.domain.tags import Repeated
    from shapecheck.engine.domain.values import IntValue

    values = values_of(body(
        """
        ints = i[0].tolist()
        floats = i[0].float().tolist()
        rows = i.tolist()
        """
    ))
    assert isinstance(values["ints"], Repeated) and isinstance(values["ints"].element, IntValue)
    assert not isinstance(values["floats"], Repeated) and not isinstance(values["rows"], Repeated)


def test_sinusoidal_frequencies_by_pow_exp_and_reciprocal() -> None:
    """``10000 ** (2k / d)`` grows with slope 2 ln(10000) / d over the pair index k; its reciprocal and
    ``exp(2k * -ln(10000) / d)`` fall with that slope: the table SC304 expects for width d."""
    from shapecheck.engine.ops import frequencies
    from shapecheck.engine.symbolic.dims import sym

    values = values_of(body(
        """
        p = torch.arange(0, D, 2)
        grows = 10000.0 ** (p / D)
        grows_pow = torch.pow(10000.0, p / D)
        falls = 1.0 / grows
        falls_exp = torch.exp(p * (-math.log(10000.0) / D))
        negative_base = (-2.0) ** (p / D)
        every_index = torch.exp(torch.arange(0, D).float() * (-math.log(10000.0) / D))
        falls_fn = torch.reciprocal(grows)
        falls_method = grows.reciprocal()
        not_a_frequency = torch.reciprocal(x)
        """
    ))
    expected = frequencies.expected_slope(sym("d"))

    def ratio(name):
        tags = [tag for tag in values[name].tags if isinstance(tag, frequencies.LogLinear)]
        return frequencies.slope_ratio(tags[0].slope, expected) if tags else None

    assert (ratio("grows"), ratio("grows_pow"), ratio("falls"), ratio("falls_exp")) == (-1.0, -1.0, 1.0, 1.0)
    assert ratio("negative_base") is None  # no logarithm of a negative base
    assert ratio("every_index") == 0.5  # arange without a step counts by 1: half the slope
    assert (ratio("falls_fn"), ratio("falls_method"), ratio("not_a_frequency")) == (1.0, 1.0, None)
    assert frequencies.expected_slope(64) is None  # a width is a Dim
    assert frequencies.slope_ratio(frequencies.expected_slope(sym("d")), frequencies.expected_slope(sym("t"))) is None
    half = frequencies.expected_slope(sym("d")) * frequencies.expected_slope(sym("d")).__class__(0.5)
    assert frequencies.slope_ratio(half, expected) == 0.5


def test_gradient_switches_around_model_calls() -> None:
    """``with`` blocks and decorators that turn gradients off (no_grad, inference_mode(), a literal
    ``set_grad_enabled(False)``) or leave them on (enable_grad, inference_mode(False), a flag the
    engine cannot read, a context manager from elsewhere)."""
    _module, facts = training_facts_of(
        """
        import contextlib
        from torch import no_grad as renamed_no_grad
        import sys
        ids = torch.randint(0, 20, (2, 5))
        flag = len(sys.argv) > 1  # a flag the engine cannot read (len(ids) > 1 it reads: True)
        model = Net()
        model(ids)
        with torch.no_grad():
            model(ids)
        with torch.enable_grad():
            model(ids)
        with torch.inference_mode():
            model(ids)
        with torch.inference_mode(True):
            model(ids)
        with torch.inference_mode(False):
            model(ids)
        with torch.set_grad_enabled(False):
            model(ids)
        with torch.set_grad_enabled(True):
            model(ids)
        with torch.set_grad_enabled(flag):
            model(ids)
        with contextlib.nullcontext():
            model(ids)
        with renamed_no_grad():
            model(ids)
        with torch.autograd.no_grad():
            model(ids)


        @torch.no_grad()
        def evaluate():
            return model(ids)


        @torch.inference_mode()
        def evaluate_fast():
            return model(ids)


        evaluate()
        evaluate_fast()
        """
    )
    assert [call.grad for call in facts.model_calls] == [
        True, False, True, False, False, True, False, True, True, True, False, False, False, False,
    ]


def test_train_and_eval_set_the_mode_of_later_calls() -> None:
    from shapecheck.engine.domain import modes

    _module, facts = training_facts_of(
        """
        import sys
        ids = torch.randint(0, 20, (2, 5))
        flag = len(sys.argv) > 1  # a flag the engine cannot read (len(ids) > 1 it reads: True)
        model = Net()
        model.train(False)
        model(ids)
        model.train(True)
        model(ids)
        model.train(mode=False)
        model(ids)
        model.train(flag)
        model(ids)
        model.eval()
        model(ids)
        model.train()
        model(ids)
        """
    )
    assert [modes.kinds(call.modes) for call in facts.model_calls] == [
        {"eval"}, {"train"}, {"eval"}, {"unknown"}, {"eval"}, {"train"},
    ]


def test_zip_dict_list_and_range() -> None:
    """zip pairs items up to the shortest known length (the last of a longer tuple is dropped, as in
    Python) or pairs the elements of unknown sequences; ``dict(k=v)`` keeps its entries; ``list()``
    is empty; a range's element is an int."""
    from shapecheck.engine.domain.tags import DictValue, Repeated
    from shapecheck.engine.domain.values import IntValue, TupleValue

    values, _ = _run(
        """
        def f(x: Float[Tensor, "b t d"], i: Int[Tensor, "b t"], xs, ys, kw):
            pairs = zip((x, i, x), (i, x))
            unknown = zip(xs, ys)
            for first, second in zip(x.unbind(0), i.unbind(0)):
                row = first
            entries = dict(a=x, b=i)
            spread = dict(**kw)
            copied = dict(kw)
            empty = list()
            count = len(list())
            for k in range(5):
                index = k
        """
    )
    pairs = values["pairs"]
    assert isinstance(pairs, TupleValue) and len(pairs.items) == 2
    assert [[_shape(v) for v in pair.items] for pair in pairs.items] == [["(b, t, d)", "(b, t)"], ["(b, t)", "(b, t, d)"]]
    assert isinstance(values["unknown"], Repeated) and isinstance(values["unknown"].element, TupleValue)
    assert _shape(values["row"]) == "(t, d)"
    entries = values["entries"]
    assert isinstance(entries, DictValue) and [(k, _shape(v)) for k, v in entries.entries] == [("a", "(b, t, d)"), ("b", "(b, t)")]
    assert not isinstance(values["spread"], DictValue) and not isinstance(values["copied"], DictValue)
    assert values["empty"] == TupleValue(()) and str(values["count"].dim) == "0"
    assert isinstance(values["index"], IntValue)


def test_a_training_step_is_the_model_call_whose_output_reaches_backward() -> None:
    """Through a tuple output (item by item) and through a loss module (the model's call trains,
    not the loss module's)."""
    module, facts = training_facts_of(
        """
        class Pair(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = Net()

            def forward(self, ids):
                logits = self.net(ids)
                return logits.sum(-1), logits


        ids = torch.randint(0, 20, (2, 5))
        model = Net()
        pair = Pair()
        criterion = nn.CrossEntropyLoss()
        loss = criterion(model(ids).flatten(0, 1), ids.flatten())
        loss.backward()
        summary, logits = pair(ids)
        logits.sum().backward()
        """
    )
    assert sorted(module.code_for_node(call.node) for call in training_calls(facts)) == ["model(ids)", "pair(ids)"]


def test_float_of_strings_sizes_and_numbers() -> None:
    import math

    from shapecheck.engine.domain.values import FloatValue

    values = values_of(body(
        """
        neg = float("-inf")
        neg_word = float(" -Infinity ")
        pos = float("inf")
        pos_word = float("INFINITY")
        pos_sign = float("+inf")
        tiny = float("1e-9")
        word = float("abc")
        size = float(x.shape[-1])
        number = float(3)
        tensor = float(x)
        """
    ))

    def coef(name):
        value = values[name]
        return value.scale.coef if isinstance(value, FloatValue) and not value.scale.factors else None

    assert (coef("neg"), coef("neg_word")) == (-math.inf, -math.inf)
    assert (coef("pos"), coef("pos_word"), coef("pos_sign")) == (math.inf, math.inf, math.inf)
    assert (coef("tiny"), coef("number")) == (1e-9, 3.0)
    assert not isinstance(values["word"], FloatValue) and not isinstance(values["tensor"], FloatValue)
    assert str(values["size"].scale.factors) == "((Dim('d'), Fraction(1, 1)),)"


def test_sinusoidal_phases_and_index_steps() -> None:
    """The angle of the classic table, ``position * div_term`` (either order), ``position / 10000 **
    (2i / d)`` or ``position * (1 / ...)``, has the expected slope, and sin / cos carry it; an index
    scaled by a number keeps counting (coefficient 2 * 3); ``arange(1, ...)`` is no index from 0."""
    from shapecheck.engine.ops import frequencies
    from shapecheck.engine.symbolic.dims import sym

    values = values_of(body(
        """
        position = torch.arange(0, T).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, D, 2).float() * (-math.log(10000.0) / D))
        ang = position * div_term
        ang_r = div_term * position
        ang_div = position / (10000 ** (torch.arange(0, D, 2) / D))
        ang_inv = position * (1.0 / (10000 ** (torch.arange(0, D, 2).float() / D)))
        s = torch.sin(ang)
        c = torch.cos(ang_div)
        half = div_term / 2.0
        scaled = torch.arange(0, D, 2) * 3.0
        scaled_r = 3.0 * torch.arange(0, D, 2)
        over = torch.arange(0, D, 2) / D
        shifted = torch.arange(1, D, 2)
        squared = torch.arange(0, D, 2) * position
        """
    ))
    expected = frequencies.expected_slope(sym("d"))

    def tag(name, kind):
        found = [t for t in values[name].tags if isinstance(t, kind)]
        return found[0] if found else None

    for name in ("ang", "ang_r", "ang_div", "ang_inv"):
        assert frequencies.slope_ratio(tag(name, frequencies.Phase).slope, expected) == 1.0, name
    assert (tag("s", frequencies.Trig).function, tag("c", frequencies.Trig).function) == ("sin", "cos")
    assert frequencies.slope_ratio(tag("s", frequencies.Trig).phase.slope, expected) == 1.0
    assert frequencies.slope_ratio(tag("half", frequencies.LogLinear).slope, expected) == 1.0
    assert tag("scaled", frequencies.IndexLinear).coef.value == tag("scaled_r", frequencies.IndexLinear).coef.value == 6.0
    over = tag("over", frequencies.IndexLinear).coef  # 2 / d per step
    assert over.coef == 2.0 and str(over.factors) == "((Dim('d'), Fraction(-1, 1)),)"
    assert tag("shifted", frequencies.IndexLinear) is None and tag("squared", frequencies.Phase) is None


def test_map_over_sequences_of_known_and_unknown_length() -> None:
    from shapecheck.engine.domain.tags import Repeated
    from shapecheck.engine.domain.values import TupleValue

    values, _ = _run(
        """
        def f(x: Float[Tensor, "b t d"], i: Int[Tensor, "b t"]):
            sums = list(map(lambda a: a.sum(-1), x.unbind(0)))
            for s in sums:
                last = s
            known = tuple(map(lambda a, c: a.float() * c.sum(-1), (i, i), (x[0], x[1])))
            mixed = zip((x, i), x.unbind(0))
        """
    )
    assert isinstance(values["sums"], Repeated) and _shape(values["last"]) == "(t)"
    known = values["known"]
    assert isinstance(known, TupleValue) and [_shape(v) for v in known.items] == ["(b, t)", "(b, t)"]
    mixed = values["mixed"]
    assert [[_shape(v) for v in pair.items] for pair in mixed.items] == [["(b, t, d)", "(t, d)"], ["(b, t)", "(t, d)"]]


def test_sizes_extended_with_a_tuple() -> None:
    """``x.size()[:-1] + (h, d)`` of a tensor of unknown rank keeps the unknown prefix; of a tensor of
    unknown shape it is a size of unknown rank whose trailing sizes a view keeps; a size plus a size
    is no error; and the square root of a negative number is not a number we know."""
    from shapecheck.engine.domain.values import FloatValue

    values, _ = _run(
        """
        def f(x: Float[Tensor, "... d"], u):
            y = x.view(x.size()[:-1] + (2, 3))
            z = u.view(u.size()[:-1] + (2, 3))
            both = x.size() + x.size()
            imaginary = math.sqrt(-4.0)
        """
    )
    assert _shape(values["y"]) == "(*, 2, 3)"
    assert _shape(values["z"]) == "(*, 2, 3)"  # the prefix of an unseen tensor: its rank unknown
    assert not isinstance(values["imaginary"], FloatValue)


def test_arithmetic_on_sizes_and_scale_factors() -> None:
    from shapecheck.engine.domain.values import FloatValue, IntValue

    values = values_of(body(
        """
        half = x.shape[-1] // 2
        rest = x.shape[-1] % 2
        odd = (2 * x.shape[-1] + 1) % 2
        square = x.shape[-1] ** 2
        one = x.shape[-1] ** 0
        total = 0.5 + 0.25
        gap = 1.0 - 0.25
        root = 2.0 ** 0.5
        scale = x.shape[-1] ** -0.5
        """
    ))

    def dim(name):
        value = values[name]
        return str(value.dim) if isinstance(value, IntValue) else None

    assert (dim("half"), dim("rest"), dim("odd"), dim("square"), dim("one")) == ("d//2", "d%2", "1", "d**2", "1")
    assert [values[n].scale.coef for n in ("total", "gap")] == [0.75, 0.75]
    assert isinstance(values["root"], FloatValue) and abs(values["root"].scale.coef - 2**0.5) < 1e-12
    assert str(values["scale"].scale.factors) == "((Dim('d'), Fraction(-1, 2)),)"


def test_a_decorator_from_the_project_is_read_from_its_import_and_a_re_exported_no_grad_is_followed(tmp_path) -> None:
    """A decorator imported from a project module whose name is no grad switch's (``auto_docstring``)
    is decided from the import alone: the module defining it is never loaded (it is no dependency of
    the file). A re-export of ``torch.no_grad`` under its own name is followed into its module, by
    name, through the module (``grads.no_grad()``) and through a package's module
    (``from tools import switches``, ``switches.no_grad()``)."""
    from pathlib import Path, PurePosixPath

    from shapecheck.linter import analyze
    from shapecheck.project import LintContext, Workspace

    (tmp_path / "grads.py").write_text("import torch\n\nno_grad = torch.no_grad\n")
    (tmp_path / "docs.py").write_text("def auto_docstring(function):\n    return function\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("")
    (tmp_path / "tools" / "switches.py").write_text("import torch\n\nno_grad = torch.no_grad\n")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(
        """
        import torch
        import torch.nn as nn

        import docs
        import grads
        from docs import auto_docstring
        from grads import no_grad
        from tools import switches


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(20, 16)
                self.drop = nn.Dropout(0.1)

            def forward(self, ids):
                return self.drop(self.emb(ids)).sum()


        ids = torch.randint(0, 20, (4, 8))
        model = Net()


        @no_grad()
        def evaluate():
            return model(ids)


        @grads.no_grad()
        def evaluate_again():
            return model(ids)


        @auto_docstring
        def train_step():
            model(ids).backward()


        @docs.auto_docstring
        def train_step_again():
            model(ids).backward()


        @switches.no_grad()
        def evaluate_in_a_package():
            return model(ids)


        train_step()
        train_step_again()
        evaluate()
        evaluate_again()
        evaluate_in_a_package()
        """
    ))
    context = LintContext.for_file(Workspace(), script)
    facts = analyze(context.this.module, context.this.source, str(script), context.graph, context.this)
    assert facts.internal_errors == []
    assert [call.grad for call in facts.model_calls] == [True, True, False, False, False]
    assert sorted(Path(path).relative_to(tmp_path).as_posix() for path in facts.project_reads) == [
        "grads.py", "tools/__init__.py", "tools/switches.py",
    ]


def test_modes_name_their_setter_and_calls_not_followed_make_them_unknown() -> None:
    """A model starts in training mode at its construction (kept through ``.to(...)``, which returns
    the model itself); ``.eval()`` sets eval mode there; an imported helper given the model, or a file
    helper the engine does not follow (``*args``), may switch it: unknown from that call on (the
    imported helper only for the models passed to it). An object that is no ``nn.Module`` is no
    model: its ``train()`` and ``to()`` switch and move nothing."""
    from shapecheck.engine.domain import modes
    from shapecheck.engine.domain.values import ObjectValue

    module, facts = training_facts_of(
        """
        import sys

        from elsewhere import evaluate_elsewhere, Base


        class Runner(Base):
            def __call__(self, ids):
                return ids


        def step(*args):
            return args


        ids = torch.randint(0, 20, (2, 5))
        model = Net().to("cpu")
        model(ids)
        model.eval()
        model(ids)
        evaluate_elsewhere(model)
        model(ids)
        model.train()
        other = Net()
        other.eval()
        evaluate_elsewhere(other)
        model(ids)
        step(*sys.argv)
        model(ids)
        other(ids)
        runner = Runner()
        runner.train()
        runner(ids)


        def move(device):
            runner = Runner()
            moved = runner.to(device)
            return moved
        """
    )
    assert facts.internal_errors == []
    moved = {a.name: a.value for a in run_of(facts, "move").assignments}["moved"]
    assert not isinstance(moved, ObjectValue)  # a Runner's own `to` (from its unknown base) may return anything
    found = [
        (modes.kinds(call.modes), sorted(module.code_for_node(node) for node in modes.setters(call.modes, kind)))
        for call in facts.model_calls
        for kind in modes.kinds(call.modes)
    ]
    assert found == [
        ({"train"}, ["Net()"]),
        ({"eval"}, ["model.eval()"]),
        ({"unknown"}, ["evaluate_elsewhere(model)"]),
        ({"train"}, ["model.train()"]),
        ({"unknown"}, ["step(*sys.argv)"]),
        ({"unknown"}, ["step(*sys.argv)"]),
    ]


def test_more_gradient_switches_bare_decorators_and_switches_held_elsewhere() -> None:
    """Bare ``@torch.no_grad`` (torch accepts it without parentheses) turns gradients off and a bare
    ``@torch.compile`` does nothing to them; ``torch.autograd.set_grad_enabled(False)`` is a switch,
    ``torch.autograd.set_detect_anomaly(True)`` is none (gradients stay off inside ``no_grad``); a
    switch held by an object (``self.no_grad = torch.no_grad``) or picked from a tuple is followed; a model calling itself
    from its own method is reported at the script's call of that method."""
    from shapecheck.engine.facts.training import report_node

    module, facts = training_facts_of(
        """
        class Sampler:
            def __init__(self, model):
                self.model = model
                self.no_grad = torch.no_grad

            def sample(self, ids):
                with self.no_grad():
                    return self.model(ids)


        class Generator(Net):
            def generate(self, ids):
                return self(ids)


        ids = torch.randint(0, 20, (2, 5))
        model = Net()


        @torch.no_grad
        def evaluate():
            return model(ids)


        @torch.compile
        def train_step():
            return model(ids)


        evaluate()
        train_step()
        with torch.autograd.set_grad_enabled(False):
            model(ids)
        with torch.no_grad():
            with torch.autograd.set_detect_anomaly(True):
                model(ids)
        Sampler(model).sample(ids)
        generator = Generator()
        generator.generate(ids)
        switches = (torch.no_grad, torch.enable_grad)
        with switches[0]():
            model(ids)
        """
    )
    assert facts.internal_errors == []
    assert [(call.grad, module.code_for_node(report_node(call))) for call in facts.model_calls] == [
        (False, "model(ids)"),
        (True, "model(ids)"),
        (False, "model(ids)"),
        (False, "model(ids)"),
        (False, "self.model(ids)"),
        (True, "generator.generate(ids)"),
        (False, "model(ids)"),
    ]


def test_tolist_elements_of_one_tensor_share_their_symbol() -> None:
    """``starts.tolist()`` twice over the same tensor gives elements of one symbol (so that windows cut
    at them line up); another tensor's elements get another."""
    values = values_of(body(
        """
        row = i[0]
        first = row.tolist()
        again = row.tolist()
        other = i[1].tolist()
        """
    ))
    symbols = [values[name].element.dim for name in ("first", "again", "other")]
    assert all(symbol is not None and not symbol.is_const for symbol in symbols)
    assert str(symbols[0]) == str(symbols[1]) and str(symbols[0]) != str(symbols[2])


# --- joins: stack and cat (ops/joins) -------------------------------------------------------------


def test_stack_by_keyword_and_position_of_lists_known_and_unknown() -> None:
    """``torch.stack`` reads ``tensors=`` and ``dim=`` by keyword or position; a list of unknown length
    of (t, d) rows stacks to (n, t, d) on dim 0 only (n a fresh size); stacks it cannot shape keep the
    first tensor's dtype and the scale the tensors share; every result is made at the call."""
    import re

    src = HEADER + textwrap.dedent(
        """
        def f(x: Float[Tensor, "b t d"], i: Int[Tensor, "b t"], p: Float[Tensor, "*batch d"], xs):
            by_keyword = torch.stack(tensors=[x, x], dim=1)
            by_position = torch.stack([x, x], 1)
            last = torch.stack([x, x], -1)
            first_axis = torch.stack([x, x], dim=-4)
            single = torch.stack([x])
            out_of_range = torch.stack([x, x], dim=4)
            single_out_of_range = torch.stack([x], dim=5)
            single_variadic = torch.stack([p])
            sx = x / 8
            uneven = torch.stack([sx, sx[:, :1]])
            variadic = torch.stack([p, p])
            rows = torch.stack([x[k] for k in range(len(xs))])
            rows_keyword = torch.stack(tensors=[x[k] for k in range(len(xs))])
            rows_inner = torch.stack([i[k] for k in range(len(xs))], dim=1)
            unknown = torch.stack(xs)
        """
    )
    facts = analyze_src(src)
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    values = {name: value for name, value in values.items() if name != "k"}  # the comprehensions' index
    shapes = {name: _shape(value) for name, value in values.items() if name != "sx"}
    assert shapes == {
        "by_keyword": "(b, 2, t, d)",
        "by_position": "(b, 2, t, d)",
        "last": "(b, t, d, 2)",
        "first_axis": "(2, b, t, d)",
        "single": "(1, b, t, d)",
        "out_of_range": None,
        "single_out_of_range": None,
        "single_variadic": None,
        "uneven": None,
        "variadic": None,
        "rows": shapes["rows"],
        "rows_keyword": shapes["rows_keyword"],
        "rows_inner": None,
        "unknown": None,
    }
    assert re.fullmatch(r"\(n\d*, t, d\)", shapes["rows"]) and re.fullmatch(r"\(n\d*, t, d\)", shapes["rows_keyword"])
    dtypes = {name: value.dtype for name, value in values.items()}
    assert dtypes.pop("unknown") is None and dtypes.pop("rows_inner") == "int"
    assert set(dtypes.values()) == {"float"}
    assert values["uneven"].tag(ScaleTag) is not None and values["uneven"].tag(ScaleTag).factor == values["sx"].tag(ScaleTag).factor
    for name, value in values.items():
        if name != "sx":
            assert _code(value.node).startswith("torch.stack("), name


def test_cat_by_keyword_of_lists_known_and_unknown() -> None:
    """``torch.cat`` reads ``tensors=`` by keyword; a list of unknown length of (t, d) rows joins to
    (n*t, d) on dim 0 (torch: ``cat([x[k] for k in range(2)])`` of (2, 3, 4) is (6, 4)), and to an
    unknown shape elsewhere or for 0-d items (torch refuses those); an unreadable dim gives an unknown
    shape; every result is made at the call."""
    import re

    src = HEADER + textwrap.dedent(
        """
        def f(x: Float[Tensor, "b t d"], xs):
            by_keyword = torch.cat(tensors=[x, x], dim=1)
            rows = torch.cat([x[k] for k in range(len(xs))])
            rows_keyword = torch.cat(tensors=[x[k] for k in range(len(xs))])
            rows_inner = torch.cat([x[k] for k in range(len(xs))], dim=1)
            scalars = torch.cat([x[k, 0, 0] for k in range(len(xs))])
            unreadable_dim = torch.cat([x, x], dim=xs)
            unknown = torch.cat(xs)
        """
    )
    facts = analyze_src(src)
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments if a.name != "k"}
    shapes = {name: _shape(value) for name, value in values.items()}
    assert shapes["by_keyword"] == "(b, 2*t, d)"
    assert re.fullmatch(r"\(n\d*\*t, d\)", shapes["rows"]) and re.fullmatch(r"\(n\d*\*t, d\)", shapes["rows_keyword"])
    assert [shapes[name] for name in ("rows_inner", "scalars", "unreadable_dim", "unknown")] == [None] * 4
    assert [values[name].dtype for name in ("by_keyword", "rows", "rows_keyword", "rows_inner", "scalars")] == ["float"] * 5
    assert values["unknown"].dtype is None
    assert all(_code(value.node).startswith("torch.cat(") for value in values.values())


def test_unbind_pieces_their_count_shape_and_projection_part() -> None:
    """``unbind`` gives one (rest)-shaped piece per index of a constant axis up to 64 (dim 0 by
    default), an unknown count above or for a symbolic axis (every piece still has the rest's shape),
    and only the dtype for a variadic or unknown source or an out-of-range axis; pieces of a
    projection know their part."""
    from shapecheck.engine.domain.tags import SplitTuple

    src = HEADER + textwrap.dedent(
        """
        def f(x: Float[Tensor, "b t d"], r: Float[Tensor, "b t 12"], p: Float[Tensor, "*batch d"], u: Float[Tensor, "b 1 t"], xs):
            default = x.unbind()
            columns = torch.unbind(r, dim=2)
            one = u.unbind(1)
            most = torch.zeros(64, 2).unbind()
            too_many = torch.zeros(65, 2).unbind()
            variadic = p.unbind(0)
            out_of_range = x.unbind(3)
            unknown = torch.unbind(xs)
            proj = nn.Linear(12, 36)
            parts = proj(r).unflatten(-1, (3, 12)).unbind(2)
        """
    )
    facts = analyze_src(src)
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    found = {}
    for name, value in values.items():
        if isinstance(value, SplitTuple):
            count = None if value.pieces is None else len(value.pieces)
            shapes = sorted({_shape(piece) for piece in value.pieces or ()})
            found[name] = (count, shapes, _shape(value.template), value.template.dtype, value.exact)
    assert found == {
        "default": (None, [], "(t, d)", "float", True),
        "columns": (12, ["(b, t)"], "(b, t)", "float", True),
        "one": (1, ["(b, t)"], "(b, t)", "float", True),
        "most": (64, ["(2)"], "(2)", "float", True),
        "too_many": (None, [], "(2)", "float", True),
        "variadic": (None, [], None, "float", False),
        "out_of_range": (None, [], None, "float", False),
        "unknown": (None, [], None, None, False),
        "parts": (3, ["(b, t, 12)"], "(b, t, 12)", "float", True),
    }
    assert [piece.tag(ProjectionTag).part for piece in values["parts"].pieces] == [(0,), (1,), (2,)]


# --- token windows (ops/windows): the offset, length and time axis of a cut sequence ---------------


def _windows(src: str, sources: dict | None = None) -> dict:
    from shapecheck.engine.domain.tags import SequenceOriginTag

    facts = analyze_src(HEADER + textwrap.dedent(src))
    assert facts.internal_errors == []
    found = {}
    if sources is not None:
        for assignment in run_of(facts, "f").assignments:
            tag = assignment.value.tag(SequenceOriginTag) if hasattr(assignment.value, "tag") else None
            if tag is not None:
                sources[assignment.name] = tag.source
    for assignment in run_of(facts, "f").assignments:
        tag = assignment.value.tag(SequenceOriginTag) if hasattr(assignment.value, "tag") else None
        found[assignment.name] = None if tag is None else (
            str(tag.offset), None if tag.length is None else str(tag.length), tag.sliced, tag.axis, tag.opaque,
        )
    return found


def test_slices_of_a_token_sequence_start_move_and_drop_its_window() -> None:
    """A slice of a 1-D int sequence (or along the time axis of a batch-first one) is a window: its
    offset is the start, its length stop - start, ``[:-1]`` counted from the end (torch: ``data[2:-1]``
    of 500 is 497 long); slicing a window moves it; a step, a negative start, a single time position
    or a float tensor give none; a batch index keeps it (its time axis no longer known); ``roll`` and
    ``flip`` keep where it came from but mark it moved. Windows of one tensor share its identity,
    made where the tensor was."""
    sources: dict = {}
    found = _windows(
        """
        def f(i: int, xs, ids: Int[Tensor, "*batch t"]):
            data = torch.randint(0, 40, (500,))
            batch = torch.randint(0, 40, (4, 16))
            window = data[i : i + 16]
            tail = data[3:]
            head = data[:-1]
            cut = data[2:-1]
            stepped = data[0:16:2]
            negative = data[-16:]
            inner = window[1:]
            inner_cut = window[:-1]
            inner_tail = window[2:-3]
            shifted = batch[:, 1:]
            prefix = batch[:, :-1]
            rows = batch[1:]
            moved_rows = shifted[1:]
            picked = shifted[0]
            picked_time = shifted[:, 0]
            every = shifted[:, ::2]
            rolled = torch.roll(window, 1)
            flipped = window.flip(0)
            unknown = xs[:, 1:]
            unknown_window = unknown[:, :-1]
            floats = torch.randn(500)[1:]
            ellipsis = batch[..., 1:]
            ellipsis_unknown = xs[..., 1:]
            ellipsis_variadic = ids[..., 1:]
            two_ellipses = batch[..., 1:, ...]
            new_axis = batch[None, :, 1:]
            stream = torch.as_tensor(xs)[3:]
            row_then_window = xs[0, 1:]
            both_cut = xs[1:, 1:]
            three_axes = xs[:, :, 1:]
            unreadable_stop = data[3:xs]
            stream_cut = torch.as_tensor(xs)[3:10]
            stream_inner = stream_cut[1:]
            both_axes = shifted[1:, 1:]
            unknown_start = data[i * 0.5 :]
            moved_unknown = unknown_start[1:]
        """,
        sources,
    )
    assert found == {
        "data": None,
        "batch": None,
        "window": ("i", "16", True, 0, False),
        "tail": ("3", "497", True, 0, False),
        "head": ("0", "499", True, 0, False),
        "cut": ("2", "497", True, 0, False),
        "stepped": None,
        "negative": None,
        "inner": ("i+1", "15", True, 0, False),
        "inner_cut": ("i", "15", True, 0, False),
        "inner_tail": ("i+2", "11", True, 0, False),
        "shifted": ("1", "15", True, 1, False),
        "prefix": ("0", "15", True, 1, False),
        "rows": None,
        "moved_rows": ("1", "15", True, 1, False),
        "picked": ("1", "15", True, None, False),
        "picked_time": None,
        "every": None,
        "rolled": ("i", "16", True, None, True),
        "flipped": ("i", "16", True, None, True),
        "unknown": ("1", None, True, 1, False),
        "unknown_window": ("1", None, True, 1, False),
        "floats": None,
        "ellipsis": ("1", "15", True, 1, False),
        "ellipsis_unknown": ("1", None, True, None, False),
        "ellipsis_variadic": ("1", "t-1", True, None, False),
        "two_ellipses": None,
        "new_axis": ("1", "15", True, None, False),
        "stream": ("3", None, True, 0, False),
        "row_then_window": None,
        "both_cut": None,
        "three_axes": None,
        "unreadable_stop": ("3", "xs-3", True, 0, False),
        "stream_cut": ("3", "7", True, 0, False),
        "stream_inner": ("4", None, True, 0, False),
        "both_axes": ("2", "14", True, 1, False),
        "unknown_start": ("None", None, True, 0, False),
        "moved_unknown": ("None", None, True, 0, False),  # a window's length is not built on an unknown size
    }
    assert sources["window"] is sources["tail"] is sources["inner"] is sources["rolled"]
    assert sources["shifted"] is sources["prefix"] is sources["ellipsis"] is not sources["window"]
    assert _code(sources["window"].node) == "torch.randint(0, 40, (500,))"


WINDOW_EDGES = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(40, 8)

    def forward(self, idx):
        return self.emb(idx)


def f(xs, ids: Int[Tensor, "*batch t"]):
    model = Net()
    data = torch.randint(0, 40, (500,))
    batch = torch.randint(0, 40, (4, 16))
    b3 = torch.randint(0, 40, (4, 16, 3))
    w = ids[..., 1:]
    w0 = w[0:2]
    w1 = w[:, 1:]
    w2 = w[..., 0, :]
    w3 = w[..., :, 1:]
    empty = data[:0]
    rows_unknown = xs[1:, :]
    middle = xs[:, 1:, :]
    b3_window = b3[:, 1:]
    unknown = xs[:, 1:]
    unknown_rows = unknown[1:]
    shifted = batch[:, 1:]
    new_axis = shifted[None]
    too_many = shifted[:, :, 1:]
    seq = torch.randint(0, 40, (4, 16))
    star = model(*(seq,))
"""


def test_windows_of_variadic_unknown_and_empty_slices() -> None:
    """A window of a tensor of unknown rank is moved only along its last axis (``w[..., :, 1:]``
    moves it by one more); a slice of a leading axis (``w[0:2]``, ``w[:, 1:]``, ``w[..., 0, :]``) may
    be any axis, so the window is dropped; ``data[:0]`` is an empty window (torch: length 0), not the
    whole sequence; a tensor of unknown shape sliced on one axis of several (``xs[1:, :]``,
    ``xs[:, 1:, :]``) and a 3-D int tensor sliced on its middle axis are no windows; slicing the rows
    of a window whose time axis was recorded leaves it in place, a new leading axis forgets that axis;
    ids given to a model through ``*args`` are a sequence too; too many indices (torch raises) give no
    internal error. A window records the subscript that made it, and no tag is ``None``."""
    found = _windows(WINDOW_EDGES)
    assert "too_many" in found
    del found["too_many"]
    assert found == {
        "model": None, "data": None, "batch": None, "b3": None, "seq": None,
        "w": ("1", "t-1", True, None, False),
        "w0": None, "w1": None, "w2": None,
        "w3": ("2", "t-2", True, None, False),
        "empty": ("0", "0", True, 0, False),
        "rows_unknown": None, "middle": None, "b3_window": None,
        "unknown": ("1", None, True, 1, False),
        "unknown_rows": ("1", None, True, 1, False),
        "shifted": ("1", "15", True, 1, False),
        "new_axis": ("1", "15", True, None, False),
        "star": ("0", "16", False, None, False),
    }
    values = {a.name: a.value for a in run_of(analyze_src(HEADER + textwrap.dedent(WINDOW_EDGES)), "f").assignments}
    assert [_code(values[name].tag(SequenceOriginTag).node) for name in ("w", "w3", "empty")] == [
        "ids[..., 1:]", "w[..., :, 1:]", "data[:0]",
    ]
    assert not any(None in value.tags for value in values.values() if isinstance(value, TensorValue))


def test_ids_given_to_a_model_are_a_sequence_of_their_own_by_position_or_keyword() -> None:
    """Int ids passed to a model of the file (by position or keyword) become a sequence at offset 0,
    as long as their last axis, not cut (their variable too, so a target that is the same tensor is
    the input); each tensor is its own sequence; float inputs are none."""
    from shapecheck.engine.domain.tags import SequenceOriginTag

    src = HEADER + textwrap.dedent(
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(40, 8)

            def forward(self, idx):
                return self.emb(idx)


        def f(xs):
            model = Net()
            ids = torch.randint(0, 40, (4, 16))
            other = torch.randint(0, 40, (4, 16))
            logits = model(ids)
            after = ids
            by_keyword = model(idx=other)
            after_keyword = other
            window = ids[:, 1:]
            feats = torch.randn(4, 16)
            out = model(feats)
            after_feats = feats
            rolled_logits = torch.roll(logits, 1, dims=1)
            unknown_ids = torch.as_tensor(xs)
            unknown_out = model(unknown_ids)
        """
    )
    facts = analyze_src(src)
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    tags = {name: value.tag(SequenceOriginTag) for name, value in values.items() if hasattr(value, "tag")}
    found = {
        name: None if tag is None else (str(tag.offset), str(tag.length), tag.sliced, _code(tag.node))
        for name, tag in tags.items()
    }
    assert found == {
        "ids": None, "other": None, "feats": None, "out": None, "after_feats": None,
        "logits": ("0", "16", False, "ids"),
        "after": ("0", "16", False, "ids"),
        "by_keyword": ("0", "16", False, "other"),
        "after_keyword": ("0", "16", False, "other"),
        "window": ("1", "15", True, "ids[:, 1:]"),
        "rolled_logits": ("0", "16", False, "ids"),
        "unknown_ids": None,
        "unknown_out": ("0", "None", False, "unknown_ids"),
    }
    assert tags["rolled_logits"].opaque and not tags["logits"].opaque  # rolled: its positions moved
    assert tags["logits"].source is tags["after"].source is tags["window"].source
    assert tags["by_keyword"].source is tags["after_keyword"].source is not tags["logits"].source


# --- einsum and einops.einsum (ops/patterns) ---------------------------------------------------------


def test_einsum_equations_operands_and_einops_word_patterns() -> None:
    """``torch.einsum``: explicit and implicit outputs (implicit: the letters seen once, sorted),
    operands as a tuple, spaces, an ellipsis in the inputs only; what it cannot read gives an unknown
    shape (two ellipses, a digit, too few operands, an unreadable equation, an ellipsis in the output);
    an index of two different sizes is a conflict (torch raises), a size of 1 broadcasts. Shapes are
    torch's. ``einops.einsum`` names axes with words (the pattern last) and is read the same way:
    q @ k^T written with words is attention scores; a group or a missing ``->`` is not read."""
    from shapecheck.engine.domain.values import ScoresTag

    src = HEADER + "import einops\n" + textwrap.dedent(
        """
        def f(xs):
            a = torch.randn(2, 3)
            b = torch.randn(3, 5)
            q = torch.randn(2, 4, 6, 8)
            k = torch.randn(2, 4, 7, 8)
            p = torch.randn(2, 6, 3)
            explicit = torch.einsum("ij,jk->ik", a, b)
            as_tuple = torch.einsum("ij,jk->ik", (a, b))
            implicit = torch.einsum("ij,jk", a, b)
            implicit_order = torch.einsum("jk,ij", b, a)
            spaced = torch.einsum(" i j , j k -> k i ", a, b)
            ellipsis_out = torch.einsum("...j,jk->...k", p, b)
            ellipsis_in = torch.einsum("...j,jk->k", p, b)
            two_ellipses = torch.einsum("...j...,jk->k", p, b)
            bad_letter = torch.einsum("i2,jk->ik", a, b)
            too_few = torch.einsum("ij,jk,kl->il", a, b)
            unreadable = torch.einsum(xs, a, b)
            conflict = torch.einsum("ij,jk->ik", a, a)
            broadcast_one = torch.einsum("ij,jk->ik", torch.randn(2, 1), b)
            scores = torch.einsum("bhid,bhjd->bhij", q, k)
            ellipsis_scores = torch.einsum("...id,...jd->...ij", q, k)
            mid_ellipsis = torch.einsum("j...,jk->k", torch.randn(3, 2, 6), b)
            words = einops.einsum(q, k, "b h i d, b h j d -> b h i j")
            word_ellipsis = einops.einsum(p, b, "... j, j k -> ... k")
            word_group = einops.einsum(q, k, "b h i (d), b h j d -> b h i j")
            no_arrow = einops.einsum(q, k, "b h i d, b h j d")
            word_unreadable = einops.einsum(q, k, xs)
        """
    )
    facts = analyze_src(src)
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    found = {name: (_shape(value), value.dtype, value.has(ScoresTag)) for name, value in values.items() if name not in ("a", "b", "q", "k", "p")}
    unknown = (None, None, False)
    assert found == {
        "explicit": ("(2, 5)", "float", False),
        "as_tuple": ("(2, 5)", "float", False),
        "implicit": ("(2, 5)", "float", False),
        "implicit_order": ("(2, 5)", "float", False),
        "spaced": ("(5, 2)", "float", False),
        "ellipsis_out": (None, "float", False),
        "ellipsis_in": ("(5)", "float", False),
        "two_ellipses": unknown,
        "bad_letter": unknown,
        "too_few": unknown,
        "unreadable": unknown,
        "conflict": ("(2, 3)", "float", False),
        "broadcast_one": ("(2, 5)", "float", False),
        "scores": ("(2, 4, 6, 7)", "float", True),
        "ellipsis_scores": (None, "float", True),
        "mid_ellipsis": ("(5)", "float", False),
        "words": ("(2, 4, 6, 7)", "float", True),
        "word_ellipsis": (None, "float", False),
        "word_group": unknown,
        "no_arrow": unknown,
        "word_unreadable": unknown,
    }
    assert [(_code(c.node), c.op) for c in facts.conflicts] == [('torch.einsum("ij,jk->ik", a, a)', "einsum")]
    assert all(_code(value.node).startswith(("torch.einsum(", "einops.einsum(")) for name, value in values.items() if name not in ("a", "b", "q", "k", "p"))


def test_einsum_attention_roles_which_product_is_scores_and_which_attends_values() -> None:
    """Which two-operand einsum is attention scores and which is probabilities times values.

    Scores: one contracted index, last in both operands, the output ending in a free index of each
    (``bhqd,bhkd->bhqk``, or its keys first: ``bhkq``; 2-D ``id,jd->ij``); the key axis is not
    written, so it stays None. The written-out q @ k^T with a transposed key (``bhqd,bhdk->bhqk``,
    3-D and 2-D) is scores too, keyed on the untransposed key, key axis -1. Either carries the
    scale of both operands. Not scores: a reduction over queries or keys (``bqd,bkd->bk``,
    ``->bq``, ``->kb``), a projection (``btd,de->bte``), a matrix-vector product, two contracted
    indices. Probabilities times values, on either side, are the attention output: the key axis is
    where the probabilities' contracted index sits (-1, or -2 for transposed probabilities), and the
    output's stream passes through the softmax. Shapes are torch 2.13's."""
    from shapecheck.engine.domain.tags import StreamTag

    values, conflicts = _run(
        """
        def f():
            q = torch.randn(2, 4, 6, 8)
            k = torch.randn(2, 4, 7, 8)
            v = torch.randn(2, 4, 7, 8)
            scores = torch.einsum("bhqd,bhkd->bhqk", q, k)
            keys_first = torch.einsum("bhqd,bhkd->bhkq", q, k)
            probs = scores.softmax(-1)
            out = torch.einsum("bhqk,bhkd->bhqd", probs, v)
            out_right = torch.einsum("bhkd,bhqk->bhqd", v, probs)
            out_transposed = torch.einsum("bhkq,bhkd->bhqd", probs.transpose(-2, -1), v)
            kt = k.transpose(2, 3)
            written = torch.einsum("bhqd,bhdk->bhqk", q, kt)
            q3 = torch.randn(2, 6, 8)
            k3 = torch.randn(2, 7, 8)
            kt3 = k3.transpose(-2, -1)
            written3 = torch.einsum("btc,bcs->bts", q3, kt3)
            q2 = torch.randn(6, 8)
            k2 = torch.randn(7, 8)
            written2 = torch.einsum("tc,cs->ts", q2, k2.T)
            scores2 = torch.einsum("id,jd->ij", q2, k2)
            per_key = torch.einsum("bqd,bkd->bk", q3, k3)
            per_query = torch.einsum("bqd,bkd->bq", q3, k3)
            keys_batch = torch.einsum("bqd,bkd->kb", q3, k3)
            projected = torch.einsum("btd,de->bte", q3, torch.randn(8, 5))
            matvec = torch.einsum("ij,j->i", q2, torch.randn(8))
            two_contracted = torch.einsum("abcd,abcd->ab", q, q)
            scaled_query = torch.einsum("bhqd,bhkd->bhqk", q * 8 ** -0.5, k)
            scaled_key = torch.einsum("bhqd,bhkd->bhqk", q, k / 8 ** 0.5)
            written_scaled_query = torch.einsum("btc,bcs->bts", q3 * 8 ** -0.5, kt3)
            written_scaled_key = torch.einsum("btc,bcs->bts", q3, kt3 * 0.125)
        """
    )
    assert conflicts == []
    inputs = ("q", "k", "v", "probs", "kt", "q3", "k3", "kt3", "q2", "k2")
    found = {}
    for name, value in values.items():
        assert None not in value.tags  # a tag is always a tag
        if name in inputs:
            continue
        scores = value.tag(ScoresTag)
        scale = value.tag(ScaleTag)
        found[name] = (
            _shape(value),
            None if scores is None else (_code(scores.node), str(scores.head_dim), scores.key_axis),
            None if scale is None else round(scale.factor.coef, 4),
        )

    def einsum(equation: str, *operands: str) -> str:
        return f'torch.einsum("{equation}", {", ".join(operands)})'

    assert found == {
        "scores": ("(2, 4, 6, 7)", (einsum("bhqd,bhkd->bhqk", "q", "k"), "8", None), None),
        "keys_first": ("(2, 4, 7, 6)", (einsum("bhqd,bhkd->bhkq", "q", "k"), "8", None), None),
        "out": ("(2, 4, 6, 8)", None, None),
        "out_right": ("(2, 4, 6, 8)", None, None),
        "out_transposed": ("(2, 4, 6, 8)", None, None),
        "written": ("(2, 4, 6, 7)", (einsum("bhqd,bhdk->bhqk", "q", "kt"), "8", -1), None),
        "written3": ("(2, 6, 7)", (einsum("btc,bcs->bts", "q3", "kt3"), "8", -1), None),
        "written2": ("(6, 7)", (einsum("tc,cs->ts", "q2", "k2.T"), "8", -1), None),
        "scores2": ("(6, 7)", (einsum("id,jd->ij", "q2", "k2"), "8", None), None),
        "per_key": ("(2, 7)", None, None),
        "per_query": ("(2, 6)", None, None),
        "keys_batch": ("(7, 2)", None, None),
        "projected": ("(2, 6, 5)", None, None),
        "matvec": ("(6)", None, None),
        "two_contracted": ("(2, 4)", None, None),
        "scaled_query": ("(2, 4, 6, 7)", (einsum("bhqd,bhkd->bhqk", "q * 8 ** -0.5", "k"), "8", None), 0.3536),
        "scaled_key": ("(2, 4, 6, 7)", (einsum("bhqd,bhkd->bhqk", "q", "k / 8 ** 0.5"), "8", None), 0.3536),
        "written_scaled_query": ("(2, 6, 7)", (einsum("btc,bcs->bts", "q3 * 8 ** -0.5", "kt3"), "8", -1), 0.3536),
        "written_scaled_key": ("(2, 6, 7)", (einsum("btc,bcs->bts", "q3", "kt3 * 0.125"), "8", -1), 0.125),
    }
    # Scores name their query and key; the written-out q @ k^T names the key before its transpose.
    for name, query, key in (("scores", "q", "k"), ("written", "q", "k"), ("written3", "q3", "k3"), ("written2", "q2", "k2")):
        tag = values[name].tag(ScoresTag)
        assert (tag.query is values[query], tag.key is values[key]) == (True, True), name
    softmax = values["probs"].tag(ProbsTag).node
    for name, key_axis in (("out", -1), ("out_right", -1), ("out_transposed", -2)):
        tag = values[name].tag(AttentionOutputTag)
        assert (_code(tag.node).startswith("torch.einsum("), tag.softmax, tag.key_axis) == (True, softmax, key_axis), name
        assert values[name].tag(StreamTag).sites == frozenset({softmax}), name



EINSUM_OPERANDS = """
import einops


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.randn(8, 5))

    def forward(self, x: Float[Tensor, "b t 8"], v: Float[Tensor, "*batch t d"], w: Float[Tensor, "b t d"], xs):
        left = torch.einsum("btd,de->bte", x, self.W)
        right = torch.einsum("de,btd->bte", self.W, x)
        variadic = torch.einsum("btd,bsd->bts", v, v)
        n = w.shape[-1]
        assert n == 12
        width = torch.einsum("btd,de->bte", w, torch.randn(5, 4))
        heads = einops.rearrange(w, "b t (h k) -> b h t k", h=5, k=3)
        pos = torch.randn(2, 3) + torch.arange(3)
        dotted = torch.einsum("ij,jk->i.k", pos, torch.randn(3, 5))
        implicit_ellipsis = torch.einsum("...j,jk", torch.randn(2, 6, 3), torch.randn(3, 5))
        words_unreadable = einops.einsum(pos, x, xs)
        words_conflict = einops.einsum(pos, pos, "i j, j k -> i k")
        lower_words = einops.einsum(x, x, "batch time dim, batch other dim -> batch time other")
        capitalised = einops.einsum(x, x, "Batch T D, Batch S D -> Batch T S")
        return left
"""


def test_einsum_projections_variadic_operands_known_sizes_and_unreadable_outputs() -> None:
    """An einsum with a model's weight, on either side, projects the other operand (at the call);
    a variadic operand gives its trailing letters' sizes; a size known only from an ``assert`` (d ==
    12) conflicts with another (torch raises on 12 vs 5), in einsum and in an einops group; an
    output the engine cannot read keeps the operands' provenance; an implicit output keeps the
    ellipsis (torch's rank is 3: never a 1-D guess); ``einops.einsum`` keeps provenance when its
    pattern is unreadable, reports a conflict like einsum, and reads lower-case words and
    capitalised names alike. Shapes are torch 2.13's (einops 0.8)."""
    facts = analyze_src(HEADER + textwrap.dedent(EINSUM_OPERANDS))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    found = {
        name: (_shape(values[name]), values[name].dtype, values[name].has(PositionTag), values[name].has(ScoresTag))
        for name in ("left", "right", "variadic", "dotted", "implicit_ellipsis", "words_unreadable", "words_conflict", "lower_words", "capitalised")
    }
    assert found == {
        "left": ("(b, t, 5)", "float", False, False),
        "right": ("(b, t, 5)", "float", False, False),
        "variadic": ("(_, t, t)", "float", False, True),
        "dotted": (None, None, True, False),
        "implicit_ellipsis": (None, "float", False, False),
        "words_unreadable": (None, None, True, False),
        "words_conflict": ("(2, 3)", "float", True, False),
        "lower_words": ("(b, t, t)", "float", False, True),
        "capitalised": ("(b, t, t)", "float", False, True),
    }
    for name in ("left", "right"):
        projection = values[name].tag(ProjectionTag)
        assert (_code(projection.node), _shape(projection.source)) == (_code(values[name].node), "(b, t, 8)"), name
    assert _code(values["dotted"].node).startswith("torch.einsum(") and _code(values["words_unreadable"].node).startswith("einops.einsum(")
    # the positions are those added to ``pos``, not the "maybe" of an operand the engine cannot see
    assert [values[name].tag(PositionTag).kind for name in ("pos", "dotted", "words_unreadable")] == ["added"] * 3
    conflicts = sorted((c.kind, c.op, _code(c.node).split("(")[0], c.detail) for c in facts.conflicts)
    assert conflicts == [
        ("matmul", "einsum", "einops.einsum", "einsum 'ab,bc->ac': index 'b' is 3 in one operand and 2 in another"),
        ("matmul", "einsum", "torch.einsum", "einsum 'btd,de->bte': index 'd' is d in one operand and 5 in another"),
        ("reshape", "rearrange", "einops.rearrange", "'b t (h k) -> b h t k': the group (h k) = 15 does not match the axis of size d"),
    ]


def test_einops_patterns_shapes_conflicts_and_the_last_two_axes_swapped() -> None:
    """``einops.rearrange`` read from its pattern: by position or keyword (``tensor=``, ``pattern=``),
    as ``einops.rearrange`` or a bare ``rearrange``, upper-case names, a size-1 axis, digits, ``()``.
    A rearrange swapping only the last two axes marks the result as that tensor transposed (a key
    written ``b h d t``): 4-D, 3-D and 2-D; not when other axes move too, for a merge, for
    ``repeat``, and a rearrange that does not swap them drops the mark it had. ``reduce`` keeps
    only provenance. What einops rejects (a name no side sizes, another rank, an unbalanced group,
    no ``->``) and an unreadable pattern give an unknown shape, keeping the dtype, at the call. A
    group of the wrong size is a ``reshape`` conflict, an uneven split a ``heads`` one (einops
    raises on both). Shapes are einops 0.8's on torch 2.13."""
    from shapecheck.engine.domain.tags import KeyTransposed

    src = HEADER + "import einops\nfrom einops import rearrange\n" + textwrap.dedent(
        """
        def f(u, pat):
            x = torch.randn(2, 6, 12)
            q = torch.randn(2, 4, 6, 8)
            m = torch.randn(6, 8)
            y1 = torch.randn(2, 1, 12)
            swap = einops.rearrange(q, "b h t d -> b h d t")
            swap_name = rearrange(q, "b h t d -> b h d t")
            swap3 = einops.rearrange(x, "b t d -> b d t")
            swap2 = rearrange(m, "t d -> d t")
            moved = rearrange(q, "b h t d -> h b d t")
            heads_first = rearrange(q, "b h t d -> b t h d")
            repeated = einops.repeat(q, "b h t d -> b h d t")
            merged = rearrange(q, "b h t d -> b h (d t)")
            kt = q.transpose(-2, -1)
            kt_moved = rearrange(kt, "b h d t -> b t h d")
            by_keyword = rearrange(tensor=x, pattern="b t (h d) -> b h t d", h=4)
            upper = rearrange(x, "B T (H D) -> B H T D", H=4)
            one_axis = rearrange(y1, "b 1 d -> b d")
            pairs = einops.reduce(x, "b t (h 2) -> b t h", "max", h=6)
            new_one = rearrange(x, "b t d -> b t () d")
            digit_out = rearrange(x, "b t d -> b t 1 d")
            unknown_pairs = einops.reduce(u, "b (t 2) d -> b t d", "mean")
            missing = einops.repeat(x, "b t d -> b n t d")
            wrong_rank = rearrange(x, "t d -> d t")
            unreadable = rearrange(x, pat)
            no_arrow = rearrange(x, "b t d")
            unbalanced = rearrange(x, "b t d ( -> b t d")
            unbalanced_right = rearrange(x, "b t d -> b (t d")
            mean = einops.reduce(q @ kt, "b h t s -> b t s", "mean")
            positions = einops.reduce(x + torch.arange(12), "b t d -> b d", "sum")
            uneven = rearrange(x, "b t (h k) -> b h t k", h=5)
            wrong_group = rearrange(x, "b t (h k) -> b h t k", h=5, k=3)
        """
    )
    facts = analyze_src(src)
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    inputs = ("x", "q", "m", "y1", "kt")
    found = {
        name: (_shape(value), value.dtype, value.has(KeyTransposed))
        for name, value in values.items() if name not in inputs and name not in ("wrong_rank", "uneven", "wrong_group")
    }
    assert found == {
        "swap": ("(2, 4, 8, 6)", "float", True),
        "swap_name": ("(2, 4, 8, 6)", "float", True),
        "swap3": ("(2, 12, 6)", "float", True),
        "swap2": ("(8, 6)", "float", True),
        "moved": ("(4, 2, 8, 6)", "float", False),
        "heads_first": ("(2, 6, 4, 8)", "float", False),
        "repeated": ("(2, 4, 8, 6)", "float", False),
        "merged": ("(2, 4, 48)", "float", False),
        "kt_moved": ("(2, 6, 4, 8)", "float", False),
        "by_keyword": ("(2, 4, 6, 3)", "float", False),
        "upper": ("(2, 4, 6, 3)", "float", False),
        "one_axis": ("(2, 12)", "float", False),
        "pairs": ("(2, 6, 6)", "float", False),
        "new_one": ("(2, 6, 1, 12)", "float", False),
        "digit_out": ("(2, 6, 1, 12)", "float", False),
        "unknown_pairs": ("(_, _, _)", None, False),
        "missing": (None, "float", False),
        "unreadable": (None, "float", False),
        "no_arrow": (None, "float", False),
        "unbalanced": (None, "float", False),
        "unbalanced_right": (None, "float", False),
        "mean": ("(2, 6, 6)", "float", False),
        "positions": ("(2, 12)", "float", False),
    }
    assert _shape(values["wrong_rank"]) is None
    for name, source in (("swap", "q"), ("swap_name", "q"), ("swap3", "x"), ("swap2", "m")):
        assert values[name].tag(KeyTransposed).source is values[source], name
    for name, value in values.items():
        if name not in inputs:
            assert _code(value.node).startswith(("einops.", "rearrange(")), name
    # reduce keeps provenance (positions) and nothing else (the scores it averaged are no scores)
    assert values["positions"].has(PositionTag) and not values["mean"].has(ScoresTag) and values["mean"].tags == ()
    conflicts = sorted((c.kind, c.op, _code(c.node), c.detail) for c in facts.conflicts)
    assert conflicts == [
        ("heads", "rearrange", 'rearrange(x, "b t (h k) -> b h t k", h=5)',
         "'b t (h k) -> b h t k' splits 12 into groups of 5: 12 is not divisible by 5 (12 % 5 = 2)"),
        ("reshape", "rearrange", 'rearrange(x, "b t (h k) -> b h t k", h=5, k=3)',
         "'b t (h k) -> b h t k': the group (h k) = 15 does not match the axis of size 12"),
    ]


def test_cat_of_variadic_unknown_mixed_and_single_operands() -> None:
    """``torch.cat`` on a negative axis of operands known only by their trailing dims adds that axis
    (``(*, t, 4)`` and ``(*, t, 6)`` on -1: ``(*, t, 10)``; on -2 too); on axis 0 of them the shape is
    unknown; with an operand of unknown shape beside a known one, joined along the last axis (the
    features), unknown too (along another axis: ``test_engine_cat_unknown.py``); one operand is itself; operands of two dtypes
    give no dtype (torch promotes int and float to float: never the first's ``int``); an axis out of
    range gives an unknown shape keeping dtype and provenance; a size other than the cat axis known
    only by ``assert`` (d == 12 against 5) is a ``cat`` conflict at the call (torch raises). Shapes
    are torch 2.13's."""
    values, conflicts = _run(
        """
        def f(v1: Float[Tensor, "*batch t 4"], v2: Float[Tensor, "*batch t 6"], h1: Float[Tensor, "*batch 3 d"],
              h2: Float[Tensor, "*batch 5 d"], w: Float[Tensor, "b t d"], u):
            x = torch.randn(2, 3)
            i = torch.zeros(2, 3, dtype=torch.long)
            p = x + torch.arange(3)
            vp = v1 + torch.arange(4)
            last = torch.cat([vp, v2], dim=-1)
            hidden = torch.cat([v1[..., 0, :], vp[..., 0, :]], dim=-2)
            second = torch.cat((h1, h2), dim=-2)
            first = torch.cat([v1, v2])
            mixed_unknown = torch.cat([u, p], dim=-1)
            single = torch.cat([x])
            promoted = torch.cat([i, x])
            same_int = torch.cat([i, i], dim=1)
            out_of_range = torch.cat([p, p], dim=5)
            n = w.shape[-1]
            assert n == 12
            widths = torch.cat([w, torch.randn(2, 7, 5)], dim=1)
        """
    )
    found = {
        name: (_shape(values[name]), values[name].dtype, values[name].has(PositionTag))
        for name in ("last", "hidden", "second", "first", "mixed_unknown", "single", "promoted", "same_int", "out_of_range", "widths")
    }
    assert found == {
        "last": ("(*, t, 10)", "float", True),
        "hidden": (None, "float", True),  # (*, 4) twice on -2: the axis is in the unknown prefix
        "second": ("(*, 8, d)", "float", False),
        "first": (None, "float", False),
        "mixed_unknown": (None, None, True),
        "single": ("(2, 3)", "float", False),
        "promoted": ("(4, 3)", None, False),
        "same_int": ("(2, 6)", "int", False),
        "out_of_range": (None, "float", True),
        "widths": (None, "float", False),
    }
    assert all(_code(values[name].node).startswith("torch.cat(") for name in found)
    assert [(c.kind, c.op, _code(c.node), c.detail) for c in conflicts] == [(
        "cat", "cat", "torch.cat([w, torch.randn(2, 7, 5)], dim=1)",
        "cat along dim 1 of (b, t, d) and (2, 7, 5): dim 2 differs (d vs 5)",
    )]

# --- split, chunk, tensor_split (ops/joins) ----------------------------------------------------------


def _pieces(value) -> tuple:
    """A split's pieces' shapes (None: their number is unknown), its template's shape, whether exact."""
    pieces = None if value.pieces is None else tuple(_shape(piece) for piece in value.pieces)
    return pieces, _shape(value.template), value.exact


def test_split_chunk_and_tensor_split_make_the_pieces_torch_makes() -> None:
    """``split(n)`` makes pieces *of* n (the last one the rest), ``chunk(n)`` at most n pieces of
    ``ceil(size / n)``, ``tensor_split(n)`` exactly n pieces, the first ``size % n`` one longer, and
    ``tensor_split((i, j))`` the slices between those indices (clamped, maybe empty). Sizes by
    position or keyword (``split_size_or_sections=``, the method's ``split_size=``, ``chunks=``,
    ``sections=``, ``indices=``), a list of sizes, a zero-size axis, symbolic sizes (pieces only when
    the division is exact), more than 64 pieces and what cannot be read (an unknown size or axis, a
    chunk count of 0, which torch refuses) give no pieces. Every shape is torch 2.13's."""
    values, conflicts = _run(
        """
        def f(u, n: int, t: int, w: Float[Tensor, "b t d"]):
            x = torch.randn(12, 10)
            z = torch.randn(0, 3)
            y = torch.randn(t, 2 * t)
            s1 = x.split(4)
            s2 = torch.split(x, 4, 1)
            s3 = torch.split(x, split_size_or_sections=3, dim=1)
            s4 = x.split(split_size=5, dim=-1)
            s5 = x.split((2, 8), 1)
            s6 = x.split([2, 8], dim=1)
            s7 = x.split(20)
            s8 = torch.randn(130, 2).split(2)
            s9 = x.split(u)
            s10 = x.split(4, dim=n)
            s11 = z.split(2)
            s12 = y.split(t, dim=1)
            s13 = y.split(2, dim=1)
            s14 = y.split(3)
            s15 = x.split(4, 5)
            c1 = x.chunk(5)
            c2 = torch.chunk(x, 3, dim=1)
            c3 = torch.chunk(x, chunks=4, dim=-1)
            c4 = x.chunk(13)
            c5 = x.chunk(0)
            c6 = x.chunk(u)
            c7 = z.chunk(3)
            c8 = y.chunk(2, dim=1)
            c9 = y.chunk(2)
            t1 = torch.tensor_split(x, 3)
            t2 = x.tensor_split(3, dim=1)
            t3 = torch.tensor_split(x, (2, 5), dim=1)
            t4 = torch.tensor_split(x, (5, 2), dim=1)
            t5 = torch.tensor_split(x, [-3, 20], dim=1)
            t6 = torch.tensor_split(x, indices=[3], dim=-1)
            t7 = torch.tensor_split(x, sections=4)
            t8 = torch.tensor_split(x, 14)
            t9 = torch.tensor_split(x, u)
            t10 = torch.tensor_split(x, (n, 4), dim=1)
            t11 = y.tensor_split(2, dim=1)
            t12 = y.tensor_split(2)
            t13 = z.tensor_split(2)
            c = w.shape[-1]
            assert c % 4 == 0
            s16 = z.split(1)
            s17 = z.split(0)
            s18 = torch.randn(128, 2).split(2)
            s19 = y.split(t)
            s20 = torch.randn(t, 64 * t).split(t, dim=1)
            s21 = w.split(4, dim=-1)
            s22 = u.split(2)
            s23 = u.split((2, 8))
            s24 = x.split((2, 8), dim=5)
            s25 = x.split(2.5)
            c10 = x.chunk(1)
            c11 = w.chunk(4, dim=-1)
            c12 = torch.chunk(u, 3)
        """
    )
    assert conflicts == []
    found = {name: _pieces(value) for name, value in values.items() if name not in ("x", "y", "z", "c")}

    def rows(*sizes: int) -> tuple[str, ...]:
        return tuple(f"({size}, 10)" for size in sizes)

    def cols(*sizes: int) -> tuple[str, ...]:
        return tuple(f"(12, {size})" for size in sizes)

    assert found == {
        "s1": (rows(4, 4, 4), "(4, 10)", True),
        "s2": (cols(4, 4, 2), None, False),
        "s3": (cols(3, 3, 3, 1), None, False),
        "s4": (cols(5, 5), "(12, 5)", True),
        "s5": (cols(2, 8), None, False),
        "s6": (cols(2, 8), None, False),
        "s7": (rows(12), None, False),
        "s8": (None, "(2, 2)", True),  # 65 pieces: too many to list
        "s9": (None, "(u, 10)", False),
        "s10": (None, None, False),
        "s11": (("(0, 3)",), None, False),
        "s12": (("(t, t)", "(t, t)"), "(t, t)", True),
        "s13": (None, "(t, 2)", True),  # t pieces of 2
        "s14": (None, "(3, 2*t)", False),
        "s15": (None, None, False),  # no axis 5
        "c1": (rows(3, 3, 3, 3), None, False),
        "c2": (cols(4, 4, 2), None, False),
        "c3": (cols(3, 3, 3, 1), None, False),
        "c4": (rows(*[1] * 12), None, False),
        "c5": (None, None, False),
        "c6": (None, None, False),
        "c7": (("(0, 3)",) * 3, None, False),
        "c8": (("(t, t)", "(t, t)"), None, False),
        "c9": (("(_, 2*t)", "(_, 2*t)"), None, False),  # t rows in 2 chunks: rows unknown, columns kept (two pieces for t >= 2)
        "t1": (rows(4, 4, 4), None, False),
        "t2": (cols(4, 3, 3), None, False),
        "t3": (cols(2, 3, 5), None, False),
        "t4": (cols(5, 0, 8), None, False),
        "t5": (cols(7, 3, 0), None, False),
        "t6": (cols(3, 7), None, False),
        "t7": (rows(3, 3, 3, 3), None, False),
        "t8": (rows(*[1] * 12, 0, 0), None, False),
        "t9": (None, None, False),
        "t10": ((None, None, None), None, False),
        "t11": (("(t, t)", "(t, t)"), None, False),
        "t12": ((None, None), None, False),
        "t13": (("(0, 3)", "(0, 3)"), None, False),
        "s16": (("(0, 3)",), None, False),
        "s17": (None, "(0, 3)", False),  # one empty piece in torch: the count is not read here
        "s18": (("(2, 2)",) * 64, "(2, 2)", True),
        "s19": (("(t, 2*t)",), "(t, 2*t)", True),
        "s20": (("(t, t)",) * 64, "(t, t)", True),
        "s21": (None, "(b, t, 4)", True),  # d // 4 pieces of 4: exact because d % 4 == 0 is asserted
        "s22": (None, None, False),
        "s23": ((None, None), None, False),
        "s24": ((None, None), None, False),  # no axis 5
        "s25": (None, None, False),  # torch refuses a float size
        "c10": (rows(12), None, False),
        "c11": (("(b, t, d//4)",) * 4, None, False),
        "c12": ((None, None, None), None, False),
    }
    # every split's template is a tensor of the source's kind, even when nothing else is known
    assert {name: value.template.dtype for name, value in values.items() if name not in ("x", "y", "z", "c")} == {
        name: None if name in ("s22", "s23", "c12") else "float" for name in found  # u: of unknown dtype
    }


TENSOR_SPLITS = """
class M(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.qkv = nn.Linear(12, 36)
        self.fused = nn.Linear(12, 3 * width)
        self.width = width

    def forward(self, x: Float[Tensor, "b t 12"], w: Float[Tensor, "b t d"], u, n: int):
        parts = self.qkv(x).tensor_split(3, dim=-1)
        split_parts = self.qkv(x).split(12, dim=-1)
        chunk_parts = self.qkv(x).chunk(3, dim=-1)
        listed_parts = self.qkv(x).split((12, 12, 12), dim=-1)
        fused_chunks = self.fused(x).chunk(3, dim=-1)
        fused_splits = self.fused(x).split(self.width, dim=-1)
        c = w.shape[-1]
        assert c % 4 == 0
        quarters = w.tensor_split(4, dim=-1)
        positional = torch.tensor_split(x, 3, 2)
        zero_first = torch.tensor_split(x, (0, 4), dim=2)
        one = torch.tensor_split(x, 1)
        many = torch.tensor_split(x, 64, dim=2)
        too_many = torch.tensor_split(x, 65, dim=2)
        unknown_axis = x.tensor_split(3, dim=n)
        unknown_source = torch.tensor_split(u, 2)
        return x
"""


def test_tensor_split_reads_its_axis_indices_and_count() -> None:
    """``tensor_split``'s axis by position; an index 0 makes an empty first piece; 1 to 64 sections
    are listed (65 are too many to list); a width divisible by 4 only by an ``assert`` splits into 4
    known pieces; an unknown axis or source still gives the number of pieces; the pieces of a fused
    projection are its parts 0, 1, 2 (``tensor_split``, ``split`` by a size or a list of sizes,
    ``chunk``; a known or symbolic width); the template keeps the dtype. Shapes are torch 2.13's (b=2,
    t=5)."""
    facts = analyze_src(HEADER + textwrap.dedent(TENSOR_SPLITS))
    assert facts.internal_errors == [] and facts.conflicts == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    found = {name: _pieces(values[name])[0] for name in values if name not in ("c",)}
    assert found == {
        "parts": ("(b, t, 12)",) * 3,
        "split_parts": ("(b, t, 12)",) * 3,
        "chunk_parts": ("(b, t, 12)",) * 3,
        "listed_parts": ("(b, t, 12)",) * 3,
        "fused_chunks": ("(b, t, width)",) * 3,
        "fused_splits": ("(b, t, width)",) * 3,
        "quarters": ("(b, t, d//4)",) * 4,
        "positional": ("(b, t, 4)",) * 3,
        "zero_first": ("(b, t, 0)", "(b, t, 4)", "(b, t, 8)"),
        "one": ("(b, t, 12)",),
        "many": ("(b, t, 1)",) * 12 + ("(b, t, 0)",) * 52,
        "too_many": None,
        "unknown_axis": (None,) * 3,
        "unknown_source": (None,) * 2,
    }
    for name in ("parts", "split_parts", "chunk_parts", "listed_parts", "fused_chunks", "fused_splits"):
        assert [piece.tag(ProjectionTag).part for piece in values[name].pieces] == [(0,), (1,), (2,)], name
    assert [values[name].template.dtype for name in ("parts", "quarters", "too_many", "unknown_axis")] == ["float"] * 4


# --- tensors made from sizes or data (ops/factories) -------------------------------------------------

FACTORIES = """
from helpers import helper


def f(t: int, data):
    x = torch.randn(2, 3)
    i = torch.zeros(4, dtype=torch.long)
    o1 = torch.ones(2, 3)
    o2 = torch.zeros((2, 3))
    o3 = torch.zeros(size=(2, 3))
    o4 = torch.empty(2, 3, dtype=torch.long)
    o5 = torch.randn(2, 3, dtype=torch.float16)
    o6 = torch.rand([4])
    o7 = torch.empty(t, 3, dtype=torch.bool)
    f1 = torch.full((2, 3), 1.5)
    f2 = torch.full((2, 3), True)
    f3 = torch.full((2, 3), 7)
    f4 = torch.full(size=(2, 3), fill_value=-1.0)
    f5 = torch.full((t, 3), 0.5, dtype=torch.float16)
    l1 = torch.zeros_like(x)
    l2 = torch.ones_like(i)
    l3 = torch.full_like(x, 2.0)
    l4 = torch.full_like(x, fill_value=3.0)
    l5 = torch.empty_like(i)
    l6 = torch.rand_like(x, dtype=torch.float16)
    l7 = torch.randn_like(x)
    l8 = torch.zeros_like(i, dtype=torch.bool)
    e1 = torch.eye(3)
    e2 = torch.eye(3, 5)
    e3 = torch.eye(n=3, m=4)
    e4 = torch.eye(3, dtype=torch.bool)
    e5 = torch.eye(t)
    a1 = torch.arange(5)
    a2 = torch.arange(2, 7)
    a3 = torch.arange(0, 10, 2)
    a4 = torch.arange(2, 7, 1)
    a5 = torch.arange(end=5)
    a6 = torch.arange(start=2, end=7)
    a7 = torch.arange(1, end=4)
    a9 = torch.arange(5, dtype=torch.float32)
    a10 = torch.arange(t)
    a11 = torch.arange(1, t + 1)
    a12 = torch.arange(0, 8, step=2)
    a13 = torch.arange(0.0, 4)
    n1 = torch.tensor([[1, 2], [3, 4]])
    n2 = torch.tensor([1.0, 2])
    n3 = torch.tensor(True)
    n4 = torch.tensor([True, False])
    n5 = torch.tensor(3)
    n6 = torch.tensor([1, 2], dtype=torch.float32)
    n7 = torch.tensor(data=[1, 2, 3])
    n8 = torch.tensor([True, 1])
    n9 = torch.tensor([[True], [False]])
    r1 = torch.randint(10, (2, 3))
    r2 = torch.randint(0, 10, (4,))
    r3 = torch.randint(10, size=(5,))
    r4 = torch.randint(3, 10, (2,), dtype=torch.float32)
    r5 = torch.randint(high=10, size=(2, t))
    k1 = torch.randint_like(x, 10)
    k2 = torch.randint_like(x, 10, dtype=torch.long)
    p1 = torch.randperm(5)
    p2 = torch.randperm(t)
    p3 = torch.randperm(5, dtype=torch.float32)
    z1 = torch.zeros(1, helper(), 4)
    z2 = torch.zeros(helper())
    e6 = torch.eye(helper())
    e7 = torch.eye(3, helper())
    r6 = torch.randint(5)
    r7 = torch.randint(0, 5, helper())
    p4 = torch.randperm(n=5)
    p5 = torch.randperm(helper())
    n10 = torch.tensor(data, dtype=torch.long)
    n11 = torch.tensor(data)
    a14 = torch.arange()
"""


def test_factories_make_the_shape_dtype_and_fill_torch_makes() -> None:
    """``ones`` / ``zeros`` / ``empty`` / ``rand*`` / ``full`` and their ``*_like`` forms, ``eye``,
    ``arange``, ``tensor``, ``randint``, ``randint_like`` and ``randperm``: sizes by position, as a
    tuple or list and by keyword, the dtype class (``dtype=``, a bool or float fill, the numbers of a
    nested list, the source's for ``*_like``), the fill of ``ones`` / ``zeros`` / ``full`` (a scale the
    rules read), arange's positions and its ``step * k`` index only when it starts at 0 (``arange(1,
    end=4)`` starts at 1). Shapes and dtypes are torch 2.13's (t = 4 there); what the engine does not
    read is None: an arange with a step other than 1 or a float bound, ``full`` with an int fill (int64
    in torch), sizes from a helper the engine does not see (one unseen size among several is a size
    of its own), and calls torch refuses (``randint(5)``, ``arange()``)."""
    from shapecheck.engine.domain.tags import FilledTag
    from shapecheck.engine.ops.frequencies import IndexLinear

    values, conflicts = _run(FACTORIES)
    assert conflicts == []
    found = {}
    for name, value in values.items():
        fill = value.tag(FilledTag)
        found[name] = (_shape(value), value.dtype, None if fill is None else fill.value.coef)
        assert _code(value.node).startswith("torch."), name
    assert found == {
        "x": ("(2, 3)", "float", None),
        "i": ("(4)", "int", 0.0),
        "o1": ("(2, 3)", "float", 1.0),
        "o2": ("(2, 3)", "float", 0.0),
        "o3": ("(2, 3)", "float", 0.0),
        "o4": ("(2, 3)", "int", None),
        "o5": ("(2, 3)", "float", None),
        "o6": ("(4)", "float", None),
        "o7": ("(t, 3)", "bool", None),
        "f1": ("(2, 3)", "float", 1.5),
        "f2": ("(2, 3)", "bool", None),
        "f3": ("(2, 3)", None, 7.0),
        "f4": ("(2, 3)", "float", -1.0),
        "f5": ("(t, 3)", "float", 0.5),
        "l1": ("(2, 3)", "float", 0.0),
        "l2": ("(4)", "int", 1.0),
        "l3": ("(2, 3)", "float", 2.0),
        "l4": ("(2, 3)", "float", 3.0),
        "l5": ("(4)", "int", None),
        "l6": ("(2, 3)", "float", None),
        "l7": ("(2, 3)", "float", None),
        "l8": ("(4)", "bool", 0.0),
        "e1": ("(3, 3)", "float", None),
        "e2": ("(3, 5)", "float", None),
        "e3": ("(3, 4)", "float", None),
        "e4": ("(3, 3)", "bool", None),
        "e5": ("(t, t)", "float", None),
        "a1": ("(5)", "int", None),
        "a2": ("(5)", "int", None),
        "a3": (None, "int", None),
        "a4": ("(5)", "int", None),
        "a5": ("(5)", "int", None),
        "a6": ("(5)", "int", None),
        "a7": ("(3)", "int", None),
        "a9": ("(5)", "float", None),
        "a10": ("(t)", "int", None),
        "a11": ("(t)", "int", None),
        "a12": (None, "int", None),
        "a13": (None, "float", None),
        "n1": ("(2, 2)", "int", None),
        "n2": ("(2)", "float", None),
        "n3": ("()", "bool", None),
        "n4": ("(2)", "bool", None),
        "n5": ("()", "int", None),
        "n6": ("(2)", "float", None),
        "n7": ("(3)", "int", None),
        "n8": ("(2)", "int", None),
        "n9": ("(2, 1)", "bool", None),
        "r1": ("(2, 3)", "int", None),
        "r2": ("(4)", "int", None),
        "r3": ("(5)", "int", None),
        "r4": ("(2)", "float", None),
        "r5": ("(2, t)", "int", None),
        "k1": ("(2, 3)", "float", None),
        "k2": ("(2, 3)", "int", None),
        "p1": ("(5)", "int", None),
        "p2": ("(t)", "int", None),
        "p3": ("(5)", "float", None),
        "z1": ("(1, n1, 4)", "float", 0.0),  # one size unseen among three: a size of its own
        "z2": (None, "float", 0.0),  # a lone unseen argument may be a whole shape
        "e6": (None, "float", None),
        "e7": (None, "float", None),
        "r6": (None, "int", None),  # torch refuses randint without a size
        "r7": (None, "int", None),
        "p4": ("(5)", "int", None),
        "p5": (None, "int", None),
        "n10": (None, "int", None),
        "n11": (None, None, None),
        "a14": (None, "int", None),  # torch refuses arange(): no crash
    }
    aranges = [name for name in values if name.startswith("a")]
    assert {name: values[name].tag(PositionTag).kind for name in aranges} == dict.fromkeys(aranges, "index")
    assert all(values[name].tag(PositionTag).node is values[name].node for name in aranges)
    steps = {name: values[name].tag(IndexLinear).coef.coef for name in aranges if values[name].has(IndexLinear) and name != "a14"}
    assert steps == {"a1": 1.0, "a3": 2.0, "a5": 1.0, "a9": 1.0, "a10": 1.0, "a12": 2.0, "a13": 1.0}



# --- elementwise ops, masking and reductions (ops/elementwise) -----------------------------------------

ELEMENTWISE = """
def f(u, v: Float[Tensor, "*b 4"]):
    x = torch.randn(2, 3, 4)
    i = torch.randint(0, 5, (2, 3))
    bmask = torch.randn(2, 3) > 0
    p = x + torch.arange(4)
    q = torch.randn(2, 3, 4)
    scores = q @ q.transpose(-2, -1)
    pscores = q @ p.transpose(-2, -1)
    future = torch.ones(3, 3).triu(diagonal=1).bool()
    pos_mask = torch.arange(3)[None, :] > torch.arange(3)[:, None]
    fc = nn.Linear(4, 8)
    h = fc(x)
    e_sig = torch.sigmoid(i)
    e_exp = bmask.exp()
    e_cs = bmask.cumsum(1)
    e_cp = bmask.cumprod(1)
    e_flip = torch.flip(bmask, [0])
    e_icum = i.cumsum(0)
    e_relu = torch.relu(p)
    e_layer = torch.relu(h)
    n1 = F.normalize(x, dim=-1)
    n2 = F.layer_norm(x, (4,))
    n3 = F.rms_norm(x, (4,))
    a1 = x.add(p)
    a2 = x.mul(0.5)
    a3 = x.div(4)
    a4 = x.sub(other=p)
    c1 = x.add(torch.randn(5))
    c2 = x.sub(torch.randn(6))
    c3 = x.mul(torch.randn(7))
    c4 = x.div(torch.randn(9))
    c5 = torch.pow(x, torch.randn(11))
    m1 = torch.logical_not(future)
    w1 = torch.pow(x, 2)
    w2 = torch.pow(input=p, exponent=2)
    s1 = torch.softmax(pscores, dim=-1)
    s2 = F.log_softmax(scores, dim=-1)
    s3 = F.softmax(input=scores, dim=-1)
    mf1 = scores.masked_fill(future, float("-inf"))
    mf2 = torch.masked_fill(input=scores, mask=future, value=-1e9)
    mf3 = scores.masked_fill(bmask[:, None, :] == 0, 0.0)
    mf4 = scores.masked_fill(torch.ones(4, 4).bool(), 0.0)
    mf5 = x.masked_fill(bmask[..., None], 0.0)
    mf6 = s3.masked_fill(future, 0.0)
    mf7 = scores.masked_fill(pos_mask, -1e4)
    wh1 = torch.where(future, float("-inf"), scores)
    wh2 = torch.where(pos_mask, scores, torch.full_like(scores, -1e4))
    wh3 = torch.where(bmask[..., None], x, 0.0)
    wh4 = torch.where(future)
    wh5 = torch.where(bmask[..., None], input=x, other=p)
    wh6 = torch.where(u, x, 0.0)
    t1 = torch.tril(torch.ones(3, 3))
    t2 = torch.ones(3, 3).triu(diagonal=1)
    t3 = torch.full((3, 3), float("-inf")).triu(1)
    t4 = torch.triu(torch.ones(2, 3, 5), 2)
    t5 = torch.tril(u)
    t6 = torch.tril(p[0])
    r1 = x.argmin(-1)
    r2 = torch.count_nonzero(x, dim=1)
    r3 = bmask.all()
    r4 = bmask.any(1)
    r5 = bmask.prod(1)
    r6 = bmask.sum()
    r7 = torch.max(x, p)
    r8 = torch.min(x, other=p)
    r10 = torch.norm(x, 2, -1)
    r11 = x.norm(2, -1, True)
    r12 = x.std(-1, True, True)
    r13 = x.var(-1, True)
    r14 = v.sum(-1)
    r15 = x.sum(5)
    r16 = (p * 0.5).sum(-1)
    r17 = (p * 0.5).mean(-1)
    r18 = (p * 0.5).amax(-1)
    r21 = x.sum((1, 2))
    r22 = x.sum(-1, keepdim=True)
    r19 = x.max(-1)
    r20 = x.min(dim=1)
    vp = v + torch.arange(4)
    g = torch.tensor(u)
    r23 = x.all()
    r24 = torch.max(x, g)
    r25 = torch.max(i, x[..., 0])
    r26 = torch.max(p, x)
    r27 = vp.sum(-1)
    r28 = p.sum(5)
    wh7 = torch.where(bmask[..., None], x, other=torch.randn(5, 1, 1, 4))
    wh8 = torch.where(torch.randn(5, 2, 3, 4) > 0, x, 0.0)
    wh9 = torch.where(g > 0, x, 0.0)
    wh10 = torch.where(future, scores, torch.randn(3, 3))
    wh11 = torch.where(g > 0, scores, float("-inf"))
    mf8 = g.masked_fill(future, 0.0)
    e_exp2 = torch.exp(x)
    e_rec = torch.reciprocal(x)
"""


def test_elementwise_masking_and_reductions_read_their_operands_like_torch() -> None:
    """Elementwise functions (float results of int or bool inputs, ``cumsum`` / ``cumprod`` of bool
    are int, a flip keeps bool; norms carry a scale of their own at the call; a layer's output stays
    one), the ``add`` / ``sub`` / ``mul`` / ``div`` methods (``other=``, scales, broadcast conflicts
    named by their operator), ``pow`` (``input=`` / ``exponent=``), ``logical_not`` of a triangle,
    softmax / log_softmax of scores (``input=``), ``masked_fill`` and ``where`` on scores and
    probabilities (the mask, the fill, which side is blocked, whether it is causal; a mask of the
    wrong shape is a ``mask-broadcast`` conflict), ``tril`` / ``triu`` (lower, diagonal by position or
    keyword, the size of the last axis, the method form, an additive ``-inf`` triangle), reductions
    (int and bool results, ``torch.max(a, b)`` and ``other=``, ``norm`` / ``std`` / ``var``'s
    positional keepdim, tuples of dims, variadic and out-of-range sources, the scale kept by sum and
    mean, values and indices of ``max(dim)``). Every result is made at its call and keeps the
    provenance of what it was computed from. Shapes and dtypes are torch 2.13's (``v`` a (5, 4)
    tensor there)."""
    from shapecheck.engine.domain.tags import LayerOutputTag
    from shapecheck.engine.domain.values import UNKNOWN, MaskedTag, TensorValue

    facts = analyze_src(HEADER + textwrap.dedent(ELEMENTWISE))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    written = dict(line.strip().split(" = ", 1) for line in ELEMENTWISE.splitlines()[2:] if " = " in line)
    found = {
        name: (_shape(value), value.dtype, value.has(PositionTag))
        for name, value in values.items() if isinstance(value, TensorValue) and name[0] in "eanmwsctr" and name not in ("scores", "q")
    }
    for name in found:
        assert _code(values[name].node) == written[name], name  # made at its own call
    assert found == {
        "e_sig": ("(2, 3)", "float", False),
        "e_exp": ("(2, 3)", "float", False),
        "e_cs": ("(2, 3)", "int", True),  # a count along the tokens: positions past the padding (OPT)
        "e_cp": ("(2, 3)", "int", False),
        "e_flip": ("(2, 3)", "bool", False),
        "e_icum": ("(2, 3)", "int", False),
        "e_relu": ("(2, 3, 4)", "float", True),
        "e_layer": ("(2, 3, 8)", "float", False),
        "n1": ("(2, 3, 4)", "float", False),
        "n2": ("(2, 3, 4)", "float", False),
        "n3": ("(2, 3, 4)", "float", False),
        "a1": ("(2, 3, 4)", "float", True),
        "a2": ("(2, 3, 4)", "float", False),
        "a3": ("(2, 3, 4)", "float", False),
        "a4": ("(2, 3, 4)", "float", True),
        "c1": (None, "float", False),
        "c2": (None, "float", False),
        "c3": (None, "float", False),
        "c4": (None, "float", False),
        "c5": (None, "float", False),
        "m1": ("(3, 3)", "bool", False),
        "w1": ("(2, 3, 4)", "float", False),
        "w2": ("(2, 3, 4)", "float", True),
        "s1": ("(2, 3, 3)", "float", True),
        "s2": ("(2, 3, 3)", "float", False),
        "s3": ("(2, 3, 3)", "float", False),
        "mf1": ("(2, 3, 3)", "float", False),
        "mf2": ("(2, 3, 3)", "float", False),
        "mf3": ("(2, 3, 3)", "float", False),
        "mf4": ("(2, 3, 3)", "float", False),
        "mf5": ("(2, 3, 4)", "float", False),
        "mf6": ("(2, 3, 3)", "float", False),
        "mf7": ("(2, 3, 3)", "float", True),
        "wh1": ("(2, 3, 3)", "float", False),
        "wh2": ("(2, 3, 3)", "float", True),
        "wh3": ("(2, 3, 4)", "float", False),
        "wh5": ("(2, 3, 4)", "float", False),
        "wh6": ("(2, 3, 4)", "float", False),
        "t1": ("(3, 3)", "float", False),
        "t2": ("(3, 3)", "float", False),
        "t3": ("(3, 3)", "float", False),
        "t4": ("(2, 3, 5)", "float", False),
        "t5": (None, None, False),
        "t6": ("(3, 4)", "float", True),
        "r1": ("(2, 3)", "int", False),
        "r2": ("(2, 4)", "int", False),
        "r3": ("()", "bool", False),
        "r4": ("(2)", "bool", False),
        "r5": ("(2)", "int", False),
        "r6": ("()", "int", False),
        "r7": ("(2, 3, 4)", "float", True),
        "r8": ("(2, 3, 4)", "float", True),
        "r10": ("(2, 3)", "float", False),
        "r11": ("(2, 3, 1)", "float", False),
        "r12": ("(2, 3, 1)", "float", False),
        "r13": ("(2, 3)", "float", False),
        "r14": ("(*)", "float", False),  # the axes before the summed last one
        "r15": (None, "float", False),
        "r16": ("(2, 3)", "float", True),
        "r17": ("(2, 3)", "float", True),
        "r18": ("(2, 3)", "float", True),
        "r21": ("(2)", "float", False),
        "r22": ("(2, 3, 1)", "float", False),
        "r23": ("()", "bool", False),
        "r24": (None, None, False),  # the other of unknown shape and dtype
        "r25": ("(2, 3)", None, False),  # int and float: torch promotes to float, never the first's int
        "r26": ("(2, 3, 4)", "float", True),
        "r27": ("(*)", "float", True),
        "r28": (None, "float", True),
        "wh7": ("(5, 2, 3, 4)", "float", False),  # the other branch broadcasts too
        "wh8": ("(5, 2, 3, 4)", "float", False),  # and the condition
        "wh9": ("(*, 2, 3, 4)", "float", False),  # a condition of unknown shape may add leading axes
        "wh10": ("(2, 3, 3)", "float", False),
        "wh11": ("(2, 3, 3)", "float", False),  # a mask of unknown shape on scores is presumed to fit them
        "mf8": (None, None, False),
        "e_exp2": ("(2, 3, 4)", "float", False),
        "e_rec": ("(2, 3, 4)", "float", False),
    }
    assert not any(None in value.tags for value in values.values() if isinstance(value, TensorValue))  # a tag is a tag
    assert values["wh10"].tag(MaskedTag).fill is None  # a random tensor is no fill value
    assert values["wh4"] is UNKNOWN  # torch.where(condition) alone: a tuple of index tensors
    assert [(_shape(item), item.dtype) for name in ("r19", "r20") for item in values[name].items] == [
        ("(2, 3)", "float"), ("(2, 3)", "int"), ("(2, 4)", "float"), ("(2, 4)", "int"),
    ]
    scales = {name: values[name].tag(ScaleTag) for name in ("n1", "n2", "n3", "a2", "a3", "r16", "r17", "r18", "e_relu")}
    assert {name: None if tag is None else (tag.factor and tag.factor.coef, _code(tag.node)) for name, tag in scales.items()} == {
        "n1": (None, written["n1"]), "n2": (None, written["n2"]), "n3": (None, written["n3"]),
        "a2": (0.5, "x.mul(0.5)"), "a3": (0.25, "x.div(4)"),
        "r16": (0.5, "(p * 0.5)"), "r17": (0.5, "(p * 0.5)"), "r18": None, "e_relu": None,
    }
    assert values["e_layer"].has(LayerOutputTag)
    probs = {name: values[name].tag(ProbsTag) for name in ("s1", "s2", "s3")}
    assert {name: (tag.log, tag.scores is values[source]) for (name, tag), source in zip(probs.items(), ("pscores", "scores", "scores"))} == {
        "s1": (False, True), "s2": (True, True), "s3": (False, True),
    }
    triangles = {name: values[name].tag(TriangleTag) for name in ("future", "m1", "t1", "t2", "t3", "t4", "t5", "t6")}
    assert {name: (t.lower, t.diagonal, str(t.full_size), t.method_form, t.additive, t.negated) for name, t in triangles.items()} == {
        "future": (False, 1, "3", True, False, False),
        "m1": (False, 1, "3", True, False, True),
        "t1": (True, 0, "3", False, False, False),
        "t2": (False, 1, "3", True, False, False),
        "t3": (False, 1, "3", True, True, False),
        "t4": (False, 2, "5", False, False, False),
        "t5": (True, 0, "None", False, False, False),
        "t6": (True, 0, "4", False, False, False),
    }
    assert all(_code(triangles[name].node) == written[name] for name in ("t1", "t2", "t3", "t4", "t5", "t6"))  # m1: the triu it negates
    masks = {name: values[name].tag(MaskedTag) for name in ("mf1", "mf2", "mf3", "mf5", "mf6", "mf7", "wh1", "wh2", "wh3")}
    mask_of = {"mf1": "future", "mf2": "future", "mf6": "future", "mf7": "pos_mask", "wh1": "future", "wh2": "pos_mask"}
    assert {
        name: None if tag is None else (tag.mask is values[mask_of[name]] if name in mask_of else _code(tag.mask.node), tag.fill.coef, tag.blocked_when, tag.causal)
        for name, tag in masks.items()
    } == {
        "mf1": (True, float("-inf"), True, True),
        "mf2": (True, -1e9, True, True),
        "mf3": ("bmask[:, None, :] == 0", 0.0, True, False),
        "mf5": None,  # not scores: no mask to judge
        "mf6": (True, 0.0, True, True),
        "mf7": (True, -1e4, True, False),
        "wh1": (True, float("-inf"), True, True),
        "wh2": (True, -1e4, False, False),  # the fill is the other branch: blocked where the mask is False
        "wh3": None,
    }
    assert all(_code(masks[name].node) == written[name] for name in mask_of)
    assert [(c.kind, c.op, _code(c.node), c.detail) for c in facts.conflicts] == [
        ("broadcast", "add", "x.add(torch.randn(5))", "`+` of shapes (2, 3, 4) and (5): 4 vs 5 cannot broadcast"),
        ("broadcast", "sub", "x.sub(torch.randn(6))", "`-` of shapes (2, 3, 4) and (6): 4 vs 6 cannot broadcast"),
        ("broadcast", "mul", "x.mul(torch.randn(7))", "`*` of shapes (2, 3, 4) and (7): 4 vs 7 cannot broadcast"),
        ("broadcast", "truediv", "x.div(torch.randn(9))", "`/` of shapes (2, 3, 4) and (9): 4 vs 9 cannot broadcast"),
        ("broadcast", "pow", "torch.pow(x, torch.randn(11))", "`**` of shapes (2, 3, 4) and (11): 4 vs 11 cannot broadcast"),
        ("mask-broadcast", "masked_fill", "scores.masked_fill(torch.ones(4, 4).bool(), 0.0)",
         "mask of shape (4, 4) cannot broadcast against (2, 3, 3) (4 vs 3)"),
    ]


def test_subscripts_of_unannotated_arguments_and_of_none_or_ellipsis_held_in_names() -> None:
    """An argument of unknown type indexed with several axes, ``None`` or ``...`` is an array: a
    tensor of unknown shape, the same one for every subscript of that argument (two windows cut from
    it are windows of one sequence); one plain index or slice may index anything (a list, a dict).
    ``None`` and ``...`` held in a name index like the literals. Shapes as torch gives them; None
    where torch raises (a float index) or the engine does not read the index (a list)."""
    facts = analyze_src(
        HEADER
        + textwrap.dedent(
            """
            def f(z, w, x: Float[Tensor, "b t d"], k: int):
                z1 = z[:, :-1]
                z2 = z[:, 1:]
                z3 = z[..., None]
                z4 = z[None]
                z5 = z[1:]
                z6 = z[0]
                z7 = z[:, :k]
                z8 = z[k]
                w1 = w[:, 1:]
                nothing = None
                every = ...
                e1 = x[nothing]
                e2 = x[every, 0]
                e3 = x[:, nothing, every]
                e4 = x[[0, 1]]
                e5 = x[0.5]
                s1 = x.sum()[None]
            """
        )
    )
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    arrays = {name for name in values if name[0] in "zw" and isinstance(values[name], TensorValue)}
    assert arrays == {"z1", "z2", "z3", "z4", "z7", "w1"}
    assert {name: _shape(values[name]) for name in arrays} == {
        "z1": None, "z2": None, "z3": "(*, 1)", "z4": None, "z7": None, "w1": None
    }
    assert [_code(values[name].node) for name in ("z1", "z7")] == ["z[:, :-1]", "z[:, :k]"]
    sources = {name: values[name].tag(SequenceOriginTag).source for name in ("z1", "z2", "w1")}
    assert sources["z1"] is sources["z2"] and sources["w1"] is not sources["z1"]
    shapes = {name: _shape(values[name]) for name in ("e1", "e2", "e3", "e4", "e5", "s1")}
    assert shapes == {"e1": "(1, b, t, d)", "e2": "(b, t)", "e3": "(b, 1, t, d)", "e4": None, "e5": None, "s1": "(1)"}


MORE_INDEXED = """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(12, 36)
        self.heads = nn.ModuleDict({"a": nn.Linear(12, 4), "b": nn.Linear(12, 5)})
        self.register_buffer("mask", torch.tril(torch.ones(16, 16)).view(1, 1, 16, 16))
        self.pos = nn.Parameter(torch.zeros(1, 32, 12))
        self.table = nn.Parameter(torch.zeros(32, 12))
        self.fused = nn.Parameter(torch.zeros(36, 12))
        self.one = nn.Parameter(torch.zeros(1, 12))
        self.pos_emb = nn.Embedding(32, 12)

    def forward(self, x: Float[Tensor, "b t 12"], p: Float[Tensor, "*batch 12"], k: int):
        B, T, C = x.size()
        a1 = x.shape[:0]
        a2 = x.shape[:-3]
        a3 = x.shape[k]
        a4 = p.shape[:-1]
        a5 = p.shape[1:]
        t1 = (x, x[0], x[0, 0])
        t2 = t1[-3]
        t3 = t1[0, 1]
        parts = self.qkv(x).split(12, dim=2)
        p1 = parts[-3]
        p2 = parts[2]
        p3 = parts[3]
        pieces = self.qkv(x).split(k, dim=2)
        q0 = pieces[0]
        q1 = pieces[1]
        q2 = pieces[-1]
        rest = pieces[1:]
        r0 = rest[0]
        rr = rest[1:]
        l1 = self.heads[k]
        l2 = self.heads["c"](x)
        d1 = {"ctx": x}["other"] + 1
        m1 = self.mask[:, :]
        m2 = self.mask[:, :, 0:]
        m3 = self.mask[:, :, 1:]
        m4 = self.mask[:, :, :T]
        fused = self.qkv(x).view(B, T, 3, 12).permute(2, 0, 1, 3)
        f0 = fused[0]
        fk = fused[k]
        w1 = self.fused[:12]
        w2 = self.fused[12:24]
        w3 = self.fused[:, :6]
        w4 = self.fused[0]
        e1 = self.pos[:, :T]
        e2 = self.table[:T]
        e3 = self.pos[:, :T, :6]
        e4 = self.pos[0, :T]
        e5 = self.table[:]
        e6 = self.one[:1]
        pt = self.pos_emb(torch.arange(32))
        c1 = pt[:T]
        c2 = pt[0:]
        return x


m = M()
"""


def test_indexing_sizes_pieces_containers_rows_and_position_tables() -> None:
    """Sizes and tuples indexed at their ends, pieces of a split into an unknown number of pieces,
    containers asked for a missing key (unknown, usable), which slices cut a triangle, the rows of a
    fused weight, and the rows of a learned position table cut to the sequence."""
    facts = analyze_src(HEADER + textwrap.dedent(MORE_INDEXED))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    # torch.Size slices: x.shape[:0] and x.shape[:-3] are both torch.Size([])
    assert values["a1"].items == () and _shape(values["a2"]) == "()" and values["a2"].dropped == 3
    assert values["a3"].dim is not None and str(values["a3"].dim) not in ("b", "t", "12")
    assert _shape(values["a4"]) == "(*)" and not hasattr(values["a5"], "items")
    assert _shape(values["t2"]) == "(b, t, 12)" and not hasattr(values["t3"], "shape")
    assert [_shape(values[name]) for name in ("p1", "p2")] == ["(b, t, 12)", "(b, t, 12)"]
    assert [values[name].tag(ProjectionTag).part[-1:] for name in ("p1", "p2")] == [(0,), (2,)]
    # split(k): how many pieces is unknown; the first ones are pieces 0 and 1, the last is any piece
    assert [values[name].tag(ProjectionTag).part[-1:] for name in ("q0", "q1", "r0")] == [(0,), (1,), ()]
    assert values["q2"].tag(ProjectionTag).part == values["q0"].tag(ProjectionTag).part[:-1]
    assert _shape(values["r0"]) == _shape(values["q0"]) and _shape(values["rr"].element) == _shape(values["q0"])
    assert [_shape(values[name]) for name in ("l1", "l2", "d1")] == [None, None, None]
    sliced = {name: values[name].tag(TriangleTag).sliced for name in ("m1", "m2", "m3", "m4")}
    assert sliced == {"m1": False, "m2": False, "m3": True, "m4": True}
    parts = [values[name].tag(ProjectionTag).part for name in ("f0", "fk")]
    assert parts[0][-1:] == (0,) and parts[1][-1:] == (-1,)
    rows = {name: values[name].tag(ParameterTag).rows for name in ("w1", "w2", "w3", "w4")}
    assert rows == {"w1": ":12", "w2": "12:24", "w3": None, "w4": None}
    tables = {name: values[name].tag(PositionTag) for name in ("e1", "e2", "e3", "e4", "e5")}
    assert {name: (tag.kind, str(tag.full_length), tag.sliced) for name, tag in tables.items() if tag is not None} == {
        "e1": ("learned", "32", True), "e2": ("learned", "32", True)
    }
    assert [_code(tables[name].node) for name in ("e1", "e2")] == ["self.pos[:, :T]", "self.table[:T]"]
    assert values["e6"].tag(PositionTag) is None  # one row: not a table of positions
    assert all(tag is not None for value in values.values() for tag in getattr(value, "tags", ()))
    # a table of positions cut to the sequence is a sliced table; ``[0:]`` keeps every row
    cut = {name: (values[name].tag(PositionTag).kind, values[name].tag(PositionTag).sliced) for name in ("pt", "c1", "c2")}
    assert cut == {"pt": ("table", False), "c1": ("table", True), "c2": ("table", False)}


def test_slice_lengths_from_the_end_by_zero_and_by_names() -> None:
    """Slice lengths torch gives (r's last axis is 12, T is x's time axis); None where torch raises
    (step 0); an unnamed size (``_``) where the engine cannot tell the length (a step after a
    start on an axis of unknown rank, a start it cannot read, a step it cannot read). Every part of
    a subscript of a string or a dict is evaluated: a walrus there binds."""
    values, facts = _analysed(
        """
        c1 = r[..., -12:]
        c2 = x[:, :-T]
        c3 = x[:, :0]
        c4 = x[:, ::0]
        c5 = r[..., n:5]
        c6 = x[:, ::T]
        v1 = p[..., 1::2]
        a1 = x.shape[T:]
        word = "abc"
        head = word[(j := T):]
        c7 = x[:, :j]
        cells = {(0, 0): 1}
        got = cells[(j2 := T), 0]
        c8 = x[:, :j2]
        got2 = cells[0:, (j3 := T)]
        c9 = x[:, :j3]
        """
    )
    assert facts.internal_errors == []
    shapes = {name: _shape(values[name]) for name in ("c1", "c2", "c3", "c4", "c5", "c6", "v1", "c7", "c8", "c9")}
    assert shapes == {
        "c1": "(b, t, 12)", "c2": "(b, 0, d)", "c3": "(b, 0, d)", "c4": None, "c5": "(b, t, _)",
        "c6": "(b, _, d)", "v1": "(*, d//2)", "c7": "(b, t, d)", "c8": "(b, t, d)", "c9": "(b, t, d)",
    }
    assert not hasattr(values["a1"], "items")


# --- arithmetic: operators on tensors (ops/arithmetic.py) ------------------------------------------


def _factor(scale) -> object:
    """A scale factor as (coefficient, ((symbol, exponent), ...)), or the bare coefficient."""
    if scale is None:
        return None
    return scale.coef if not scale.factors else (scale.coef, tuple((str(d), e) for d, e in scale.factors))


def _operator_facts(value) -> tuple:
    """The shape, dtype and tags of an operator's result, each tag by what it records."""
    tags = []
    for tag in value.tags:
        if isinstance(tag, ScaleTag):
            tags.append(("scale", _factor(tag.factor), _code(tag.node), _code(tag.origin), _factor(tag.written)))
        elif isinstance(tag, PositionTag):
            tags.append(("position", tag.kind, _code(tag.node), None if tag.full_length is None else str(tag.full_length), tag.sliced))
        elif isinstance(tag, MaskedTag):
            tags.append(("masked", _code(tag.node), _factor(tag.fill), tag.blocked_when, tag.causal))
        elif isinstance(tag, TriangleTag):
            tags.append(("triangle", tag.lower, tag.diagonal, tag.negated, tag.additive))
        elif isinstance(tag, PaddingTag):
            tags.append(("padding", _code(tag.node)))
        elif isinstance(tag, LayerOutputTag):
            tags.append(("layer", tag.label))
        elif isinstance(tag, (TokenEmbeddingTag, ScoresTag, ProbsTag, LeadingOfUnknownRank)):
            tags.append(type(tag).__name__)
    return (_shape(value), value.dtype, *sorted(tags, key=str))


OPERATORS = """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(100, 12)
        self.pos = nn.Parameter(torch.zeros(1, 32, 12))
        self.table = nn.Parameter(torch.zeros(32, 12))
        self.row = nn.Parameter(torch.zeros(1, 12))
        self.pos_emb = nn.Embedding(32, 12)
        self.fc = nn.Linear(12, 8)
        self.gate = nn.Linear(12, 8)
        self.temp = nn.Parameter(torch.ones(1))

    def forward(self, ids: Int[Tensor, "b t"], q: Float[Tensor, "b h t 8"], k: Float[Tensor, "b h t 8"],
                qc: Float[Tensor, "b h 4 8"], x: Float[Tensor, "b t 12"], big: Float[Tensor, "b t 48"],
                patches: Float[Tensor, "b t 5 12"], x5: Float[Tensor, "b 5 12"], hs: Float[Tensor, "*n 48"],
                wide: Float[Tensor, "*n"], vd: Float[Tensor, "*n 12"], x8: Float[Tensor, "b t 8"], u):
        e = self.tok(ids)
        s = q @ k.transpose(-2, -1)
        sc = qc @ qc.transpose(-2, -1)
        pr = s.softmax(-1)
        tri = torch.tril(torch.ones(4, 4))
        neg = torch.full((4, 4), float("-inf"))
        zd = torch.tensor(2.0)
        ut = torch.tensor(u)
        pe1 = e + self.pos[:, :ids.shape[1]]
        pe2 = e + self.pos_emb(torch.arange(ids.shape[1]))
        pe3 = e + self.row
        pe4 = self.pos + e
        pe5 = e + self.table
        pe6 = e - self.pos
        pe7 = pe1 + u
        pe8 = pe1 * u
        tb1 = e[:, :, None] + patches
        tb2 = patches + e[:, :, None]
        tb3 = e[:, :, None] + e[:, :, None]
        tb4 = patches - e[:, :, None]
        tb5 = e[:, :, None] + e[:, :, None].expand(-1, -1, 5, -1)
        tb6 = self.tok(ut) + x
        tb7 = e[:, :, None] + torch.ones(2, 12)
        tb8 = e + ut
        sw = self.fc(x) * torch.sigmoid(self.gate(x))
        sw2 = x8 * self.fc(x)
        sc1 = q * 0.125
        sc2 = q / 8
        sc3 = 0.5 * q
        sc4 = q * self.scale
        sc5 = (q * 0.5) * 0.5
        sc6 = (q * self.scale) * 0.5
        sc7 = q / zd
        sc8 = zd * q
        sc9 = q / math.sqrt(8)
        sc10 = q / u
        sc11 = u * q
        sc12 = x * u
        sc13 = ids * 0.5
        sc14 = x / ut
        sc15 = x / wide
        sc16 = x / vd
        sc17 = sc1 + sc1
        sc18 = sc1 + q
        sc19 = sc1 - sc3
        sc20 = 2 * (q * self.scale)
        sc21 = sc1 * q
        sc22 = sc6 * 0.5
        sc23 = sc3 * self.scale
        sc24 = sc1 / ut
        sc25 = sc1 * torch.exp(self.temp)
        sc26 = sc1 / self.temp
        sc27 = 2 ** sc1
        sc28 = sc1 ** q
        sc29 = q * sc1
        m1 = s + tri
        m2 = s * tri
        m3 = tri + s
        m4 = s - u
        m5 = tri * s
        m6 = s + pr
        qn = ut.view(2, 2, 4, 8)
        sn = qn @ qn.transpose(-2, -1)
        m7 = sn + tri
        m8 = sn * tri
        k1 = pe1 > 0
        k2 = 0 < pe1
        m9 = s + ut
        s3 = x @ x.transpose(-2, -1)
        m10 = s3 * ut
        m11 = s - ut
        r10 = sc - torch.ones(5, 5)
        r11 = torch.ones(5, 5) + sc
        p8 = pr - u
        p9 = pr + 1
        p10 = pr / ut
        ad4 = tri - neg
        p1 = pr * tri
        p2 = pr + u
        p3 = pr / pr.sum(-1, keepdim=True)
        p4 = pr - tri
        p5 = tri * pr
        p6 = pr + tri
        ad1 = tri * neg
        ad2 = neg * tri
        ad3 = tri + neg
        r1 = x + u
        r2 = u + x
        r3 = x - u
        r4 = q * ut
        r5 = x + big
        r6 = sc + torch.ones(5, 5)
        r7 = self.pos + torch.ones(2, 7, 12)
        r8 = x5 + self.pos_emb(torch.arange(7))
        r9 = sc * torch.ones(5, 5)
        lh = hs.view(*hs.shape[:-1], -1, 8)
        l1 = lh + torch.ones(8)
        l2 = torch.ones(6, 8) * lh
        l3 = lh + torch.ones(3, 1, 1)
        return x


m = M()
"""


def test_operators_on_tensors_record_positions_scales_masks_and_conflicts() -> None:
    """``+ - * /`` between tensors and with numbers or unseen values (``ops/arithmetic.py``): a
    positional table or embedding added to token embeddings (learned, looked up, sliced, a one-row
    bias is none, an embedding broadcast over patches is no longer the tokens), a gated product keeps
    its layer's width, a tensor times or over a number is scaled (the factor, where it is written,
    two applications, an unreadable factor, a 0-dim tensor, ``x / t`` by a tensor of unknown shape
    is "maybe scaled"), sums keep a shared scale, scores and probabilities met by a mask or bias on
    either side (additive, multiplicative, causal or not), a triangle times a fill is additive, the
    broadcast conflicts by kind (``broadcast``, ``mask-broadcast``, ``positional-broadcast``) and a
    head split of unknown leading rank kept through a same-shape operand. Shapes are torch 2.13's
    (``t`` = 4 where the scores meet the 4 x 4 triangle; ``x + big`` and the 5 x 5 and 7-row operands
    raise in torch)."""
    facts = analyze_src(HEADER + textwrap.dedent(OPERATORS))
    assert facts.internal_errors == []
    run = run_of(facts, "M.forward")
    values = {a.name: a.value for a in run.assignments}
    written = dict(line.strip().split(" = ", 1) for line in OPERATORS.splitlines() if " = " in line and "self." not in line[:14])
    names = [name for name in written if name[:2] in ("pe", "tb", "sw", "sc", "p1", "p2", "p3", "p4", "p5", "p6", "ad", "r1",
                                                      "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "l1", "l2", "l3")
             or name in ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11", "k1", "k2", "p7", "p8", "p9")]
    names = [name for name in names if name not in ("sc",)]
    for name in names:
        if values[name].shape is not None:
            assert _code(values[name].node) == written[name], name  # made at its own operator
    u_times, u_over = (1.0, (("u", 1),)), (1.0, (("u", -1),))
    added = lambda length, sliced: ("position", "added", None, length, sliced)
    found = {name: _operator_facts(values[name]) for name in names}
    for name, facts_of in found.items():  # the node of an "added" position tag is its own operator
        for tag in facts_of[2:]:
            if isinstance(tag, tuple) and tag[:2] == ("position", "added"):
                assert tag[2] == written[name] or name in ("pe7", "pe8", "k1", "k2"), name
    found = {
        name: tuple(tag[:2] + (None,) + tag[3:] if isinstance(tag, tuple) and tag[:2] == ("position", "added") else tag for tag in f)
        for name, f in found.items()
    }
    scale = lambda factor, node, origin=None, readable=None: ("scale", factor, node, origin, readable)
    maybe = lambda node: ("position", "unknown", node, None, False)
    expected = {
        "pe1": ("(b, t, 12)", "float", added("32", True), "TokenEmbeddingTag"),
        "pe2": ("(b, t, 12)", "float", added("t", False), "TokenEmbeddingTag"),
        "pe3": ("(b, t, 12)", "float", "TokenEmbeddingTag"),  # one row: a bias, not a table
        "pe4": ("(b, 32, 12)", "float", added("32", False), "TokenEmbeddingTag"),
        "pe5": ("(b, 32, 12)", "float", added("32", False), "TokenEmbeddingTag"),
        "pe6": ("(b, 32, 12)", "float", "TokenEmbeddingTag"),  # subtracted: no positions added
        "pe7": ("(*, b, t, 12)", "float", added("32", True), "TokenEmbeddingTag"),  # already positional
        "pe8": ("(*, b, t, 12)", "float", added("32", True), scale(u_times, "pe1 * u"), "TokenEmbeddingTag"),
        "tb1": ("(b, t, 5, 12)", "float"),  # one embedding per row of patches: a bias
        "tb2": ("(b, t, 5, 12)", "float"),
        "tb3": ("(b, t, 1, 12)", "float", "TokenEmbeddingTag"),
        "tb4": ("(b, t, 5, 12)", "float"),
        "tb5": ("(b, t, 5, 12)", "float", "TokenEmbeddingTag"),  # tokens on both sides: still tokens
        "tb6": ("(*, b, t, 12)", "float", "TokenEmbeddingTag"),  # an embedding of unknown shape
        "tb7": ("(b, t, 2, 12)", "float"),
        "tb8": ("(*, b, t, 12)", "float", "TokenEmbeddingTag"),  # plus a tensor of unknown shape
        "sw": ("(b, t, 8)", "float", ("layer", "self.fc")),
        "sw2": ("(b, t, 8)", "float", ("layer", "self.fc")),
        "sc1": ("(b, h, t, 8)", "float", scale(0.125, "q * 0.125", "0.125")),
        "sc2": ("(b, h, t, 8)", "float", scale(0.125, "q / 8")),
        "sc3": ("(b, h, t, 8)", "float", scale(0.5, "0.5 * q", "0.5")),
        "sc4": ("(b, h, t, 8)", "float", maybe("q * self.scale"), scale(None, "q * self.scale")),
        "sc5": ("(b, h, t, 8)", "float", scale(0.25, "(q * 0.5) * 0.5")),  # two applications: no one place
        "sc6": ("(b, h, t, 8)", "float", maybe("(q * self.scale)"), scale(None, "(q * self.scale) * 0.5", "0.5", 0.5)),
        "sc7": ("(b, h, t, 8)", "float", scale(None, "q / zd")),
        "sc8": ("(b, h, t, 8)", "float", scale(None, "zd * q")),
        "sc9": ("(b, h, t, 8)", "float", scale(1 / math.sqrt(8), "q / math.sqrt(8)", "math.sqrt(8)")),
        "sc10": ("(*, b, h, t, 8)", "float", maybe("q / u"), scale(u_over, "q / u")),
        "sc11": ("(b, h, t, 8)", "float", maybe("u * q"), scale(u_times, "u * q")),  # a 4-D tensor's gain keeps its rank
        "sc12": ("(*, b, t, 12)", "float", maybe("x * u"), scale(u_times, "x * u")),
        "sc13": ("(b, t)", "float", scale(0.5, "ids * 0.5", "0.5")),
        "sc14": ("(*, b, t, 12)", "float", scale(None, "x / ut")),  # maybe a scale
        "sc15": ("(*, b, t, 12)", "float", scale(None, "x / wide")),
        "sc16": ("(*, b, t, 12)", "float"),  # a divisor with a known last dim is a tensor
        "sc17": ("(b, h, t, 8)", "float", scale(0.125, "q * 0.125", "0.125")),
        "sc18": ("(b, h, t, 8)", "float", scale(None, "q * 0.125")),
        "sc19": ("(b, h, t, 8)", "float", scale(None, "q * 0.125")),
        "sc20": ("(b, h, t, 8)", "float", maybe("(q * self.scale)"), scale(None, "2 * (q * self.scale)", None, 2.0)),
        "sc21": ("(b, h, t, 8)", "float", scale(None, "sc1 * q")),  # scaled, then times a tensor: maybe scaled
        "sc22": ("(b, h, t, 8)", "float", maybe("(q * self.scale)"), scale(None, "sc6 * 0.5", None, 0.25)),
        "sc23": ("(b, h, t, 8)", "float", maybe("sc3 * self.scale"), scale(None, "sc3 * self.scale", None, 0.5)),
        "sc24": ("(*, b, h, t, 8)", "float", scale(None, "sc1 / ut")),
        "sc25": ("(b, h, t, 8)", "float", scale(None, "sc1 * torch.exp(self.temp)")),  # a learned temperature
        "sc26": ("(b, h, t, 8)", "float", scale(None, "sc1 / self.temp")),
        "sc27": ("(b, h, t, 8)", "float"),  # a power is no scaling
        "sc29": ("(b, h, t, 8)", "float", scale(None, "q * sc1")),
        "sc28": ("(b, h, t, 8)", "float"),
        "m1": ("(b, h, 4, 4)", "float", "ScoresTag", ("masked", "s + tri", None, None, True)),
        "m2": ("(b, h, 4, 4)", "float", "ScoresTag", ("masked", "s * tri", 0.0, False, True)),
        "m3": ("(b, h, 4, 4)", "float", "ScoresTag", ("masked", "tri + s", None, None, True)),
        "m4": ("(b, h, t, t)", "float", "ScoresTag", ("masked", "s - u", None, None, False), maybe("s - u")),  # an unseen value fits the scores, as m9
        "m5": ("(b, h, 4, 4)", "float", "ScoresTag", ("masked", "tri * s", 0.0, False, True)),
        "m6": ("(b, h, t, t)", "float", "ScoresTag", ("masked", "s + pr", None, None, False)),
        "m7": ("(2, 2, 4, 4)", "float", "ScoresTag", ("masked", "sn + tri", None, None, True)),  # scores of unknown dtype
        "m8": ("(2, 2, 4, 4)", "float", "ScoresTag", ("masked", "sn * tri", 0.0, False, True)),
        "m9": ("(b, h, t, t)", "float", "ScoresTag", ("masked", "s + ut", None, None, False)),  # presumed to fit the scores
        "m10": ("(b, t, t)", "float", "ScoresTag", ("masked", "s3 * ut", 0.0, False, False)),
        "m11": ("(b, h, t, t)", "float", "ScoresTag", ("masked", "s - ut", None, None, False)),
        "r10": (None, "float", "ScoresTag", ("masked", "sc - torch.ones(5, 5)", None, None, False)),
        "r11": (None, "float", "ScoresTag", ("masked", "torch.ones(5, 5) + sc", None, None, False)),
        "p8": ("(b, h, t, t)", "float", "ProbsTag", ("masked", "pr - u", None, False, False)),  # weights keep their rank (rcatt)
        "p9": ("(b, h, t, t)", "float"),  # plus a number: no longer probabilities
        "p10": ("(*, b, h, t, t)", "float", "ProbsTag"),
        "ad4": ("(4, 4)", "float", ("triangle", True, 0, False, False)),
        "k1": ("(b, t, 12)", "bool", added("32", True), "TokenEmbeddingTag"),  # computed from the tokens
        "k2": ("(b, t, 12)", "bool", added("32", True), "TokenEmbeddingTag"),
        "p1": ("(b, h, 4, 4)", "float", "ProbsTag", ("masked", "pr * tri", 0.0, False, True)),
        "p2": ("(b, h, t, t)", "float", "ProbsTag", ("masked", "pr + u", None, False, False)),  # weights keep their rank (rcatt)
        "p3": ("(b, h, t, t)", "float", "ProbsTag"),  # renormalised: still the weights
        "p4": ("(b, h, 4, 4)", "float", "ProbsTag", ("masked", "pr - tri", None, False, True)),
        "p5": ("(b, h, 4, 4)", "float", "ProbsTag", ("masked", "tri * pr", 0.0, False, True)),
        "p6": ("(b, h, 4, 4)", "float", "ProbsTag", ("masked", "pr + tri", None, False, True)),
        "ad1": ("(4, 4)", "float", ("triangle", True, 0, False, True)),
        "ad2": ("(4, 4)", "float", ("triangle", True, 0, False, True)),
        "ad3": ("(4, 4)", "float", ("triangle", True, 0, False, False)),
        "r1": ("(*, b, t, 12)", "float", maybe("x + u")),
        "r2": ("(*, b, t, 12)", "float", maybe("u + x")),
        "r3": ("(*, b, t, 12)", "float", maybe("x - u")),
        "r4": ("(b, h, t, 8)", "float", ("position", "unknown", "q * ut", None, False)),  # a tensor of unknown shape: no scale of a number
        "r5": (None, "float"),
        "r6": (None, "float", "ScoresTag", ("masked", "sc + torch.ones(5, 5)", None, None, False)),
        "r7": (None, "float"),
        "r8": (None, "float", ("position", "table", "self.pos_emb(torch.arange(7))", "7", False)),
        "r9": (None, "float", "ScoresTag", ("masked", "sc * torch.ones(5, 5)", 0.0, False, False)),
        "l1": ("(*, 6, 8)", "float", "LeadingOfUnknownRank"),
        "l2": ("(*, 6, 8)", "float", "LeadingOfUnknownRank"),
        "l3": ("(*, 3, 6, 8)", "float"),  # another shape: the leading dims are not the head split's
    }
    assert found == {name: (f[0], f[1], *sorted(f[2:], key=str)) for name, f in expected.items()}  # tags in any order
    assert values["m6"].has(NormalisedTag)  # scores plus probabilities: computed from a softmax
    masks = {name: values[name].tag(MaskedTag).mask for name in ("m1", "m2", "m3", "m5", "p1", "p4", "p5", "p6")}
    assert all(mask is values["tri"] for mask in masks.values())
    unseen_mask = values["p2"].tag(MaskedTag).mask  # the unseen operand: a mask or bias of unknown shape
    assert (unseen_mask.shape, unseen_mask.dtype, unseen_mask.tags, _code(unseen_mask.node)) == (None, None, (), "pr + u")
    assert not any(None in value.tags for value in values.values() if isinstance(value, TensorValue))
    assert [(c.kind, c.op, _code(c.node), c.detail) for c in facts.conflicts if c.run is run] == [
        ("mask-broadcast", "sub", "sc - torch.ones(5, 5)", "`-` of shapes (b, h, 4, 4) and (5, 5): 4 vs 5 cannot broadcast"),
        ("mask-broadcast", "add", "torch.ones(5, 5) + sc", "`+` of shapes (5, 5) and (b, h, 4, 4): 5 vs 4 cannot broadcast"),
        ("broadcast", "add", "x + big", "`+` of shapes (b, t, 12) and (b, t, 48): 12 vs 48 cannot broadcast"),
        ("mask-broadcast", "add", "sc + torch.ones(5, 5)", "`+` of shapes (b, h, 4, 4) and (5, 5): 4 vs 5 cannot broadcast"),
        ("positional-broadcast", "add", "self.pos + torch.ones(2, 7, 12)",
         "`+` of shapes (1, 32, 12) and (2, 7, 12): 32 vs 7 cannot broadcast"),
        ("positional-broadcast", "add", "x5 + self.pos_emb(torch.arange(7))",
         "`+` of shapes (b, 5, 12) and (7, 12): 5 vs 7 cannot broadcast"),
        ("mask-broadcast", "mul", "sc * torch.ones(5, 5)", "`*` of shapes (b, h, 4, 4) and (5, 5): 4 vs 5 cannot broadcast"),
    ]


COMPARISONS = """
def f(x: Float[Tensor, "b t d"], y: Float[Tensor, "b t 4*d"], ids: Int[Tensor, "b t"], bm: Bool[Tensor, "b t"],
      bm2: Bool[Tensor, "t"], fl: Float[Tensor, "b t"], v: Float[Tensor, "*n d"], z: Float[Tensor, "*n"], u):
    tri = torch.tril(torch.ones(4, 4))
    c1 = x + y
    c2 = x * y
    c3 = x - y
    c4 = x / y
    d1 = ids + 1
    d2 = ids + 1.5
    d3 = ids / 2
    d4 = ids // 2
    d5 = ids % 3
    d6 = bm & bm2
    d7 = bm | True
    d8 = ids & ids
    d10 = bm + bm
    d11 = bm * 2
    d12 = fl + ids
    d13 = ids * bm
    d14 = bm ^ bm2
    d16 = ids ** 2
    d17 = bm + 1.0
    d18 = 2 ** ids
    k1 = ids == 0
    k2 = ids != 0
    k3 = bm2 > bm
    k4 = fl == 0
    k5 = 0 == ids
    k6 = ids > 0
    k7 = x < y
    k8 = u == ids
    t1 = tri == 0
    t2 = tri != 0
    t3 = tri > 0
    t4 = tri <= 0
    t5 = tri == 1
    t6 = tri < 0
    t7 = tri != 1
    t8 = 0 == tri
    t9 = tri >= 0
    e1 = ids.eq(0)
    e2 = torch.ne(ids, 0)
    e3 = ids.lt(other=ids)
    e4 = torch.ge(fl, fl)
    e5 = tri.eq(0)
    e6 = torch.gt(tri, 0)
    e7 = ids.le(u)
    e8 = torch.eq(x, y)
    v1 = v + x
    v2 = z + x
    v3 = v * 2
    v4 = x + 1
    v5 = x / 0.5
    d20 = ids & 1
    d21 = bm & ids
    d22 = bm & True
    d23 = bm ^ True
    c6 = y + torch.ones(4)
    ut = torch.tensor(u)
    k9 = ut == ids
    e9 = torch.eq(input=ids, other=0)
    e10 = bm2.lt(other=ids)
    assert x.shape[-1] == 4
    k10 = x == torch.ones(5)
    c5 = x + torch.ones(5)
    return x
"""


def test_operator_dtypes_comparisons_and_their_mask_tags_follow_torch() -> None:
    """Result dtypes of ``+ - * / // % ** & | ^`` on int, bool and float tensors and numbers (torch
    2.13: ``bool + bool`` and ``bool & bool`` stay bool, ``bool * 2`` and ``int ** 2`` are int64,
    ``/`` is float), comparisons (bool, broadcast; ``ids == 0`` and ``torch.ne(ids, 0)`` are padding
    masks, a float compared is not; a triangle ``== 0`` / ``<= 0`` is its negation, ``!= 0`` / ``> 0``
    / ``== 1`` the triangle itself, ``< 0`` / ``>= 0`` / ``!= 1`` no triangle at all), the comparison
    methods (``eq`` ... ``ge``, ``other=``), a residual of provably different symbolic widths (``d``
    against ``4*d``: a conflict for ``+`` and ``-`` only), operands of unknown rank."""
    facts = analyze_src(HEADER + textwrap.dedent(COMPARISONS))
    assert facts.internal_errors == []
    run = run_of(facts, "f")
    values = {a.name: a.value for a in run.assignments}
    written = dict(line.strip().split(" = ", 1) for line in COMPARISONS.splitlines() if " = " in line)
    found = {name: _operator_facts(values[name]) for name in written if name not in ("tri", "ut")}
    for name in found:
        assert _code(values[name].node) == written[name], name
    negated, same = ("triangle", True, 0, True, False), ("triangle", True, 0, False, False)
    assert found == {
        "c1": ("(b, t, 4*d)", "float"), "c2": ("(b, t, 4*d)", "float"), "c3": ("(b, t, 4*d)", "float"),
        "c4": ("(b, t, 4*d)", "float"),
        "d1": ("(b, t)", "int"), "d2": ("(b, t)", "float"), "d3": ("(b, t)", "float", ("scale", 0.5, "ids / 2", None, None)),
        "d4": ("(b, t)", "int"), "d5": ("(b, t)", "int"), "d6": ("(b, t)", "bool"), "d7": ("(b, t)", "bool"),
        "d8": ("(b, t)", "int"), "d10": ("(b, t)", "bool"), "d11": ("(b, t)", "int", ("scale", 2.0, "bm * 2", None, None)),
        "d12": ("(b, t)", "float"), "d13": ("(b, t)", "int"), "d14": ("(b, t)", "bool"), "d16": ("(b, t)", "int"),
        "d17": ("(b, t)", "float"), "d18": ("(b, t)", "int"),
        "k1": ("(b, t)", "bool", ("padding", "ids == 0")), "k2": ("(b, t)", "bool", ("padding", "ids != 0")),
        "k3": ("(b, t)", "bool"), "k4": ("(b, t)", "bool"), "k5": ("(b, t)", "bool", ("padding", "0 == ids")),
        "k6": ("(b, t)", "bool"), "k7": ("(b, t, 4*d)", "bool"), "k8": ("(b, t)", "bool"),
        "t1": ("(4, 4)", "bool", negated), "t2": ("(4, 4)", "bool", same), "t3": ("(4, 4)", "bool", same),
        "t4": ("(4, 4)", "bool", negated), "t5": ("(4, 4)", "bool", same), "t6": ("(4, 4)", "bool"),
        "t7": ("(4, 4)", "bool"), "t8": ("(4, 4)", "bool", negated), "t9": ("(4, 4)", "bool"),
        "e1": ("(b, t)", "bool", ("padding", "ids.eq(0)")), "e2": ("(b, t)", "bool", ("padding", "torch.ne(ids, 0)")),
        "e3": ("(b, t)", "bool"), "e4": ("(b, t)", "bool"), "e5": ("(4, 4)", "bool", negated),
        "e6": ("(4, 4)", "bool", same), "e7": ("(b, t)", "bool"), "e8": ("(b, t, 4*d)", "bool"),
        "v1": ("(*, b, t, d)", "float"), "v2": ("(*, b, t, d)", "float"), "v3": ("(*, d)", "float", ("scale", 2.0, "v * 2", None, None)),
        "v4": ("(b, t, d)", "float"), "v5": ("(b, t, d)", "float", ("scale", 2.0, "x / 0.5", "0.5", None)),
        "k9": (None, "bool"),  # against a tensor of unknown shape
        "e9": (None, "bool"),  # ``input=`` is not read: unknown, not a made-up shape
        "e10": ("(b, t)", "bool"),  # ``other=`` broadcasts
        "k10": (None, "bool"),  # d == 4 against 5: torch raises
        "d20": ("(b, t)", None), "d21": ("(b, t)", None),  # int64 in torch: never bool
        "d22": ("(b, t)", "bool"), "d23": ("(b, t)", "bool"),
        "c5": (None, "float"),  # d == 4 by the assert: 4 vs 5
        "c6": ("(b, t, 4)", "float"),  # 4*d against 4: fits when d is 1, not reported
    }
    assert [name for name in ("c1", "c2", "c3", "c4") if values[name].has(CauseTag)] == ["c1", "c3"]
    assert [(c.kind, c.op, _code(c.node), c.detail) for c in facts.conflicts if c.run is run] == [
        ("broadcast", "add", "x + y", "`+` of shapes (b, t, d) and (b, t, 4*d): d vs 4*d cannot broadcast"),
        ("broadcast", "sub", "x - y", "`-` of shapes (b, t, d) and (b, t, 4*d): d vs 4*d cannot broadcast"),
        ("broadcast", "add", "x + torch.ones(5)", "`+` of shapes (b, t, d) and (5): d vs 5 cannot broadcast"),
    ]


# --- ops/base.py: applying a rule, and the helpers every rule shares --------------------------------


def _failing_rule(error: BaseException):
    def helper():
        raise error

    def rule(interp, call, frame):
        helper()

    return rule


def test_an_op_rule_that_raises_is_an_internal_error_with_its_first_line_and_place(monkeypatch) -> None:
    """``apply`` catches what a rule raises: the op's result is unknown, the error is counted with
    the op's name, the call, the exception's type and first line, and the file and line that raised
    (``SHAPECHECK_DEBUG=1`` raises it instead); a RecursionError is a depth limit, not counted."""
    from shapecheck.engine.ops import base

    src = HEADER + textwrap.dedent(
        """
        def f(x: Float[Tensor, "b t d"]):
            y = torch.relu(x)
            z = x.exp()
            s = torch.sigmoid(x)
            return y
        """
    )
    monkeypatch.delenv("SHAPECHECK_DEBUG", raising=False)
    monkeypatch.setitem(base.OPS, "relu", _failing_rule(ValueError("  bad axis\nsecond line ")))
    monkeypatch.setitem(base.OPS, "exp", _failing_rule(KeyError()))
    monkeypatch.setitem(base.OPS, "sigmoid", lambda interp, call, frame: PurePosixPath("a").relative_to("b"))
    try:
        PurePosixPath("a").relative_to("b")
    except ValueError as error:  # where pathlib raises it: the last frame, in another file than the rule
        last = traceback.extract_tb(error.__traceback__)[-1]
        in_pathlib = (f"{Path(last.filename).name}:{last.lineno}", f"{type(error).__name__}: {str(error).splitlines()[0]}")
    facts = analyze_src(src)
    line = _failing_rule.__code__.co_firstlineno + 2  # the helper's line, the last frame of the traceback
    found = [(e.op, _code(e.node), e.error, e.where) for e in facts.internal_errors]
    assert found == [
        ("relu", "torch.relu(x)", "ValueError: bad axis", f"test_mutation_kills_ops.py:{line}"),
        ("exp", "x.exp()", "KeyError", f"test_mutation_kills_ops.py:{line}"),
        ("sigmoid", "torch.sigmoid(x)", in_pathlib[1], in_pathlib[0]),
    ]
    assert in_pathlib[0] != f"test_mutation_kills_ops.py:{line}"
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert [values[name] is UNKNOWN for name in ("y", "z", "s")] == [True, True, True]
    monkeypatch.setitem(base.OPS, "relu", _failing_rule(RecursionError()))
    monkeypatch.setitem(base.OPS, "exp", _failing_rule(IndexError("out of range")))
    facts = analyze_src(src)
    assert {a.name: a.value for a in run_of(facts, "f").assignments}["y"] is UNKNOWN
    assert [(e.op, e.error) for e in facts.internal_errors] == [("exp", "IndexError: out of range"), ("sigmoid", in_pathlib[1])]
    monkeypatch.setenv("SHAPECHECK_DEBUG", "1")
    try:
        analyze_src(src)
    except IndexError as error:
        assert str(error) == "out of range"
    else:
        raise AssertionError("SHAPECHECK_DEBUG=1 must raise the rule's error")


ANNOTATED = """
def f(x: Float[Tensor, "b t 4"], u: Float[Tensor, "b t d"], w):
    c = torch.cat([x, x], dim=-1)
    y: Float[Tensor, "b t 5"] = c
    z: Float[Tensor, "b t 8"] = c
    assert u.shape[-1] == 4
    v: Float[Tensor, "b t 5"] = u
    v2: Float[Tensor, "b t 4"] = u
    k: Float[Tensor, "b t 5"] = w(x)
    m: Tensor = x
    n: Float[Tensor, "b t 5"] = x
    return y
"""


def test_an_annotated_assignment_that_contradicts_its_value_is_a_conflict_and_goes_on_annotated() -> None:
    """``check_annotation``: a value whose inferred shape provably differs from its jaxtyping
    annotation (``(b, t, 8)`` or ``(b, t, 4)`` against ``"b t 5"``, or ``d`` once an assert made it 4)
    is an ``annotation`` conflict at the assignment, whose causes are the suspects the value was
    computed from (a cat); analysis goes on with the annotated shape, marked as following from the
    assignment. A value that fits, one of unknown shape, and a bare ``Tensor`` annotation change
    nothing."""
    values, conflicts = _run(ANNOTATED)
    causes = {name: sorted(_code(node) for node in values[name].tag(CauseTag).nodes) if values[name].has(CauseTag) else []
              for name in ("y", "z", "v", "v2", "k", "m", "n")}
    shapes = {name: _shape(values[name]) for name in causes}
    assert shapes == {"y": "(b, t, 5)", "z": "(b, t, 8)", "v": "(b, t, 5)", "v2": "(b, t, d)", "k": None, "m": "(b, t, 4)", "n": "(b, t, 5)"}
    cat = "torch.cat([x, x], dim=-1)"
    assert causes == {
        "y": [cat, 'y: Float[Tensor, "b t 5"] = c'], "z": [cat], "v": ['v: Float[Tensor, "b t 5"] = u'], "v2": [],
        "k": [], "m": [], "n": ['n: Float[Tensor, "b t 5"] = x'],
    }
    assert [(c.kind, c.op, _code(c.node), c.detail, sorted(_code(node) for node in c.causes)) for c in conflicts] == [
        ("annotation", "annotation", 'y: Float[Tensor, "b t 5"] = c',
         "`y` has inferred shape (b, t, 8) but is annotated (b, t, 5): dim 2 is 8, annotated 5", [cat]),
        ("annotation", "annotation", 'v: Float[Tensor, "b t 5"] = u',
         "`v` has inferred shape (b, t, d) but is annotated (b, t, 5): dim 2 is d, annotated 5", []),
        ("annotation", "annotation", 'n: Float[Tensor, "b t 5"] = x',
         "`n` has inferred shape (b, t, 4) but is annotated (b, t, 5): dim 2 is 4, annotated 5", []),
    ]


def test_ops_of_one_rank_fix_a_variadic_shape_and_element_symbols_are_items() -> None:
    """``_with_rank``: ``permute`` with three axes of a ``*b h t d`` tensor is ``(h, d, t)`` (torch,
    for the only rank it accepts, 3); with four axes of a 3-D tensor torch raises: unknown, not a
    made-up shape; ``bmm`` / ``mm`` of a tensor of unknown shape give no internal error.
    ``broadcast_with_unknown`` through ``where`` with a condition of unknown shape: at least the
    other operand's dims after an unknown prefix, a 1 among them any size (``_``), whatever the rank.
    ``element_symbol``: ``tolist()`` and a loop over one 1-D int tensor share one made-up ``item``
    symbol, not named after the assignment's target."""
    values, _ = _run(
        """
        def f(x: Float[Tensor, "b t d"], v: Float[Tensor, "*b h t d"], u, ix: Int[Tensor, "n"], a: Float[Tensor, "t d"],
              c: Float[Tensor, "b e d"], q: Float[Tensor, "b h t d"], g: Float[Tensor, "*b t d"]):
            s = ix.tolist()
            for i in ix:
                j = i
            p1 = v.permute(0, 2, 1)
            p2 = x.permute(0, 1, 2, 3)
            m1 = torch.bmm(u, c)
            m3 = torch.mm(a, a.t())
            m4 = torch.mm(g, a.t())
            cond = u(x)
            w1 = torch.where(cond, q, 0.0)
            w2 = torch.where(cond, x, 0.0)
            w3 = torch.where(cond, x.view(x.shape[0], 1, x.shape[1], x.shape[2]), 0.0)
            return x
        """
    )
    shapes = {name: _shape(values[name]) for name in ("p1", "p2", "m1", "m3", "m4", "cond", "w1", "w2", "w3")}
    assert shapes == {
        "p1": "(h, d, t)", "p2": None, "m1": "(*, _, d)", "m3": "(t, t)", "m4": "(t, t)", "cond": None,
        "w1": "(*, b, h, t, d)", "w2": "(*, b, t, d)", "w3": "(*, b, _, t, d)",
    }
    item = values["s"].element.dim
    assert values["j"].dim == item and re.fullmatch(r"item\d+", item.name)


LOOPS = """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        lin = nn.Linear(4, 4)
        self.one = nn.ModuleList([nn.Linear(4, 8)])
        self.two = nn.ModuleList([nn.Linear(4, 8), nn.Linear(4, 8)])
        self.same = nn.ModuleList([lin, lin])
        self.chain = nn.ModuleList([nn.Linear(4, 8), nn.Linear(8, 2)])
        self.rep = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.d = nn.ModuleDict({"a": nn.Linear(4, 8)})

    def forward(self, x: Float[Tensor, "b t 4"], y: Float[Tensor, "b t 3"], m: Float[Tensor, "b s 4"], keep):
        for layer in self.one:
            o1 = layer(x)
            break
        for layer in self.two:
            o2 = layer(x)
            break
        for layer in self.same:
            o3 = layer(x)
            break
        h = x
        for layer in self.chain:
            h = layer(h)
        c1 = h
        for k in self.d:
            kk = k
        for a in (x, x):
            t1 = a
            break
        for a in (x, y):
            t2 = a
            break
        for a, b in zip((x, y), (m, m)):
            z1 = a
            z2 = b
            break
        for i, a in enumerate((x, x)):
            e1 = a
            break
        r1 = [layer(x) for layer in self.rep if keep(layer)]
        r2 = [layer(x) for layer in self.two if keep(layer)]
        r3 = [layer(x) for layer in self.one if keep(layer)]
        return x
"""


def test_loop_elements_of_layer_lists_tuples_and_zips_are_what_every_item_agrees_on() -> None:
    """``known_items`` and ``iteration_element``: a loop of distinct layers without a jump runs each
    one (``(b, t, 4)`` through ``Linear(4, 8)`` then ``Linear(8, 2)``: ``(b, t, 2)``); with a
    ``break`` (not unrolled) or in a comprehension whose filter cannot be decided the element is the one layer of a
    one-item list, the same instance listed twice, the template of a repeated list, and unknown for
    two distinct layers; a ``ModuleDict`` gives its keys (unknown); a tuple's element is its item
    when every item is that one value, unknown otherwise; ``zip`` / ``enumerate`` of tuples give
    the column every row agrees on."""
    facts = analyze_src(HEADER + textwrap.dedent(LOOPS))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    found = {name: _shape(values[name]) if isinstance(values[name], TensorValue) else type(values[name]).__name__
             for name in ("o1", "o2", "o3", "c1", "kk", "t1", "t2", "z1", "z2", "e1")}
    assert found == {
        "o1": "(b, t, 8)", "o2": None, "o3": "(b, t, 4)", "c1": "(b, t, 2)", "kk": "_Unknown",
        "t1": "(b, t, 4)", "t2": "_Unknown", "z1": "_Unknown", "z2": "(b, s, 4)", "e1": "(b, t, 4)",
    }
    assert values["o2"].has(PositionTag) and values["o2"].has(ScaleTag)  # an unknown callee's result
    assert not values["o1"].has(PositionTag) and not values["o3"].has(PositionTag)
    elements = {name: values[name].element for name in ("r1", "r2", "r3")}
    assert [_shape(elements[name]) for name in ("r1", "r2", "r3")] == ["(b, t, 4)", None, "(b, t, 8)"]
    assert elements["r2"].has(PositionTag) and not elements["r1"].has(PositionTag)


def test_negations_keep_dtype_lineage_and_padding_and_sizes_read_at_run_time_are_recorded() -> None:
    """``_negate``: ``~`` of an int tensor stays int (torch's bitwise not), of a bool one or of a
    tensor of unknown dtype is bool; the result keeps the lineage (a cat's cause) and a padding mask
    negated is still a padding mask (``~(ids == 0)``, ``logical_not``). ``read_size``: sizes read from a
    tensor whose shape is unknown are made-up ``size`` symbols (the first one of a statement named
    after its target), recorded among the sizes read at run time."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        def f(x: Float[Tensor, "b t d"], ids: Int[Tensor, "b t"], bm: Bool[Tensor, "b t"], w):
            n1 = ~ids
            n2 = ~bm
            n3 = ~w(x)
            n4 = ~(ids == 0)
            n5 = torch.logical_not(ids == 0)
            n6 = ~torch.cat([bm, bm], dim=-1)
            n7 = -torch.cat([x, x], dim=-1)
            s1 = w.shape[0] + w.shape[1]
            return x
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    found = {name: (_shape(values[name]), values[name].dtype, values[name].has(PaddingTag), values[name].has(CauseTag))
             for name in ("n1", "n2", "n3", "n4", "n5", "n6", "n7")}
    assert found == {
        "n1": ("(b, t)", "int", False, False), "n2": ("(b, t)", "bool", False, False), "n3": (None, "bool", False, False),
        "n4": ("(b, t)", "bool", True, False), "n5": ("(b, t)", "bool", True, False),
        "n6": ("(b, 2*t)", "bool", False, True), "n7": ("(b, t, 2*d)", "float", False, True),
    }
    assert [_code(node) for node in values["n6"].tag(CauseTag).nodes] == ["torch.cat([bm, bm], dim=-1)"]
    assert values["n3"].has(PositionTag)  # the unknown callee's "maybe positional", kept through ~
    total = str(values["s1"].dim)
    assert re.fullmatch(r"s1\+size\d+", total)
    assert {str(d) for d in facts.read_sizes} == set(total.split("+"))


def test_an_attention_output_continues_its_query_stream_not_its_keys() -> None:
    """``attention_query``: probabilities times values (by ``@`` or ``einsum``) continue the stream of
    the scores' query (``x1``: the sites of its own attention, then this one), not of the keys the
    probabilities were also computed from (``m1``); a softmax of what an unknown callee returned is no
    attention: its product keeps the lineage of both streams and adds no site."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        def f(x: Float[Tensor, "b t 8"], m: Float[Tensor, "b s 8"], w):
            p0 = torch.softmax(m @ m.transpose(-2, -1) / 8, dim=-1)
            m1 = p0 @ m
            p1 = torch.softmax(x @ x.transpose(-2, -1) / 8, dim=-1)
            x1 = p1 @ x
            p2 = torch.softmax(x1 @ m1.transpose(-2, -1) / 8, dim=-1)
            o1 = p2 @ m1
            o2 = torch.einsum("bts,bsd->btd", p2, m1)
            p3 = torch.softmax(w(x1, m1), dim=-1)
            o3 = p3 @ m1
            return o1
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    streams = {name: sorted(_code(site).split(" @ ")[0] for site in values[name].tag(StreamTag).sites)
               for name in ("m1", "x1", "o1", "o2", "o3")}
    own_m, own_x, cross = "torch.softmax(m", "torch.softmax(x", "torch.softmax(x1"
    assert streams == {
        "m1": [own_m], "x1": [own_x], "o1": [own_x, cross], "o2": [own_x, cross], "o3": [own_m, own_x],
    }
    assert [_shape(values[name]) for name in ("p2", "o1", "o2", "o3")] == ["(b, t, s)", "(b, t, 8)", "(b, t, 8)", "(*, _, 8)"]


def test_tuples_of_up_to_sixteen_items_are_known_and_rows_must_agree_in_length() -> None:
    """``known_items``: a tuple of one item is known (``list((x,))`` is that one-item list, ``zip``
    of one-item tuples one row), so is one of 16 items (a comprehension over it is 16 results), one
    of 17 is not (one repeated result). ``iteration_element``: a loop with a ``break`` over a
    one-item tuple gives its item; rows of different lengths, or a row and a tensor, have no
    common element."""
    many = lambda n: "(" + ", ".join(["x"] * n) + ")"  # noqa: E731
    values, _ = _run(
        f"""
        def f(x: Float[Tensor, "b t 4"], m: Float[Tensor, "b s 4"]):
            l1 = list((x,))
            z1 = zip((x,), (m,))
            c16 = [a for a in {many(16)}]
            c17 = [a for a in {many(17)}]
            for a in (x,):
                t1 = a
                break
            for row in ((x, m), (x,)):
                r1 = row
                break
            for row in ((x, m), x):
                r2 = row
                break
            return x
        """
    )
    assert [_shape(item) for item in values["l1"].items] == ["(b, t, 4)"]
    assert [[_shape(v) for v in row.items] for row in values["z1"].items] == [["(b, t, 4)", "(b, s, 4)"]]
    assert [_shape(item) for item in values["c16"].items] == ["(b, t, 4)"] * 16
    assert type(values["c17"]).__name__ == "Repeated" and _shape(values["c17"].element) == "(b, t, 4)"
    assert _shape(values["t1"]) == "(b, t, 4)"
    assert [type(values[name]).__name__ for name in ("r1", "r2")] == ["_Unknown", "_Unknown"]


SCALED_SCORES = """
class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.qn = nn.LayerNorm(16)
        self.kn = nn.LayerNorm(16)
        self.scale = 16 ** -0.5

    def forward(self, q: Float[Tensor, "b h t 16"], k: Float[Tensor, "b h s 16"]):
        q1 = self.qn(q)
        q2 = self.qn(q) * 0.125
        k2 = k * 0.5
        k3 = self.kn(k) * 0.5
        q6 = q * self.scale
        s2 = q2 @ k.transpose(-2, -1)
        s3 = q2 @ k2.transpose(-2, -1)
        s4 = q2 @ k3.transpose(-2, -1)
        s5 = torch.einsum("bhtd,bhsd->bhts", q2, k3)
        s6 = q6 @ k.transpose(-2, -1)
        s7 = q6 @ self.kn(k).transpose(-2, -1)
        s8 = q1 @ self.kn(k).transpose(-2, -1)
        return q
"""


def test_the_scale_of_scores_combines_the_query_and_key_factors_and_where_they_were_written() -> None:
    """``combined_scale`` (``@`` and ``einsum``): the factors of query and key multiply; when one of
    them is a norm's gain the engine cannot read, the factor is unknown and ``written`` keeps the
    product of the numbers the code wrote (0.125 * 0.5); the scores' ``origin`` is the one place a
    readable factor was written (``16 ** -0.5`` even when the key carries a norm's gain), none when
    two were written or none was."""
    facts = analyze_src(HEADER + textwrap.dedent(SCALED_SCORES))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "A.forward").assignments}
    found = {name: _operator_facts(values[name])[2] for name in ("s2", "s3", "s4", "s5", "s6", "s7", "s8")}
    assert found == {
        "s2": ("scale", None, "self.qn(q) * 0.125", "0.125", 0.125),
        "s3": ("scale", None, "k * 0.5", None, 0.0625),
        "s4": ("scale", None, "self.kn(k) * 0.5", None, 0.0625),
        "s5": ("scale", None, "self.kn(k) * 0.5", None, 0.0625),
        "s6": ("scale", 0.25, "q * self.scale", "16 ** -0.5", None),
        "s7": ("scale", None, "self.kn(k)", "16 ** -0.5", 0.25),
        "s8": ("scale", None, "self.kn(k)", None, None),
    }
    assert all(values[name].has(ScoresTag) and _shape(values[name]) == "(b, h, t, s)" for name in found)


def _tag_summary(value) -> list:
    """Each tag of a tensor by its kind and what it records (nodes as code)."""
    found = []
    for tag in value.tags:
        if isinstance(tag, SequenceOriginTag):
            found.append(("sequence", str(tag.offset), str(tag.length), tag.opaque))
        elif isinstance(tag, PositionTag):
            found.append(("position", tag.kind, _code(tag.node)))
        elif isinstance(tag, ScaleTag):
            found.append(("scale", _factor(tag.factor), _code(tag.node), _code(tag.origin), _factor(tag.written)))
        elif isinstance(tag, CauseTag):
            found.append(("cause", sorted(_code(node) for node in tag.nodes)))
        else:
            found.append((type(tag).__name__,))
    return found


UNSEEN_CALLEES = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(40, 8)
        self.pos = nn.Parameter(torch.zeros(1, 16, 8))

    def forward(self, idx):
        return self.emb(idx) + self.pos


def f(helper, x: Float[Tensor, "b t d"]):
    model = Net()
    ids = torch.randint(0, 40, (4, 16))
    logits = model(ids)
    c = torch.cat([x, x], dim=-1)
    h1 = helper(logits, scale=c)
    h2 = helper(3, k=4)
    h3 = helper(z=logits)
    z1 = torch.zeros(2, 3, dtype=bool)
    z2 = torch.ones(2, dtype=int)
    z3 = torch.full((2,), 1, dtype=float)
    z4 = torch.zeros(2, 3, dtype=None)
    z5 = torch.zeros(2, 3, dtype=torch.long)
"""


def test_a_callee_the_engine_cannot_see_keeps_lineage_as_maybe_and_builtin_dtypes_are_classes() -> None:
    """``unknown_call``: tensors passed to an unseen callee, by position or keyword, give a tensor of
    unknown shape and dtype at the call, computed from them (token embedding, model output, a cat's
    cause), whose token positions may have moved (the sequence becomes opaque), whose positions are
    "maybe" (the learned table's ``added`` tag replaced by ``unknown`` at the call) and whose scale
    is unknown; no tensor passed, no tensor back. ``dtype_class``: the builtins ``bool``, ``int`` and
    ``float`` as ``dtype=`` are those classes (torch: bool, int64, float64), ``dtype=None`` the default
    float."""
    facts = analyze_src(HEADER + textwrap.dedent(UNSEEN_CALLEES))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert ("position", "added", "self.emb(idx) + self.pos") in _tag_summary(values["logits"])
    assert [(_shape(values[name]), values[name].dtype) for name in ("h1", "h3")] == [(None, None), (None, None)]
    call1, call3 = "helper(logits, scale=c)", "helper(z=logits)"
    assert [_code(values[name].node) for name in ("h1", "h3")] == [call1, call3]
    assert _tag_summary(values["h1"]) == [
        ("TokenEmbeddingTag",), ("sequence", "0", "16", True), ("ModelOutputTag",),
        ("cause", ["torch.cat([x, x], dim=-1)"]), ("position", "unknown", call1), ("scale", None, call1, None, None),
    ]
    assert _tag_summary(values["h3"]) == [
        ("TokenEmbeddingTag",), ("sequence", "0", "16", True), ("ModelOutputTag",),
        ("position", "unknown", call3), ("scale", None, call3, None, None),
    ]
    assert not isinstance(values["h2"], TensorValue)
    assert [(_shape(values[name]), values[name].dtype) for name in ("z1", "z2", "z3", "z4", "z5")] == [
        ("(2, 3)", "bool"), ("(2)", "int"), ("(2)", "float"), ("(2, 3)", "float"), ("(2, 3)", "int"),
    ]


def test_factories_invent_a_size_for_each_unreadable_one_of_several() -> None:
    """``size_args_inventing``: ``zeros(1, k, 8)`` with ``k`` unreadable is ``(1, n, 8)``, ``n`` a fresh
    made-up size (not the assignment's target), each unreadable size its own; a lone unreadable
    argument may be a whole shape and a starred one any number of sizes, a ``size=`` holding an
    unreadable one, a tensor among the sizes or sizes given twice (torch raises): unknown shapes. ``x.new_zeros`` reads its
    sizes after ``x``, given apart or as one tuple."""
    values, _ = _run(
        """
        def f(x: Float[Tensor, "b t d"], helper, rest):
            u = helper()
            v = helper()
            p = torch.zeros(1, u, 8)
            q = torch.zeros(u, v)
            r = torch.zeros(u)
            s = torch.zeros(u, v, *rest)
            t = torch.zeros(size=(2, u))
            t2 = torch.zeros(size=(2, 3))
            t3 = torch.zeros(u, v, size=(2, u))
            w = x.new_zeros(1, u, 8)
            w2 = x.new_zeros((2, 3))
            w3 = x.new_zeros(2, 3)
            w4 = torch.zeros(2, x)
            w5 = torch.zeros((2, u))
            return x
        """
    )
    shapes = {name: _shape(values[name]) for name in ("p", "q", "r", "s", "t", "t2", "t3", "w", "w2", "w3", "w4", "w5")}
    invented = [str(d) for name in ("p", "q", "w") for d in values[name].shape.dims if not d.is_const]
    assert len(invented) == len(set(invented)) == 4 and all(re.fullmatch(r"n\d+", name) for name in invented)
    first, second, third, fourth = invented
    assert shapes == {
        "p": f"(1, {first}, 8)", "q": f"({second}, {third})", "r": None, "s": None, "t": None, "t2": "(2, 3)", "t3": None,
        "w": f"(1, {fourth}, 8)", "w2": "(2, 3)", "w3": "(2, 3)", "w4": None, "w5": None,
    }
    assert [values[name].dtype for name in ("p", "w2")] == ["float", "float"]


PIECES = """
class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(4, 12)

    def forward(self, x: Float[Tensor, "b t 4"], p: Float[Tensor, "*b t 6"]):
        qkv = self.qkv(x)
        q, k, v = qkv.chunk(3, dim=-1)
        a, c = qkv.split(6, dim=-1)
        s1 = p.chunk(3, dim=-1)
        s2 = p.chunk(2, dim=0)
        s3 = p.chunk(2, dim=-3)
        s5 = p.split([2, 4], dim=-1)
        s6 = p.split([2, 4], dim=-3)
        s7 = p.split([1, 1], dim=0)
        s8 = torch.tensor_split(p, (2, 3), dim=-1)
        s9 = torch.tensor_split(p, (2, 3), dim=0)
        s10 = torch.tensor_split(p, (2, 3), dim=-3)
        u1 = p.unflatten(-1, (2, 3))
        u2 = p.unflatten(0, (2, -1))
        u3 = p.unflatten(-3, (2, -1))
        return x
"""


def test_pieces_of_a_projection_and_axes_of_a_tensor_of_unknown_rank() -> None:
    """``_piece``: each piece of a fused projection split by ``chunk`` / ``split`` is still that
    projection (same layer, same input, same call), at its own part. ``_axis_index``: on a ``*b t 6``
    tensor an axis counted from the end among the known dims is found (``dim=-1``: pieces ``(*, t, 2)``,
    torch's sizes), while ``dim=0`` or an axis before the known dims (``-3``) may be any axis: the
    pieces' shapes are unknown."""
    facts = analyze_src(HEADER + textwrap.dedent(PIECES))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "A.forward").assignments}
    projections = {}
    for name in ("qkv", "q", "k", "v", "a", "c"):
        tag = values[name].tag(ProjectionTag)
        projections[name] = (_shape(values[name]), tag.ident.label, tag.part, _code(tag.node), _shape(tag.source))
    assert projections == {
        "qkv": ("(b, t, 12)", "self.qkv", (), "self.qkv(x)", "(b, t, 4)"),
        "q": ("(b, t, 4)", "self.qkv", (0,), "self.qkv(x)", "(b, t, 4)"),
        "k": ("(b, t, 4)", "self.qkv", (1,), "self.qkv(x)", "(b, t, 4)"),
        "v": ("(b, t, 4)", "self.qkv", (2,), "self.qkv(x)", "(b, t, 4)"),
        "a": ("(b, t, 6)", "self.qkv", (0,), "self.qkv(x)", "(b, t, 4)"),
        "c": ("(b, t, 6)", "self.qkv", (1,), "self.qkv(x)", "(b, t, 4)"),
    }
    assert values["q"].tag(ProjectionTag).ident is values["qkv"].tag(ProjectionTag).ident
    pieces = {name: [_shape(piece) for piece in values[name].pieces] for name in ("s1", "s2", "s3", "s5", "s6", "s7", "s8", "s9", "s10")}
    assert pieces == {
        "s1": ["(*, t, 2)"] * 3, "s2": [None, None], "s3": [None, None], "s5": ["(*, t, 2)", "(*, t, 4)"],
        "s6": [None, None], "s7": [None, None], "s8": ["(*, t, 2)", "(*, t, 1)", "(*, t, 3)"], "s9": [None] * 3,
        "s10": [None] * 3,
    }
    assert [_shape(values[name]) for name in ("u1", "u2", "u3")] == ["(*, t, 2, 3)", None, None]


UNPACKED = """
class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(4, 12)
        self.pair = nn.ModuleList([nn.Linear(4, 8), nn.Linear(4, 2)])
        self.rep = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self.blocks = nn.ModuleList([nn.ModuleList([nn.Linear(4, 8), nn.Linear(8, 4)]) for _ in range(2)])

    def forward(self, x: Float[Tensor, "b t 4"], p: Float[Tensor, "*b t 6"], s: Float[Tensor, "3 b t 4"], helper, n: int):
        a1, a2 = (x, p)
        c1, c2 = x.split(n, dim=1)
        d1, d2, d3 = x.shape
        d4, d5, d6 = p.shape
        d11, d12 = x.shape
        j1, j2 = x.unbind(1)
        w1, w2 = torch.randn(2, 6).chunk(3, dim=-1)
        w3, w4 = torch.randn(2, 6).chunk(2, dim=-1)
        e1, e2 = helper(x)
        f1, f2, f3 = self.qkv(s)
        f4, f5 = s
        h1, h2 = self.pair
        o1 = h1(x)
        o2 = h2(x)
        h3, h4 = self.rep
        h5, h6, h7 = self.pair
        for attn, ff in self.blocks:
            i1 = attn(x)
            i2 = ff(i1)
        return x
"""


def test_unpacking_tuples_splits_sizes_tensors_and_layer_lists() -> None:
    """``unpack``: a tuple of as many items; the pieces of a split into as many (``chunk(2)`` of 6:
    two ``(2, 3)``), none for another count (Python raises); a split of unknown count: every piece
    but the last has the template's shape, the last one too only when the split is even (``unbind``);
    a size into as many names, a size of unknown rank naming what is missing; a tensor of unknown
    shape into tensors computed from it; a tensor into the slices along a constant leading axis of
    that size (each a piece of the projection); layers of a list, of a repeated list (each its own
    instance) and of a nested list in a loop."""
    facts = analyze_src(HEADER + textwrap.dedent(UNPACKED))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "A.forward").assignments}
    tensors = ("a1", "a2", "c1", "c2", "j1", "j2", "w3", "w4", "e1", "e2", "f1", "f2", "f3", "o1", "o2", "i1", "i2")
    assert {name: _shape(values[name]) for name in tensors} == {
        "a1": "(b, t, 4)", "a2": "(*, t, 6)", "c1": "(b, n, 4)", "c2": None, "j1": "(b, 4)", "j2": "(b, 4)",
        "w3": "(2, 3)", "w4": "(2, 3)", "e1": None, "e2": None, "f1": "(b, t, 12)", "f2": "(b, t, 12)",
        "f3": "(b, t, 12)", "o1": "(b, t, 8)", "o2": "(b, t, 2)", "i1": "(b, t, 8)", "i2": "(b, t, 4)",
    }
    assert all(isinstance(values[name], TensorValue) for name in tensors)
    unknown = ("d11", "d12", "w1", "w2", "f4", "f5", "h5", "h6", "h7")
    assert [type(values[name]).__name__ for name in unknown] == ["_Unknown"] * len(unknown)
    assert [str(values[name].dim) for name in ("d1", "d2", "d3", "d4", "d5", "d6")] == ["b", "t", "4", "d4", "t", "6"]
    assert [_code(values[name].node) for name in ("e1", "e2")] == ["helper(x)", "helper(x)"]
    assert all(values[name].has(PositionTag) and values[name].has(ScaleTag) for name in ("e1", "e2"))
    assert [values[name].tag(ProjectionTag).part for name in ("f1", "f2", "f3")] == [(0,), (1,), (2,)]
    assert [values[name].ident.label for name in ("h3", "h4")] == ["self.rep[0]", "self.rep[1]"]


# --- ops/dispatch.py: from a callee, an operator or a subscript to the op -----------------------------


WRITES = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(40, 8)

    def forward(self, idx):
        return self.emb(idx)


def f(x: Float[Tensor, "b t 4"], i: int, box, helper):
    model = Net()
    ids = torch.randint(0, 40, (4, 16))
    logits = model(ids)
    pe = torch.zeros(16, 8)
    pos = torch.arange(16).unsqueeze(1)
    pe[:, 0::2] = torch.sin(pos * 0.5)
    pe1 = pe
    pe[:, 1::2] = torch.cos(pos * 0.5)
    row = torch.ones(4)
    pe[0] = torch.cat([row, row], dim=-1)
    pe2 = pe
    pe[i] = 1.0
    pe[:, :i] = 2.0
    pe[-1, 2:6:2] = 3.0
    pe[:, i:] = 4.0
    pe[0, ::i] = 5.0
    labels = ids.clone()
    labels[:, :2] = -100
    labels2 = labels
    shifted = torch.zeros(4, 16)
    shifted[:, 1:] = ids[:, :-1]
    shifted2 = shifted
    box.cache[0] = helper(x)
    x.view(-1)[0] = 0.0
    for buf in (pe,):
        buf[0] = 6.0
    for pe[1] in (7.0,):
        pass
    cache = [x, x]
    cache[0] = x * 2
    cache2 = cache
"""


def test_a_subscript_assignment_is_an_event_and_gives_the_tensor_what_is_written() -> None:
    """``subscript_assign`` and ``_index_key``: ``t[...] = v`` records a ``setitem`` event (the tensor and
    the value, their nodes, the index as constants: ints and ``("slice", start, stop, step)``, None
    when a bound is not constant), and the tensor written into is no longer a fill (``zeros``) nor
    the tokens it was cloned from (``-100`` labels), and gains the lineage of what is written (the
    positions of ``arange``, a cat's cause; not the tokens of ids written at other positions). A
    subscript of something other than a name is evaluated (its ops recorded), and not rebound."""
    facts = analyze_src(HEADER + textwrap.dedent(WRITES))
    assert facts.internal_errors == []
    run = run_of(facts, "f")
    values = {a.name: a.value for a in run.assignments}
    tags = {name: _tag_summary(values[name]) for name in ("pe", "pe1", "pe2", "labels", "labels2", "shifted", "shifted2")}
    # (computed from the positions alone: still positions, kind "index"; test_engine_rcpe)
    positions = ("position", "index", "torch.arange(16)")
    assert tags == {
        "pe": [("FilledTag",)], "pe1": [positions], "pe2": [positions, ("cause", ["torch.cat([row, row], dim=-1)"])],
        "labels": [("sequence", "0", "16", False)], "labels2": [], "shifted": [("FilledTag",)], "shifted2": [],
    }
    assert [(_shape(values[name]), values[name].dtype) for name in ("pe2", "labels2", "shifted2")] == [
        ("(16, 8)", "float"), ("(4, 16)", "int"), ("(4, 16)", "float"),
    ]
    events = facts.events_of("setitem")
    found = [(_code(e.node), e.kwargs["index"].value, e.kwargs["name"].value, [_code(n) if n is not None else None for n in e.arg_nodes])
             for e in events]
    whole = ("slice", None, None, None)
    assert found == [
        ("pe[:, 0::2] = torch.sin(pos * 0.5)", (whole, ("slice", 0, None, 2)), "pe", ["pe", "torch.sin(pos * 0.5)"]),
        ("pe[:, 1::2] = torch.cos(pos * 0.5)", (whole, ("slice", 1, None, 2)), "pe", ["pe", "torch.cos(pos * 0.5)"]),
        ("pe[0] = torch.cat([row, row], dim=-1)", (0,), "pe", ["pe", "torch.cat([row, row], dim=-1)"]),
        ("pe[i] = 1.0", None, "pe", ["pe", "1.0"]),
        ("pe[:, :i] = 2.0", None, "pe", ["pe", "2.0"]),
        ("pe[-1, 2:6:2] = 3.0", (-1, ("slice", 2, 6, 2)), "pe", ["pe", "3.0"]),
        ("pe[:, i:] = 4.0", None, "pe", ["pe", "4.0"]),
        ("pe[0, ::i] = 5.0", None, "pe", ["pe", "5.0"]),
        ("labels[:, :2] = -100", (whole, ("slice", None, 2, None)), "labels", ["labels", "-100"]),
        ("shifted[:, 1:] = ids[:, :-1]", (whole, ("slice", 1, None, None)), "shifted", ["shifted", "ids[:, :-1]"]),
        ("buf[0] = 6.0", (0,), "buf", ["buf", "6.0"]),
        ("for pe[1] in (7.0,):\n    pass\n", (1,), "pe", ["pe", None]),  # a loop target: no value node
        ("cache[0] = x * 2", (0,), "cache", ["cache", "x * 2"]),
    ]
    assert all(e.run is run and e.assumptions is not None and e.result is UNKNOWN and e.kwarg_nodes == {} for e in events)
    assert [_shape(e.args[0]) for e in events[:3]] == ["(16, 8)", "(16, 8)", "(16, 8)"]
    assert [_shape(e.args[1]) for e in events[:3]] == ["(16, 1)", "(16, 1)", "(8)"]
    assert [_shape(item) for item in values["cache2"].items] == ["(b, t, 4)", "(b, t, 4)"]  # a list written into: as it was
    assert [_code(e.node) for e in facts.events_of("view")] == ["x.view(-1)"]


def _described(value) -> object:
    """A value as its kind and what it holds: a constant's value, a size's dim, a tensor's shape."""
    kind = type(value).__name__
    if kind == "ConstValue":
        return ("const", value.value)
    if kind == "IntValue":
        return ("int", str(value.dim))
    if isinstance(value, TensorValue):
        return ("tensor", _shape(value))
    return kind


LOOKUPS = """
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
import mylib


def eager(q):
    return q.transpose(1, 2)


def f(x: Float[Tensor, "b t 4"], m: Bool[Tensor, "b t"], config, key, u: Float[Tensor, "b s 4"]):
    opts = dict(mask=m, scale=2)
    g1 = opts.get("mask")
    g2 = opts.get("other")
    g3 = opts.get("other", 5)
    g4 = opts.pop("mask")
    g5 = opts.get("mask")
    g6 = opts.pop("zzz")
    g7 = opts.update(extra=x)
    g8 = opts.get("extra")
    g9 = opts.get("scale")
    o2 = dict(a=x)
    g10 = o2.get(key)
    g11 = o2
    o3 = dict(a=x)
    g12 = o3.keys()
    g13 = o3
    o4 = dict(a=x)
    g14 = o4.update(**config)
    g15 = o4
    o5 = dict(a=x)
    g16 = o5.pop("b", 7)
    g17 = o5.get("a", 9)
    d = x.shape[-1]
    t = x.shape[1]
    c1 = d == 4
    c2 = d != 4
    c3 = t == 4
    c4 = t == t
    c5 = d < 5
    c6 = d <= 4
    c7 = d > 4
    c8 = d >= 5
    c9 = t < 5
    c10 = d == 4.0
    c11 = 4 == d
    c12 = t != t
    c13 = 3 < 5
    c14 = d == True
    assert u.shape[1] == 4
    c15 = u.shape[1] == 4
    o6 = dict(a=x, b=m)
    g18 = getattr(o6, "pop")("b")
    i1 = ALL_ATTENTION_FUNCTIONS.get_interface(config.kind, eager)
    y1 = i1(x)
    i2 = mylib.REG.get("sdpa", eager)
    y2 = i2(x)
    i3 = mylib.REG.get("sdpa")
    i4 = mylib.REG.get("sdpa", eager, 3)
    i5 = mylib.REG.get("sdpa", default=eager)
    i6 = mylib.REG.get("sdpa", 3)
    i7 = mylib.REG.fetch("sdpa", eager)
    i9 = config.table().get("sdpa", eager)
    y9 = i9(x)
    return x
"""


def test_dict_methods_size_comparisons_and_lookups_with_a_fallback() -> None:
    """``_dict_method`` on a dict of known keys (``dict(mask=m)``): ``get`` gives the entry, the default
    or None, ``pop`` the entry (the dict is rebound without it) or its default, else unknown;
    ``update(k=v)`` adds entries and gives None; ``getattr(d, "pop")(k)`` gives the entry; ``get`` of a
    key not constant gives unknown and leaves the dict as it was (it only reads); another method or
    an update from ``**`` makes the dict unknown. ``_compare_sizes``: ``== != < <= > >=`` on sizes are decided when
    both are ints, known or provably (un)equal (``t == t``), unknown otherwise (a float or a bool
    compared, ``t == 4``), or equal on this path (``s == 4`` after an assert). ``registry_fallback``: ``table.get(key, fn)`` and transformers'
    ``get_interface(name, fn)`` are ``fn`` (a call of the result runs it), not with one argument,
    three, a keyword, a fallback that is no function or another method."""
    facts = analyze_src(HEADER + textwrap.dedent(LOOKUPS))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    found = {name: _described(values[name]) for name in values if name[0] in "gcyi" and name[1:].isdigit()}
    assert found == {
        "g1": ("tensor", "(b, t)"), "g2": ("const", None), "g3": ("int", "5"), "g4": ("tensor", "(b, t)"),
        "g5": ("const", None), "g6": "_Unknown", "g7": ("const", None), "g8": ("tensor", "(b, t, 4)"),
        "g9": ("int", "2"), "g10": "_Unknown", "g11": "DictValue", "g12": "_Unknown", "g13": "_Unknown",
        "g14": "_Unknown", "g15": "_Unknown", "g16": ("int", "7"), "g17": ("tensor", "(b, t, 4)"),
        "c1": ("const", True), "c2": ("const", False), "c3": "_Unknown", "c4": ("const", True),
        "c5": ("const", True), "c6": ("const", True), "c7": ("const", False), "c8": ("const", False),
        "c9": "_Unknown", "c10": "_Unknown", "c11": ("const", True), "c12": ("const", False),
        "c13": ("const", True), "c14": "_Unknown", "c15": ("const", True),
        "g18": ("tensor", "(b, t)"),
        "i1": "FunctionValue", "y1": ("tensor", "(b, 4, t)"), "i2": "FunctionValue", "y2": ("tensor", "(b, 4, t)"),
        "i3": "_Unknown", "i4": "_Unknown", "i5": "_Unknown", "i6": "_Unknown", "i7": "_Unknown",
        "i9": "FunctionValue", "y9": ("tensor", "(b, 4, t)"),
    }
    assert values["g1"] is values["g4"]


SUPER_CALLS = """
class Norm(nn.LayerNorm):
    def __init__(self, d):
        super().__init__(d)

    def forward(self, x):
        return super().forward(x) * 2


class Norm2(nn.LayerNorm):
    def __init__(self, d):
        super().__init__(d)

    def normed(self, x):
        return super().__call__(x)


class Root(nn.Module):
    def f(self, x):
        return x.transpose(1, 2)

    def g2(self, x):
        return x * 2


class Base(Root):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 6)

    def f(self, x):
        return super().f(self.proj(x))


class Child(Base):
    def __init__(self):
        super().__init__()
        self.norm = Norm(6)
        self.norm2 = Norm2(6)

    def f(self, x):
        return super().f(x).transpose(1, 2)

    def forward(self, x: Float[Tensor, "b t 4"]):
        y = self.f(x)
        z = self.norm(y)
        w = self.norm.weight
        u = super().g(x)
        v = self.norm2.normed(y)
        v2 = self.g2(y)
        return z
"""


def test_super_calls_run_the_parent_method_and_a_subclassed_layer_is_that_layer() -> None:
    """``call_super``: ``super().f(x)`` runs the parent's method as the parent's (so its own
    ``super()`` reaches the grandparent: ``(b, t, 4)`` projected to 6, transposed twice); a subclass of
    ``nn.LayerNorm`` built by ``super().__init__(d)`` is that layer (its ``weight`` is ``(6)``, its
    ``super().forward`` and ``super().__call__`` normalise); an unknown parent method gives a tensor of unknown shape."""
    facts = analyze_src(HEADER + textwrap.dedent(SUPER_CALLS))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "Child.forward").assignments}
    assert {name: _shape(values[name]) for name in ("y", "z", "w", "u", "v", "v2")} == {
        "y": "(b, t, 6)", "z": "(b, t, 6)", "w": "(6)", "u": None, "v": "(b, t, 6)", "v2": "(b, t, 6)",
    }
    assert isinstance(values["u"], TensorValue) and values["u"].has(PositionTag)
    inlined = sorted(run.qualname for run in facts.runs if run.inlined)
    assert inlined == [
        "Base.__init__", "Base.f", "Base.f", "Child.f", "Norm.__init__", "Norm.forward", "Norm2.__init__", "Norm2.normed",
        "Root.f", "Root.f", "Root.f", "Root.g2",
    ]


PARAMETER_PRODUCTS = """
class P(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 8))
        self.v = nn.Parameter(torch.randn(8, 4))
        self.fused = nn.Parameter(torch.randn(12, 36))
        self.rows = nn.Parameter(torch.randn(36, 4))

    def forward(self, x: Float[Tensor, "b t 4"], y: Float[Tensor, "b t 12"]):
        p1 = x @ self.w
        p2 = x @ self.v.T
        p3 = y @ self.fused[:, :12]
        p4 = self.v @ self.w
        p5 = torch.einsum("btd,de->bte", x, self.w)
        p6 = self.w.T @ x.transpose(1, 2)
        p7 = self.v.T @ self.v
        p8 = self.w.T @ self.w.T.T
        p9 = torch.matmul(x, self.w)
        p10 = y @ self.rows[12:24]
        p11 = self.v @ x.transpose(1, 2)
        p12 = x @ self.rows[12:24].T
        p21 = x @ einops.rearrange(self.v, "o i -> i o")
        p22 = einops.rearrange(self.w, "i o -> o i") @ x.transpose(1, 2)
        p23 = self.v @ einops.rearrange(self.v, "o i -> i o")
        return x
"""


def test_a_product_with_a_parameter_is_a_projection_of_the_other_operand() -> None:
    """``weight_projection`` (``@``, ``matmul``, ``einsum``): a tensor times a parameter, on either side,
    as it is or transposed (``.T``, ``einops.rearrange``), is a projection by that parameter of the other operand, at the rows of a
    fused weight it was cut to (``12:24``); a product of two parameters, or of a parameter and its own
    transpose, projects nothing."""
    facts = analyze_src(HEADER + "import einops\n" + textwrap.dedent(PARAMETER_PRODUCTS))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "P.forward").assignments}
    found = {}
    for name in ("p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11", "p12", "p21", "p22", "p23"):
        tag = values[name].tag(ProjectionTag)
        found[name] = (_shape(values[name]),) + ((tag.ident.label, tag.part, _code(tag.node), _shape(tag.source)) if tag else ())
    assert found == {
        "p1": ("(b, t, 8)", "self.w", (), "x @ self.w", "(b, t, 4)"),
        "p2": ("(b, t, 8)", "self.v", (), "x @ self.v.T", "(b, t, 4)"),
        "p3": ("(b, t, 12)", "self.fused", (), "y @ self.fused[:, :12]", "(b, t, 12)"),
        "p4": ("(8, 8)",),
        "p5": ("(b, t, 8)", "self.w", (), 'torch.einsum("btd,de->bte", x, self.w)', "(b, t, 4)"),
        "p6": ("(b, 8, t)", "self.w", (), "self.w.T @ x.transpose(1, 2)", "(b, 4, t)"),
        "p7": ("(4, 4)",),
        "p8": ("(8, 8)",),
        "p9": ("(b, t, 8)", "self.w", (), "torch.matmul(x, self.w)", "(b, t, 4)"),
        "p10": ("(b, t, 4)", "self.rows", ("12:24",), "y @ self.rows[12:24]", "(b, t, 12)"),
        "p11": ("(b, 8, t)", "self.v", (), "self.v @ x.transpose(1, 2)", "(b, 4, t)"),
        "p12": ("(b, t, 12)", "self.rows", ("12:24",), "x @ self.rows[12:24].T", "(b, t, 4)"),
        "p21": ("(b, t, 8)", "self.v", (), 'x @ einops.rearrange(self.v, "o i -> i o")', "(b, t, 4)"),
        "p22": ("(b, 8, t)", "self.w", (), 'einops.rearrange(self.w, "i o -> o i") @ x.transpose(1, 2)', "(b, 4, t)"),
        "p23": ("(8, 8)",),
    }


def test_conflicts_and_results_carry_the_suspects_of_every_operand() -> None:
    """``causes_of`` and ``traced``: a conflict gets the suspects (concatenations) of all its operands,
    not only of one, given by position or by keyword; a result that conflicted, or is itself a concatenation, is computed from its own
    node and all its operands' suspects, and what is computed from it inherits them."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t 4"], y: Float[Tensor, "b t 3"], w: Float[Tensor, "b 6 5"]):
            c1 = torch.cat([x, x], dim=-1)
            c2 = torch.cat([y, y], dim=-1)
            s = c1 + c2
            s3 = torch.cat([c1, c2], dim=-1)
            s4 = s3.sum(-1)
            m = torch.matmul(input=c1, other=w)
            return x
        """
    )
    cat_x, cat_y = "torch.cat([x, x], dim=-1)", "torch.cat([y, y], dim=-1)"
    assert {name: (_shape(values[name]), _tag_summary(values[name])) for name in ("c1", "c2", "s", "s3", "s4")} == {
        "c1": ("(b, t, 8)", [("cause", [cat_x])]),
        "c2": ("(b, t, 6)", [("cause", [cat_y])]),
        "s": (None, [("cause", ["c1 + c2", cat_x, cat_y])]),
        "s3": ("(b, t, 14)", [("cause", ["torch.cat([c1, c2], dim=-1)", cat_x, cat_y])]),
        "s4": ("(b, t)", [("cause", ["torch.cat([c1, c2], dim=-1)", cat_x, cat_y])]),
    }
    assert [(c.kind, _code(c.node), sorted(_code(node) for node in c.causes)) for c in conflicts] == [
        ("broadcast", "c1 + c2", [cat_x, cat_y]),
        ("matmul", "torch.matmul(input=c1, other=w)", [cat_x]),  # operands given by keyword too
    ]


ATTRIBUTES = """
class Cfg:
    def __init__(self):
        self.n = 4

    def width(self):
        return 8


def f(x: Float[Tensor, "b t 4"], p, helper, n: int, m: float, flag: bool, conf, q):
    cfg = Cfg()
    a1 = torch.float16
    a2 = torch.long
    a3 = torch.nn.float32
    a4 = np.inf
    a5 = math.pi
    a6 = torch.inf
    a7 = math.e
    a8 = x[:, np.newaxis]
    a9 = np.float32
    a10 = cfg.n
    a11 = cfg.width()
    a12 = cfg.missing
    a13 = p.shape
    a14 = p.T
    a15 = p.ndim
    a16 = p.view
    a17 = torch.finfo(x.dtype).min
    a18 = torch.finfo(x.dtype).max
    a19 = Cfg.width
    a20 = p.mT
    a21 = torch.finfo(x.dtype).eps
    a22 = torch.zeros(conf.n_embd, 2)
    B, T, C = q.shape
    a23 = q
    a24 = getattr(x, "shape")
    a25 = getattr(x, "T")
    b1 = x.ndim
    b2 = x.dtype
    b3 = x.device
    b4 = x.data
    b5 = x.T
    b6 = x.mT
    b7 = x.requires_grad
    b8 = x.shape
    b9 = x.is_cuda
    b10 = x.data_ptr
    u1 = -x
    u3 = -m
    u4 = not flag
    u5 = not True
    u6 = +n
    u7 = -helper()
    u8 = ~helper()
    u10 = -x.shape[1]
    u11 = -x.sum()
    u12 = not x
    k1 = p == 0
    k2 = 0 != p
    k3 = x is None
    k4 = None is None
    k5 = x is not None
    k6 = p is None
    k7 = helper() * 0.5
    k8 = helper() / 4
    k9 = 2 * helper()
    k10 = helper() - 1
    k11 = 2 / helper()
    k12 = x @ x.transpose(1, 2)
    k13 = n * 2
    return x
"""


def test_attributes_unary_operators_identity_and_unknown_values_scaled() -> None:
    """``attribute`` / ``tensor_attribute``: ``torch.<dtype>`` is a dtype class, library constants are
    numbers (``np.inf``, ``math.pi``, ``torch.finfo(...).min``, not ``.eps``), ``np.newaxis`` indexes as
    ``None``, an object's attributes and methods are read, a parameter's ``shape`` / ``T`` / ``mT`` /
    ``ndim`` are those of an unknown tensor (its shape unpacked into names refines it), a
    configuration's attribute is a size named after it; a tensor's ``ndim``, ``dtype``, ``data``, ``T`` (all axes reversed, torch's
    deprecated 3-D ``.T``) and ``mT`` (their events read the tensor's node); ``is_cuda`` and such are unknown. ``unary``: ``-`` keeps a tensor's shape and dtype and negates
    sizes and numbers, ``not`` of a constant is decided, of anything else unknown (of a tensor
    too: Python's ``not bool(x)``, never a tensor; ``~`` negates elementwise). ``compare``: a
    parameter compared with a number is a bool tensor of unknown shape; ``is None`` is decided for
    values that are known to be (or not to be) None. ``binary``: an unknown value times or divided by
    a number is scaled by it, not for ``-`` or a number divided by it."""
    facts = analyze_src(HEADER + "import numpy as np\n" + textwrap.dedent(ATTRIBUTES))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    found = {}
    for name, value in values.items():
        kind = type(value).__name__
        if kind == "DtypeValue":
            found[name] = ("dtype", value.dtype)
        elif kind == "QualifiedValue":
            found[name] = ("qualified", value.qualname)
        elif kind == "FloatValue":
            found[name] = ("float", value.scale.coef, tuple((str(d), e) for d, e in value.scale.factors))
        elif isinstance(value, TensorValue):
            found[name] = ("tensor", _shape(value), value.dtype) + tuple(_tag_summary(value))
        else:
            found[name] = _described(value)
    scale = lambda factor, code: ("scale", factor, code, None, None)  # noqa: E731
    assert found == {
        "cfg": "ObjectValue",
        "a1": ("dtype", "float"), "a2": ("dtype", "int"), "a3": ("qualified", "torch.nn.float32"),
        "a4": ("float", math.inf, ()), "a5": ("float", math.pi, ()), "a6": ("float", math.inf, ()),
        "a7": ("float", math.e, ()), "a8": ("tensor", "(b, 1, t, 4)", "float"), "a9": ("qualified", "numpy.float32"),
        "a10": ("int", "4"), "a11": ("int", "8"), "a12": "_Unknown", "a13": "ShapeValue",
        "a14": ("tensor", None, None), "a15": "_Unknown", "a16": "BoundMethod",
        "a17": ("float", -3.4028234663852886e38, ()), "a18": ("float", 3.4028234663852886e38, ()), "a19": "FunctionValue",
        "a20": ("tensor", None, None, ("KeyTransposed",)), "a21": "BoundMethod",
        "a22": ("tensor", "(conf.n_embd, 2)", "float", ("FilledTag",)),
        "a23": ("tensor", "(B, T, C)", None), "B": ("int", "B"), "T": ("int", "T"), "C": ("int", "C"),
        "a24": "ShapeValue", "a25": ("tensor", "(4, t, b)", "float", ("Reordered",), ("Permuted",)),
        "b9": "_Unknown", "b10": "_Unknown",
        "b1": ("int", "3"), "b2": ("dtype", "float"), "b3": "_Unknown", "b4": ("tensor", "(b, t, 4)", "float"),
        "b5": ("tensor", "(4, t, b)", "float", ("Reordered",), ("Permuted",)),
        "b6": ("tensor", "(b, 4, t)", "float", ("Reordered",), ("Permuted",), ("KeyTransposed",)),
        "b7": "_Unknown", "b8": "ShapeValue",
        "u1": ("tensor", "(b, t, 4)", "float"), "u3": ("float", -1.0, (("m", 1),)), "u4": "_Unknown",
        "u5": ("const", False), "u6": "Opaque", "u7": "_Unknown", "u8": "_Unknown", "u10": ("int", "-t"),
        "u11": ("tensor", "()", "float"), "u12": "_Unknown",
        "k1": ("tensor", None, "bool"), "k2": ("tensor", None, "bool"), "k3": ("const", False), "k4": ("const", True),
        "k5": ("const", True), "k6": "_Unknown",
        "k7": ("tensor", None, None, scale(0.5, "helper() * 0.5")), "k8": ("tensor", None, None, scale(0.25, "helper() / 4")),
        "k9": ("tensor", None, None, scale(2.0, "2 * helper()")), "k10": "_Unknown", "k11": "_Unknown",
        "k12": ("tensor", "(b, t, t)", "float", ("ScoresTag",)), "k13": ("int", "2*n"),
    }
    assert [_code(values[name].node) for name in ("u1", "k1", "k2")] == ["-x", "p == 0", "0 != p"]
    transposes = [e for e in facts.events if e.run is run_of(facts, "f") and e.op in ("T", "mT")]
    assert [(e.op, _code(e.node), [_code(node) for node in e.arg_nodes], e.kwargs) for e in transposes] == [
        ("T", "p.T", ["p"], {}), ("mT", "p.mT", ["p"], {}), ("T", 'getattr(x, "T")', [None], {}), ("T", "x.T", ["x"], {}),
        ("mT", "x.mT", ["x"], {}),
    ]  # an attribute read by getattr has no receiver node


CALLS = """
class Obj:
    def __init__(self):
        self.k = 2

    def twice(self, x):
        return x * 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 8)

    def forward(self, x):
        return self.lin(x)


def f(x: Float[Tensor, "b t 4"], c: Bool[Tensor, "b t 4"], helper, device):
    o = Obj()
    m1 = o.twice(x)
    m2 = o.unknown(x)
    net = Net().eval()
    m3 = net(x)
    m4 = (x, x).count(x)
    m5 = helper().to(device)
    m6 = helper().float()
    y = x * 1.0
    y.mul_(2)
    m7 = y
    m8 = x.where(c, 0.0)
    m9 = x.swapaxes(1, 2)
    m10 = torch.concat([x, x], dim=-1)
    m11 = x.frobnicate(3)
    m12 = torch.special.expm1(x)
    m13 = torch.linalg.vector_norm(x)
    m14 = einops.rearrange(x, "b t d -> b d t")
    m15 = jaxtyping.jaxtyped(x)
    m16 = mylib.helper(x)
    m17 = torch.nn.functional.softmax(x, dim=-1)
    m18 = torch.Tensor.transpose(x, 1, 2)
    m19 = torch.concatenate([x, x], dim=1)
    m20 = x.size(1).bit_length()
    lin = torch.nn.Linear(4, 6)
    m21 = lin(x)
    m23 = x.add(x)
    z = torch.zeros(2)
    z.unsqueeze_(0)
    m26 = z
    m27 = x.__matmul__(x.transpose(1, 2))
    tr = x.transpose
    m28 = tr(1, 2)
    return x
"""


def test_calls_reach_the_op_of_their_callee_by_module_prefix_method_alias_or_in_place_form() -> None:
    """``call_qualified`` / ``call_method``: ``torch.``, ``torch.nn.functional.``, ``torch.special.``,
    ``torch.Tensor.`` and einops callees reach their op (``concat`` / ``concatenate`` are ``cat``), an
    unknown torch or library callee and an unknown method of a tensor or an object give a "maybe"
    tensor at the call, jaxtyping gives nothing; ``torch.nn.Linear`` builds a layer; an object's method
    is inlined, ``Net().eval()`` is the model; methods of tuples and numbers, and ``.to(device)`` of an
    unknown value, are unknown; ``swapaxes`` is ``transpose``, ``__matmul__`` a matmul, ``add`` the
    add op; ``x.where(c, y)`` is ``torch.where(c, x, y)``; an in-place method rebinds its variable; a
    method held in a name is called with no receiver node."""
    facts = analyze_src(HEADER + "import einops\nimport jaxtyping\nimport mylib\n" + textwrap.dedent(CALLS))
    assert facts.internal_errors == []
    run = run_of(facts, "f")
    values = {a.name: a.value for a in run.assignments}
    found = {name: (_described(value), value.dtype) + tuple(_tag_summary(value)) if isinstance(value, TensorValue) else _described(value)
             for name, value in values.items() if name.startswith("m")}
    maybe = lambda code: (("position", "unknown", code), ("scale", None, code, None, None))  # noqa: E731
    transposed = (("Reordered",), ("Permuted",), ("KeyTransposed",))
    assert found == {
        "m1": (("tensor", "(b, t, 4)"), "float", ("scale", 2.0, "x * 2", None, None)),
        "m2": (("tensor", None), None) + maybe("o.unknown(x)"),
        "m3": (("tensor", "(b, t, 8)"), "float", ("LayerOutputTag",), ("ProjectionTag",), ("ModelOutputTag",)),
        "m4": "_Unknown", "m5": "_Unknown", "m6": (("tensor", None), "float"),
        "m7": (("tensor", "(b, t, 4)"), "float"), "m8": (("tensor", "(b, t, 4)"), "float"),
        "m9": (("tensor", "(b, 4, t)"), "float") + transposed,
        "m10": (("tensor", "(b, t, 8)"), "float", ("cause", ["torch.concat([x, x], dim=-1)"])),
        "m11": (("tensor", None), None) + maybe("x.frobnicate(3)"),
        "m12": (("tensor", "(b, t, 4)"), "float"),
        "m13": (("tensor", None), None) + maybe("torch.linalg.vector_norm(x)"),
        "m14": (("tensor", "(b, 4, t)"), "float", ("KeyTransposed",)),
        "m15": "_Unknown",
        "m16": (("tensor", None), None) + maybe("mylib.helper(x)"),
        "m17": (("tensor", "(b, t, 4)"), "float", ("NormalisedTag",)),
        "m18": (("tensor", "(b, 4, t)"), "float") + transposed,
        "m19": (("tensor", "(b, 2*t, 4)"), "float", ("cause", ["torch.concatenate([x, x], dim=1)"])),
        "m20": "_Unknown",
        "m21": (("tensor", "(b, t, 6)"), "float", ("LayerOutputTag",), ("ProjectionTag",), ("ModelOutputTag",)),
        "m23": (("tensor", "(b, t, 4)"), "float"),
        "m26": (("tensor", "(1, 2)"), "float", ("FilledTag",)),
        "m27": (("tensor", "(b, t, t)"), "float", ("ScoresTag",)),
        "m28": (("tensor", "(b, 4, t)"), "float") + transposed,
    }
    assert [_code(values[name].node) for name in ("m7", "m26")] == ["y.mul_(2)", "torch.zeros(2)"]
    events = {e.op: e for e in facts.events if e.run is run}
    assert [_code(node) for node in events["where"].arg_nodes] == ["c", "x", "0.0"]
    assert (_code(events["where"].node), events["where"].kwarg_nodes) == ("x.where(c, 0.0)", {})
    assert [_shape(arg) for arg in events["where"].args[:2]] == ["(b, t, 4)", "(b, t, 4)"]
    assert [(op, _code(events[op].node)) for op in ("mul_fn", "add_fn", "matmul", "expm1", "unsqueeze")] == [
        ("mul_fn", "y.mul_(2)"), ("add_fn", "x.add(x)"), ("matmul", "x.__matmul__(x.transpose(1, 2))"),
        ("expm1", "torch.special.expm1(x)"), ("unsqueeze", "z.unsqueeze_(0)"),
    ]
    transposes = [e for e in facts.events if e.run is run and e.op == "transpose"]
    assert [(_code(e.node), _code(e.arg_nodes[0])) for e in transposes] == [
        ("x.swapaxes(1, 2)", "x"), ("torch.Tensor.transpose(x, 1, 2)", "x"), ("x.transpose(1, 2)", "x"), ("tr(1, 2)", None),
    ]  # a method held in a name: no receiver node


LABELS = """
class Sub:
    def __init__(self):
        self.k = 1


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.alias = self.proj
        self.sub = Sub()
        self.w = nn.Parameter(torch.randn(8, 8))
        self.w2 = self.w
        layer = nn.Linear(8, 8)
        self.named = layer
        self.ln = nn.LayerNorm(8)
        self.mlp = nn.Linear(8, 8)
        blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
        self.first = blocks[0]
        lin = nn.Linear(8, 8)
        self.table = lin(torch.zeros(4, 8))

    def forward(self, x, mask=None, z: Float[Tensor, "b t 8"] = None):
        a1 = self.alias(z)
        a2 = self.named(z)
        a3 = self.w2
        a4 = self.sub
        a5 = z @ self.w
        a6 = self.first(z)
        a7 = self.table
        y = x + self.mlp(self.ln(x))
        y2 = self.mlp(self.ln(x)) + x
        i1 = mask is None
        i2 = z is None
        i3 = self.proj is None
        i4 = torch.float32 is None
        i5 = None is z
        y3 = z
        y3 += z
        y4 = z
        y4 @= self.w
        return x
"""


def test_layers_are_labelled_where_first_assigned_and_operands_are_read_refined() -> None:
    """``label_module``: a layer (an item of a local list too), an object, a parameter or a projection
    computed by a local layer assigned to ``self.<name>`` is labelled by that name, kept when it is assigned again under another (``self.alias = self.proj``).
    ``_refreshed``: an unannotated input read as the left operand before the right one refined it
    (``x + self.mlp(self.ln(x))``) is the refined tensor. ``is None`` (either way round) of an argument
    defaulting to None is unknown, of a layer or a dtype False. Augmented assignments (``+=``, ``@=``) are the
    operator on the target and the value."""
    facts = analyze_src(HEADER + textwrap.dedent(LABELS))
    assert facts.internal_errors == []
    run = run_of(facts, "M.forward")
    values = {a.name: a.value for a in run.assignments}
    labels = {
        "a1": values["a1"].tag(ProjectionTag).ident.label, "a2": values["a2"].tag(ProjectionTag).ident.label,
        "a3": values["a3"].tag(ParameterTag).ident.label, "a4": values["a4"].ident.label,
        "a5": values["a5"].tag(ProjectionTag).ident.label, "y4": values["y4"].tag(ProjectionTag).ident.label,
        "a6": values["a6"].tag(ProjectionTag).ident.label, "a7": values["a7"].tag(ProjectionTag).ident.label,
    }
    assert labels == {
        "a1": "self.proj", "a2": "self.named", "a3": "self.w", "a4": "self.sub", "a5": "self.w", "y4": "self.w",
        "a6": "self.first", "a7": "self.table",
    }
    assert [_shape(values[name]) for name in ("a6", "a7")] == ["(b, t, 8)", "(4, 8)"]
    assert {name: _described(values[name]) for name in ("y", "y2", "i1", "i2", "i3", "i4", "i5", "y3")} == {
        "y": ("tensor", "(*, 8)"), "y2": ("tensor", "(*, 8)"), "i1": "_Unknown", "i2": "_Unknown", "i5": "_Unknown",
        "i3": ("const", False), "i4": ("const", False), "y3": ("tensor", "(b, t, 8)"),
    }
    binary = [e for e in facts.events if e.run is run and e.op in ("binary", "matmul") and _code(e.node).startswith("y")]
    assert [(e.op, [_code(node) for node in e.arg_nodes]) for e in binary] == [("binary", ["y3", "z"]), ("matmul", ["y4", "self.w"])]


def test_shape_only_ops_keep_a_head_split_of_unknown_rank_and_products_equate_their_inner_sizes() -> None:
    """``same_values``: a head split of a tensor of unknown rank (``(*, 6, 8)``) stays one through ops
    that keep its shape (dropout, ``contiguous``, casts), not through a reshape or a transpose.
    ``unify``: a product whose inner sizes are not provably equal (``2*d`` against ``e``, ``k``
    against ``g``) runs only when they are, so the path assumes it (``y.shape[-1] == w.shape[0]`` is
    then True), and nothing more (``g == 7`` stays unknown)."""
    values, _ = _run(
        """
        def f(hs: Float[Tensor, "*b 48"], x: Float[Tensor, "b t d"], w: Float[Tensor, "e 5"], v: Float[Tensor, "g 5"],
              u: Float[Tensor, "b t k"]):
            lh = hs.view(*hs.shape[:-1], -1, 8)
            s1 = F.dropout(lh, 0.1)
            s2 = lh.contiguous()
            s3 = lh.reshape(*lh.shape[:-2], 48)
            s5 = lh.transpose(-2, -1)
            s6 = lh.float()
            y = torch.cat([x, x], -1)
            z = y @ w
            c1 = y.shape[-1] == w.shape[0]
            z3 = u @ v
            c2 = u.shape[-1] == v.shape[0]
            c3 = v.shape[0] == 7
            return x
        """
    )
    found = {name: (_shape(values[name]), values[name].has(LeadingOfUnknownRank)) for name in ("lh", "s1", "s2", "s3", "s5", "s6", "z", "z3")}
    assert found == {
        "lh": ("(*, 6, 8)", True), "s1": ("(*, 6, 8)", True), "s2": ("(*, 6, 8)", True), "s3": ("(*, 48)", False),
        "s5": ("(*, 8, 6)", False), "s6": ("(*, 6, 8)", True), "z": ("(b, t, 5)", False), "z3": ("(b, t, 5)", False),
    }
    assert [_described(values[name]) for name in ("c1", "c2", "c3")] == [("const", True), ("const", True), "_Unknown"]


def test_unpacking_into_attributes_pieces_of_unknown_count_and_items_of_a_comprehension() -> None:
    """``unpack``: a size of unknown rank (``*b t 6``) unpacked into attributes (no names to give the
    missing sizes) gives the known trailing sizes last and unknown ones before them, and unknown
    values for fewer targets than known sizes (Python raises); the pieces of a split of unknown
    count are the projection's parts 0 and 1; the layers of a comprehension are distinct instances
    (``[0]``, ``[1]``); anything else unpacks into unknown values. ``Call.with_receiver``: a method's event keeps its keyword arguments' nodes."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        class A(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(4, 12)

            def forward(self, x: Float[Tensor, "b t 4"], p: Float[Tensor, "*b t 6"], n: int, pair):
                q, k = self.qkv(x).split(n, dim=-1)
                self.a1, self.a2, self.a3 = p.shape
                self.c1, self.c2 = p.shape
                (self.z,) = p.shape
                l1, l2 = [nn.Linear(4, 4) for _ in range(n)]
                s = x.softmax(dim=-1)
                o1, o2 = pair
                d = dict(a=1)
                q1, q2 = d
                return x
        """
    ))
    assert facts.internal_errors == []
    run = run_of(facts, "A.forward")
    values = {a.name: a.value for a in run.assignments}
    assert {name: _described(values[name]) for name in ("self.a1", "self.a2", "self.a3", "self.c1", "self.c2", "self.z")} == {
        "self.a1": "_Unknown", "self.a2": ("int", "t"), "self.a3": ("int", "6"), "self.c1": ("int", "t"),
        "self.c2": ("int", "6"), "self.z": "_Unknown",
    }
    assert [(_shape(values[name]), values[name].tag(ProjectionTag).part) for name in ("q", "k")] == [("(b, t, n)", (0,)), (None, (1,))]
    assert [values[name].ident.label for name in ("l1", "l2")] == ["nn.Linear(...)[0]", "nn.Linear(...)[1]"]
    assert values["l1"].ident is not values["l2"].ident
    assert [values[name] is UNKNOWN for name in ("o1", "o2", "q1", "q2")] == [True] * 4  # an unseen value, a dict's keys
    softmax = [e for e in facts.events if e.op == "softmax" and e.run is run]
    assert [({key: _code(node) for key, node in e.kwarg_nodes.items()}, [_code(node) for node in e.arg_nodes]) for e in softmax] == [
        ({"dim": "-1"}, ["x"]),
    ]


def test_a_known_left_operand_keeps_the_value_it_had_before_the_right_one_rebinds_its_name() -> None:
    """``_refreshed`` takes the name's current value only for an unseen input (refined by the right
    operand, above): a tensor already known keeps the value read first, as Python evaluates the
    left operand first (``x + (x := z)`` adds the old ``x``: torch gives ``(b, t, 4)``)."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        def f(x: Float[Tensor, "b t 4"], z: Float[Tensor, "b 1 4"]):
            y = x + (x := z)
            return y
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert (_shape(values["x"]), _shape(values["y"])) == ("(b, 1, 4)", "(b, t, 4)")


def test_a_list_seen_empty_is_not_known_to_be_empty() -> None:
    """``known_items`` knows no empty sequence: a list the engine saw created empty may have been
    filled where it did not look (here by an unseen ``build``), so a loop over it still runs its
    body once (``x`` may have gone through the layers: unknown, not its old ``(b, t, 8)``) and a
    comprehension over it is a repetition of unknown length, not an empty tuple."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        def f(x: Float[Tensor, "b t 8"], build):
            fs = []
            build(fs)
            for g in fs:
                x = g(x)
            y = x
            hs = [g(x) for g in fs]
            return y
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert isinstance(values["y"], TensorValue) and values["y"].shape is None
    assert type(values["hs"]).__name__ == "Repeated"


def test_a_layer_input_of_known_shape_is_its_projection_source_even_without_a_node() -> None:
    """``_linear``'s projection source: an input whose shape is known is the source even when it has
    no tags and no node of its own (a view of what an unseen module returned keeps that value's
    missing node), as in mmpretrain's necks: ``x = x.view(x.size(0), -1); self.fc(x)``."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        class M(nn.Module):
            def __init__(self, gap):
                super().__init__()
                self.gap = gap
                self.fc = nn.Linear(8, 4)

            def forward(self, inputs):
                x = self.gap(inputs)
                x = x.view(x.size(0), -1)
                y = self.fc(x)
                return y
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    assert values["x"].node is None and values["x"].tags == ()
    assert values["y"].tag(ProjectionTag).source is values["x"]


def test_library_callees_models_built_from_torch_nn_and_operator_nodes() -> None:
    """``call_qualified``: einops imported from its submodule (``einops.einops.rearrange``) is the
    einops op; a transformers padding-mask builder is a padding mask at the call, no "maybe
    positional" tensor; a layer of ``torch.nn`` built by a script is a model in training mode set at
    its construction. ``binary`` / ``_refreshed``: an unannotated input refined by the right operand
    is no unseen operand (no "maybe positional" tag), a tensor times an unseen value is, at the
    operator's node; an unknown value scaled and a negation are results at their own nodes."""
    from shapecheck.engine.domain import modes

    module, facts = training_facts_of(
        """
        from einops.einops import rearrange
        from transformers.masking_utils import create_bidirectional_mask

        lin = nn.Linear(4, 2)
        lin(torch.randn(3, 4))


        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln = nn.LayerNorm(8)
                self.mlp = nn.Linear(8, 8)

            def forward(self, x, am, w, helper):
                r = rearrange(torch.randn(2, 3, 4), "b t d -> b d t")
                pm = create_bidirectional_mask(config=None, input_embeds=x, attention_mask=am)
                y = x + self.mlp(self.ln(x))
                p = torch.randn(2, 3, 8) @ w
                k = helper() * 0.5
                n = ~(torch.randn(2, 3) > 0)
                return y
        """
    )
    assert facts.internal_errors == []
    run = run_of(facts, "M.forward")
    values = {a.name: a.value for a in run.assignments}
    assert [_shape(values[name]) for name in ("r", "y", "p", "n")] == ["(2, 4, 3)", "(*, 8)", None, "(2, 3)"]
    assert _tag_summary(values["pm"]) == [("PaddingTag",)] and _code(values["pm"].node).startswith("create_bidirectional_mask(")
    assert not values["y"].has(PositionTag)
    assert _tag_summary(values["p"])[-1] == ("position", "unknown", "torch.randn(2, 3, 8) @ w")
    assert [module.code_for_node(values[name].node) for name in ("k", "n")] == ["helper() * 0.5", "~(torch.randn(2, 3) > 0)"]
    found = [
        (modes.kinds(call.modes), sorted(module.code_for_node(node) for node in modes.setters(call.modes, kind)))
        for call in facts.model_calls
        for kind in modes.kinds(call.modes)
    ]
    assert found == [({"train"}, ["nn.Linear(4, 2)"])]


OBJECT_METHODS = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.ones(4, 4))
        self.register_parameter("scale", nn.Parameter(torch.ones(4)))
        self.lin = nn.Linear(4, 4)

    def helper(self, x):
        return self.lin(x)

    def forward(self, x: Float[Tensor, "b t 4"]):
        a1 = self.mask
        a2 = self.scale
        a3 = getattr(self, "helper")(x)
        a4 = self.lin.forward(x)
        a5 = self.lin.weight
        a6 = self.half()
        a7 = self.cuda()
        a8 = self.requires_grad_(False)
        a9 = self.type(torch.float16)
        a10 = self.lin.to("cpu")
        a11 = self.lin.cuda()
        return x


def f(x: Float[Tensor, "b t 4"]):
    net = Net()
    n1 = net.eval()
    n15 = net(x)
    n2 = net.to("cpu")
    n3 = net.train()
    n4 = net(x)
    n5 = net.helper(x)
    n6 = net.zero_grad()
    n7 = net.to_empty(device="cpu")
    return x
"""


def test_methods_of_objects_and_layers_register_return_the_model_or_run() -> None:
    """``call_method`` on objects and layers: ``register_buffer`` / ``register_parameter`` make
    attributes of the given tensors; a method reached through ``getattr`` is inlined; a layer's own
    ``forward`` and ``weight`` are read; ``half()`` / ``cuda()`` / ``requires_grad_()`` / ``type()`` of a
    module, ``to()`` / ``cuda()`` of a layer and ``eval()`` / ``to()`` / ``train()`` / ``to_empty()`` of a
    model return the module itself, and ``eval()`` / ``train()`` set the mode of the model's later calls; other
    module methods (``zero_grad``) give nothing known."""
    from shapecheck.engine.domain import modes

    facts = analyze_src(HEADER + textwrap.dedent(OBJECT_METHODS))
    assert facts.internal_errors == []
    inside = {a.name: a.value for a in run_of(facts, "Net.forward").assignments}
    outside = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert {name: _described(value) for name, value in inside.items()} == {
        "a1": ("tensor", "(4, 4)"), "a2": ("tensor", "(4)"), "a3": ("tensor", "(b, t, 4)"), "a4": ("tensor", "(b, t, 4)"),
        "a5": ("tensor", "(4, 4)"), "a6": "ObjectValue", "a7": "ObjectValue", "a8": "ObjectValue",
        "a9": "ObjectValue", "a10": "ModuleValue", "a11": "ModuleValue",
    }
    assert all(inside[name].has(ParameterTag) for name in ("a1", "a2", "a5"))
    assert all(inside[name] is inside["a6"] for name in ("a7", "a8", "a9"))
    assert inside["a10"] is inside["a11"] and inside["a10"].kind == "Linear"
    assert [modes.kinds(call.modes) for call in facts.model_calls] == [{"eval"}, {"train"}]
    assert all(outside[name] is outside["net"] for name in ("n1", "n2", "n3", "n7"))
    assert {name: _described(outside[name]) for name in ("n4", "n5", "n6")} == {
        "n4": ("tensor", "(b, t, 4)"), "n5": ("tensor", "(b, t, 4)"), "n6": "_Unknown",
    }
    assert inside["a3"].has(ProjectionTag) and outside["n4"].has(ModelOutputTag)


# --- torch.nn layers (ops/nn_modules.py) ------------------------------------------------------------

from shapecheck.engine.domain.values import TupleValue


def _nn_run(src: str, *funcs: str):
    """Each function's assignments (name -> value), the facts, for a file of ``nn`` layers."""
    facts = analyze_src(HEADER + textwrap.dedent(src))
    assert facts.internal_errors == []
    return [{a.name: a.value for a in run_of(facts, func).assignments} for func in funcs], facts


def _conflicts(facts) -> list:
    return [(c.kind, c.op, _code(c.node), c.detail, c.hint, _code(c.at), c.run.qualname if c.run else None) for c in facts.conflicts]


NN_BUILT = """
from mylib import tokens


class Block(nn.Module):
    def forward(self, z):
        return z


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.p1 = nn.Parameter(data=torch.zeros(3, 4))
        self.p2 = nn.parameter.Parameter(torch.zeros(5, dtype=torch.long), requires_grad=False)
        self.b1 = nn.Buffer(torch.zeros(3))
        self.b2 = nn.parameter.Buffer(data=torch.ones(2, 3))
        self.m1 = nn.Transformer.generate_square_subsequent_mask(4)
        self.m2 = nn.Transformer.generate_square_subsequent_mask(sz=5)
        self.seq1 = nn.Sequential(nn.Linear(4, 8))
        self.seq3 = nn.Sequential(*[nn.Linear(4, 4) for _ in range(3)])
        self.ml = nn.ModuleList(modules=[nn.Linear(4, 8), nn.Linear(8, 2)])
        self.bad = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(6, 2))
        self.bad2 = nn.Sequential(nn.Linear(4, 8), Block(), nn.Linear(6, 2), nn.Linear(5, 3))
        self.bad3 = nn.Sequential(*[nn.Linear(4, 8), nn.Linear(6, 2)])
        self.emb = nn.Embedding(10, 4)

    def forward(self, x: Float[Tensor, "b t 4"], ids: Int[Tensor, "b t"], u, d: int):
        e = self.emb(ids)
        q = nn.Parameter(u)
        pe = nn.Parameter(e)
        r0 = nn.init.normal_(self.p1)
        r1 = nn.utils.clip_grad_norm_(self.parameters(), 1.0)
        r2 = nn.init(x)
        r3 = nn.functional(x)
        s1 = self.seq1(x)
        s2 = self.seq1(input=x)
        s3 = self.seq3(x)
        s4 = self.bad(x)
        h = x
        for layer in self.ml:
            h = layer(h)
        s5 = h
        assert d == 6
        s6 = nn.Sequential(nn.Linear(4, 8), nn.Linear(d, 2))
        return x
"""


def test_nn_constructors_parameters_buffers_masks_and_containers() -> None:
    """``construct``: ``nn.Parameter`` (by position or ``data=``, also as ``nn.parameter.Parameter``)
    is its data with a ``ParameterTag`` of its own identity (the call), keeping the data's dtype (int
    for a long tensor, float when unknown) and lineage; ``nn.Buffer`` / ``nn.parameter.Buffer`` is its
    data; ``generate_square_subsequent_mask(4)`` / ``(sz=5)`` is a float (4, 4) / (5, 5) additive upper
    triangle (torch: -inf above the diagonal); ``nn.init.*``, ``nn.utils.*`` and ``nn.init(x)`` /
    ``nn.functional(x)`` (torch: not callable) are unknown and build nothing; a layer records its
    construction (kind, call, identity, arguments, run), a one-layer ``Sequential``, a repeated one
    and a ``ModuleList(modules=...)`` run their layers."""
    (built, values), facts = _nn_run(NN_BUILT, "M.__init__", "M.forward")
    p1, p2, q = built["self.p1"], built["self.p2"], values["q"]
    assert [(_shape(p), p.dtype) for p in (p1, p2, q)] == [("(3, 4)", "float"), ("(5)", "int"), (None, "float")]
    assert _code(p1.node) == "nn.Parameter(data=torch.zeros(3, 4))"
    tag = q.tag(ParameterTag)
    assert (tag.ident.label, _code(tag.ident.node), _code(q.node)) == ("nn.Parameter(...)", "nn.Parameter(u)", "nn.Parameter(u)")
    assert str(p1.tag(ParameterTag).shape) == "(3, 4)"
    assert values["pe"].has(TokenEmbeddingTag) and values["pe"].has(ParameterTag) and _shape(values["pe"]) == "(b, t, 4)"
    assert [(_shape(built[n]), _code(built[n].node)) for n in ("self.b1", "self.b2")] == [("(3)", "torch.zeros(3)"), ("(2, 3)", "torch.ones(2, 3)")]
    for name, size in (("self.m1", "4"), ("self.m2", "5")):
        mask = built[name]
        triangle = mask.tag(TriangleTag)
        assert (_shape(mask), mask.dtype, _code(mask.node)) == (f"({size}, {size})", "float", _code(triangle.node))
        assert (triangle.lower, triangle.diagonal, str(triangle.full_size), triangle.additive) == (False, 1, size, True)
        assert _code(triangle.node).startswith("nn.Transformer.generate_square_subsequent_mask(")
    assert all(values[name] is UNKNOWN for name in ("r0", "r1", "r2", "r3"))
    assert sorted({b.kind for b in facts.constructions}) == ["Embedding", "Linear", "ModuleList", "ReLU", "Sequential"]
    fc = built["self.fc"]
    assert (_code(fc.node), _code(fc.ident.node), fc.repeated, fc.items, fc.named) == ("nn.Linear(4, 8)", "nn.Linear(4, 8)", False, (), {})
    record = next(b for b in facts.constructions if b.ident is fc.ident)
    assert (record.kind, _code(record.node), record.run.qualname) == ("Linear", "nn.Linear(4, 8)", "M.__init__")
    assert record.params is fc.params and set(record.params) == {"in_features", "out_features"}
    assert built["self.seq3"].repeated is True and len(built["self.seq3"].items) == 1
    assert [len(built[n].items) for n in ("self.seq1", "self.ml")] == [1, 2]
    assert [_shape(values[n]) for n in ("s1", "s2", "s3", "s5")] == ["(b, t, 8)", "(b, t, 8)", "(b, t, 4)", "(b, t, 2)"]
    assert _code(values["s1"].node) == "self.seq1(x)"
    assert values["s4"] is UNKNOWN  # torch: mat1 and mat2 shapes cannot be multiplied (8 vs 6)


def test_nn_sequential_layers_that_do_not_chain_are_a_conflict_at_the_layer() -> None:
    """``_check_chain``: consecutive ``Linear`` layers of a ``Sequential`` must chain (an activation
    between them is skipped, any other module breaks the chain); the conflict names the layer's
    index and widths, sits on its argument (on the starred list the layers came from), uses what the path assumes (``assert d == 6``), and the broken ``Sequential`` gives an
    unknown output with no second conflict."""
    (built, values), facts = _nn_run(NN_BUILT, "M.__init__", "M.forward")
    assert _conflicts(facts) == [
        ("layer-chain", "Sequential", "nn.Linear(6, 2)", "layer 2 expects 6 input features but the layer before it produces 8", None, None, "M.__init__"),
        ("layer-chain", "Sequential", "nn.Linear(5, 3)", "layer 3 expects 5 input features but the layer before it produces 2", None, None, "M.__init__"),
        ("layer-chain", "Sequential", "[nn.Linear(4, 8), nn.Linear(6, 2)]",
         "layer 1 expects 6 input features but the layer before it produces 8", None, None, "M.__init__"),
        ("layer-chain", "Sequential", "nn.Linear(d, 2)", "layer 1 expects d input features but the layer before it produces 8", None, None, "M.forward"),
    ]
    assert all("__broken__" in built[n].params for n in ("self.bad", "self.bad2", "self.bad3"))
    assert "__broken__" not in built["self.seq1"].params


NN_FORWARD = """
from mylib import tokens


def make(d_in, d_out):
    return nn.Linear(d_in, d_out)


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.fc2 = nn.Linear(6, 2)
        self.made = make(6, 2)
        self.fk = nn.Linear(tokens(), 8)
        self.emb = nn.Embedding(10, 4)
        self.drop = nn.Dropout(0.1)
        self.idn = nn.Identity()
        self.d1d = nn.Dropout1d(0.1)
        self.d2d = nn.Dropout2d(0.1)
        self.ad = nn.AlphaDropout(0.1)
        self.act = nn.GELU()
        self.gru = nn.GRU(4, 8)

    def forward(self, x: Float[Tensor, "b t 4"], x6: Float[Tensor, "b t 6"], wide: Float[Tensor, "*n"],
                ids: Int[Tensor, "b t"], u):
        e = self.emb(ids)
        h = x * 2
        d1 = self.drop(h)
        d2 = self.idn(h)
        d3 = self.d1d(h)
        d4 = self.d2d(h)
        d5 = self.ad(h)
        d6 = self.drop(input=h)
        g1 = self.act(self.fc(x))
        g2 = self.act(e)
        g3 = self.act(input=e)
        r1 = self.gru(x)
        a1 = self.fc2(self.fc(x))
        a2 = self.made(self.fc(x))
        a3 = self.fc(x6)
        v = tokens()
        y1 = self.fk(v)
        z1 = v
        y2 = self.fc(v)
        z2 = v
        y3 = self.fc(input=x)
        ut = torch.tensor(u)
        y4 = self.fc(input=ut)
        y5 = self.fc(wide)
        y6 = self.fc(ut)
        z6 = ut
        y7 = self.fc(input=u)
        lin = nn.Linear(4, 8)
        y8 = lin(x)
        return x


fc1 = nn.Linear(4, 8)
fc2 = nn.Linear(6, 2)
top = fc2(fc1(torch.zeros(2, 4)))
"""


def test_nn_layers_called_dropouts_activations_and_unknown_layers() -> None:
    """``forward`` / ``_input`` / ``_shape_preserving``: a dropout or identity returns its input itself
    (by position or ``input=``), an activation a new tensor of the input's shape and lineage that
    keeps the layer its input came out of; a layer without a rule (``nn.GRU``) is an unknown callee;
    the call's event keeps its keyword nodes."""
    (values,), facts = _nn_run(NN_FORWARD, "M.forward")
    assert all(values[name] is values["h"] for name in ("d1", "d2", "d3", "d4", "d5", "d6"))
    g1, g2, g3 = values["g1"], values["g2"], values["g3"]
    assert [(_shape(g), _code(g.node)) for g in (g1, g2, g3)] == [
        ("(b, t, 8)", "self.act(self.fc(x))"), ("(b, t, 4)", "self.act(e)"), ("(b, t, 4)", "self.act(input=e)"),
    ]
    assert g1.tag(LayerOutputTag).label == "self.fc" and not g2.has(LayerOutputTag)
    assert None not in g1.tags and None not in g2.tags and g2.has(TokenEmbeddingTag) and g3.has(TokenEmbeddingTag)
    r1 = values["r1"]
    assert _shape(r1) is None and r1.tag(PositionTag).kind == "unknown" and _code(r1.tag(PositionTag).node) == "self.gru(x)"
    event = next(e for e in facts.events if e.op == "module.Linear" and _code(e.node) == "self.fc(input=x)")
    assert [(key, _code(node)) for key, node in event.kwarg_nodes.items()] == [("input", "x")]


def test_nn_linear_layers_widths_conflicts_unknown_inputs_and_what_they_learn() -> None:
    """``_linear`` / ``linear_output`` / ``_refine_input`` / ``_sizes_written`` / ``_applied_in`` /
    ``_label``: a layer fed another layer's output of the wrong width is a ``layer-chain`` conflict
    placed at the layer's constructor (or the call of the helper that built it from its arguments),
    naming the function that applies it; fed another tensor, a ``linear`` conflict at the call; the
    hint names both widths. An input of unknown shape gives ``(*, out)`` when both widths are known
    and nothing when ``in_features`` is not; a tensor variable of unknown shape passed by name
    learns its last dim (not one passed by keyword, not a value that is not a tensor); an input of
    unknown rank with no last dim gives nothing; a layer held in a local is labelled ``nn.Linear``."""
    (values,), facts = _nn_run(NN_FORWARD, "M.forward")
    hint = "the widths disagree: {0} is built with in_features=6 but receives 8; build it with in_features=8, or give it an input of width 6"
    assert _conflicts(facts) == [
        ("layer-chain", "linear", "fc2(fc1(torch.zeros(2, 4)))",
         "nn.Linear expects 6 input features but the input has shape (2, 8) (last dim 8) where `<module>` applies it",
         hint.format("nn.Linear"), "nn.Linear(6, 2)", "<module>"),
        ("layer-chain", "linear", "self.fc2(self.fc(x))",
         "self.fc2 expects 6 input features but the input has shape (b, t, 8) (last dim 8) where `M.forward` applies it",
         hint.format("self.fc2"), "nn.Linear(6, 2)", "M.forward"),
        ("layer-chain", "linear", "self.made(self.fc(x))",
         "self.made expects 6 input features but the input has shape (b, t, 8) (last dim 8) where `M.forward` applies it",
         hint.format("self.made"), "make(6, 2)", "M.forward"),
        ("linear", "linear", "self.fc(x6)", "self.fc expects 4 input features but the input has shape (b, t, 6) (last dim 6)",
         "the widths disagree: self.fc is built with in_features=4 but receives 6; build it with in_features=6, or give it an input of width 4",
         None, "M.forward"),
    ]
    found = {name: (_shape(values[name]), values[name].dtype, _code(values[name].node)) for name in ("y1", "y2", "y3", "y4", "y5", "y6", "y7")}
    assert found == {
        "y1": (None, "float", "self.fk(v)"), "y2": ("(*, 8)", "float", "self.fc(v)"), "y3": ("(b, t, 8)", "float", "self.fc(input=x)"),
        "y4": ("(*, 8)", "float", "self.fc(input=ut)"), "y5": (None, "float", "self.fc(wide)"), "y6": ("(*, 8)", "float", "self.fc(ut)"),
        "y7": ("(*, 8)", "float", "self.fc(input=u)"),
    }
    assert values["z1"] is UNKNOWN and values["z2"] is UNKNOWN
    z6 = values["z6"]
    assert (_shape(z6), z6.dtype, _code(z6.node)) == ("(*, 4)", "float", "ut")
    projections = {name: values[name].tag(ProjectionTag) for name in ("y3", "y4", "y7")}
    assert projections["y7"].source is None and projections["y4"].source is values["ut"]
    assert _code(projections["y3"].node) == "self.fc(input=x)" and projections["y3"].ident is projections["y4"].ident
    assert values["y8"].tag(LayerOutputTag).label == "nn.Linear"


NN_CONV = """
from mylib import tokens


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 8, 3)
        self.c2 = nn.Conv2d(3, 16, kernel_size=(3, 5), stride=2, padding=1)
        self.c3 = nn.Conv3d(2, 4, 3, padding="same")
        self.pe = nn.Conv2d(3, 12, 4, stride=4)
        self.cv = nn.Conv2d(3, 6, 3, padding="valid", dilation=2)
        self.cw = nn.Conv2d(5, 6, 3)
        self.c0 = nn.Conv2d(3, tokens(), 3)
        self.c8 = nn.Conv2d(3, 8, 2, stride=2, padding=1)
        self.ct = nn.Conv2d(3, 8, (3, 3), stride=(2, 1), padding=(1, 2), dilation=(1, 2))

    def forward(self, img: Float[Tensor, "b 3 32 32"], seq: Float[Tensor, "b 4 20"], vol: Float[Tensor, "b 2 5 6 7"],
                one: Float[Tensor, "3 32 32"], many: Float[Tensor, "*n 3 32 32"], two: Float[Tensor, "*n 32 32"],
                five: Float[Tensor, "a b 3 32 32"], u):
        c1 = self.c1(seq)
        c2 = self.c2(img)
        c3 = self.c3(vol)
        c4 = self.pe(img)
        c5 = self.cv(img)
        c6 = self.cw(self.c2(img))
        c7 = self.c2(u)
        c8 = self.c8(img)
        c9 = self.ct(img)
        c10 = self.c2(one)
        c11 = self.c2(many)
        c12 = self.c2(two)
        c13 = self.c2(five)
        c14 = self.c0(img)
        c15 = self.c2(torch.softmax(img, -1))
        c16 = self.c2(torch.softmax(torch.tensor(u), -1))
        c17 = self.c2(input=img)
        c18 = self.cw(img)
        c19 = self.c0(u)
        return img
"""


def test_nn_convolutions_sizes_channels_unknown_inputs_and_conflicts() -> None:
    """``_convolution`` / ``_per_axis`` / ``_conv_size``: each spatial size is ``(L + 2p - d(k - 1) - 1) //
    s + 1`` with per-axis tuples for kernel, stride, padding and dilation, ``"same"`` keeps it,
    ``"valid"`` pads nothing, a non-overlapping patch split is ``L // p`` (sizes as torch gives them);
    an unbatched input keeps its rank, a variadic one its leading dims; an input of unknown shape,
    of too few known dims or of a rank torch rejects (a 5-D input to ``Conv2d``) gives the channels
    and anonymous spatial sizes; unknown ``out_channels`` is an anonymous dim. Channels that disagree
    are a ``linear`` conflict at the call, or, fed another layer's output, a ``layer-chain`` conflict
    at the constructor naming the function that applies it."""
    (values,), facts = _nn_run(NN_CONV, "M.forward")
    found = {name: _shape(values[name]) for name in values if name.startswith("c") and name not in ("c6", "c13", "c18")}
    assert found == {
        "c1": "(b, 8, 18)", "c2": "(b, 16, 16, 15)", "c3": "(b, 4, 5, 6, 7)", "c4": "(b, 12, 8, 8)",
        "c5": "(b, 6, 28, 28)", "c7": "(*, 16, _, _)", "c8": "(b, 8, 17, 17)",
        "c9": "(b, 8, 16, 32)", "c10": "(16, 16, 15)", "c11": "(*, 16, 16, 15)", "c12": "(*, 16, _, _)",
        "c14": "(b, _, 30, 30)", "c15": "(b, 16, 16, 15)", "c16": "(*, 16, _, _)",
        "c17": "(b, 16, 16, 15)", "c19": "(*, _, _, _)",
    }
    # torch raises for c6 and c18 (channels) and c13 (a 5-D input to Conv2d): the conflicts below, and
    # for c13 no sizes (spatial sizes unknown, rank unknown)
    assert values["c13"].shape.variadic and str(values["c13"].shape).endswith(", _, _)")
    assert values["c11"].shape.variadic and values["c7"].shape.variadic
    for name in ("c2", "c7", "c17"):
        value = values[name]
        assert (value.dtype, _code(value.node), value.tag(LayerOutputTag).label) == ("float", _code(value.node), "self.c2")
        assert _code(value.node).startswith("self.c2(")
    assert values["c15"].has(NormalisedTag) and values["c16"].has(NormalisedTag) and not values["c2"].has(NormalisedTag)
    assert _conflicts(facts) == [
        ("layer-chain", "conv", "self.cw(self.c2(img))",
         "self.cw expects 5 input channels but the input has shape (b, 16, 16, 15) (16 channels at axis -3) where `M.forward` applies it",
         None, "nn.Conv2d(5, 6, 3)", "M.forward"),
        ("linear", "conv", "self.cw(img)", "self.cw expects 5 input channels but the input has shape (b, 3, 32, 32) (3 channels at axis -3)",
         None, None, "M.forward"),
    ]


NN_LAYERS = """
from mylib import tokens


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.pos = nn.Embedding(32, 4)
        self.ek = nn.Embedding(10, tokens())
        self.ln = nn.LayerNorm(4)
        self.rms = nn.RMSNorm(8)
        self.fc = nn.Linear(4, 8)
        self.sm = nn.Softmax(dim=-1)
        self.lsm = nn.LogSoftmax(1)
        self.seq = nn.Sequential(nn.Linear(4, 8))
        self.mha = nn.MultiheadAttention(4, 2, batch_first=True)
        self.enc = nn.TransformerEncoderLayer(4, 2, batch_first=True)
        self.dec = nn.TransformerDecoderLayer(4, 2, batch_first=True)
        self.stack = nn.TransformerEncoder(self.enc, 2)
        self.tr = nn.Transformer(d_model=4, nhead=2, batch_first=True)

    def forward(self, x: Float[Tensor, "b t 4"], ids: Int[Tensor, "b t"], vids: Int[Tensor, "*n t"],
                xd: Float[Tensor, "b t d"], xv: Float[Tensor, "*n t d"], tgt: Float[Tensor, "b s 4"], u):
        v = tokens()
        e1 = self.emb(ids)
        e2 = self.pos(torch.arange(ids.shape[1]))
        e3 = self.emb(vids)
        e4 = self.ek(ids)
        e5 = self.emb(input=ids)
        e6 = self.emb(v)
        e7 = self.pos(input=torch.arange(ids.shape[1]))
        n1 = self.ln(x)
        n2 = self.rms(self.fc(x))
        n3 = self.ln(e1)
        n4 = self.ln(v)
        n5 = self.ln(input=x)
        p1 = self.sm(x)
        p2 = self.lsm(input=x)
        q1 = self.seq(x)
        ut = torch.tensor(u)
        q2 = self.seq(ut)
        q3 = ut
        o1, w1 = self.mha(x, tgt, tgt)
        o2, w2 = self.mha(query=xd, key=xd, value=xd)
        o3, w3 = self.mha(xv, xv, xv)
        o4, w4 = self.mha(e1, e1, e1)
        o5 = self.mha(v, v, v)
        t1 = self.enc(x)
        t2 = self.enc(src=e1)
        t3 = self.dec(tgt, x)
        t4 = self.dec(tgt=tgt, memory=x)
        t5 = self.stack(x)
        t6 = self.enc(o4)
        r1 = self.tr(x, tgt)
        r2 = self.tr(src=x, tgt=e1)
        return x
"""


def _nn_layers():
    (values,), facts = _nn_run(NN_LAYERS, "M.forward")
    return values, facts


def test_nn_embeddings_tokens_positions_and_ids_of_unknown_origin() -> None:
    """``_embedding``: ids (by position or ``input=``, variadic or not) give ``ids + (dim,)``, a token
    embedding of the call and width that keeps the ids' lineage; positions give a position table as
    long as the positions (not sliced); ids the engine cannot see give ``(*, dim)`` and a "maybe
    positional" tag of the call; an unknown width gives no shape."""
    values, _ = _nn_layers()
    found = {name: (_shape(values[name]), values[name].dtype, _code(values[name].node)) for name in ("e1", "e2", "e3", "e4", "e5", "e6", "e7")}
    assert found == {
        "e1": ("(b, t, 4)", "float", "self.emb(ids)"), "e2": ("(t, 4)", "float", "self.pos(torch.arange(ids.shape[1]))"),
        "e3": ("(*, t, 4)", "float", "self.emb(vids)"), "e4": (None, "float", "self.ek(ids)"),
        "e5": ("(b, t, 4)", "float", "self.emb(input=ids)"), "e6": ("(*, 4)", "float", "self.emb(v)"),
        "e7": ("(t, 4)", "float", "self.pos(input=torch.arange(ids.shape[1]))"),
    }
    assert values["e3"].shape.variadic
    for name in ("e1", "e5"):
        token = values[name].tag(TokenEmbeddingTag)
        assert (_code(token.node), str(token.width)) == (_code(values[name].node), "4")
        assert not values[name].has(PositionTag)
    for name in ("e2", "e7"):
        position = values[name].tag(PositionTag)
        assert (_code(position.node), position.kind, str(position.full_length), position.sliced) == (_code(values[name].node), "table", "t", False)
        assert values[name].tags == (position,)
    unseen = values["e6"].tag(PositionTag)
    assert (_code(unseen.node), unseen.kind) == ("self.emb(v)", "unknown") and values["e6"].has(TokenEmbeddingTag)


def test_nn_norms_softmax_layers_and_sequential_inputs() -> None:
    """``_layer_norm``: the input's shape and lineage, float when unknown, a "maybe scaled" tag of the
    call (the norm's gain), the layer the input came out of kept; ``_softmax_module``: the ``softmax``
    op with the layer's ``dim`` (the event's input node, call node and ``dim``), by position or
    ``input=``; ``_sequential``: the input by position or ``input=``, its layers applied at the
    ``Sequential``'s call, an input of unknown shape passed by name learns the first layer's width."""
    values, facts = _nn_layers()
    found = {name: (_shape(values[name]), values[name].dtype, _code(values[name].node)) for name in ("n1", "n2", "n3", "n4", "n5", "p1", "p2", "q1", "q2", "q3")}
    assert found == {
        "n1": ("(b, t, 4)", "float", "self.ln(x)"), "n2": ("(b, t, 8)", "float", "self.rms(self.fc(x))"),
        "n3": ("(b, t, 4)", "float", "self.ln(e1)"), "n4": (None, "float", "self.ln(v)"), "n5": ("(b, t, 4)", "float", "self.ln(input=x)"),
        "p1": ("(b, t, 4)", "float", "self.sm(x)"), "p2": ("(b, t, 4)", "float", "self.lsm(input=x)"),
        "q1": ("(b, t, 8)", "float", "self.seq(x)"), "q2": ("(*, 8)", "float", "self.seq(ut)"), "q3": ("(*, 4)", "float", "ut"),
    }
    for name in ("n1", "n4", "n5"):
        scale = values[name].tag(ScaleTag)
        assert (scale.factor, _code(scale.node)) == (None, _code(values[name].node))
        assert not values[name].has(LayerOutputTag) and None not in values[name].tags
    assert values["n2"].tag(LayerOutputTag).label == "self.fc" and values["n3"].has(TokenEmbeddingTag)
    softmaxes = [(_code(e.node), [_code(n) for n in e.arg_nodes], e.kwargs["dim"].dim.value) for e in facts.events if e.op == "softmax"]
    assert softmaxes == [("self.sm(x)", ["x"], -1), ("self.lsm(input=x)", [], 1)]
    assert values["p1"].has(NormalisedTag) and values["p2"].has(NormalisedTag)


def test_nn_attention_layers_outputs_streams_and_weights() -> None:
    """``_multihead_attention``: the output has the query's shape (by position or ``query=``) with
    ``embed_dim`` last (a variadic query keeps its own), the query's lineage, an attention-output tag
    and the query's stream through the call; the weights are a float tensor of unknown shape; an
    unseen query gives an output of unknown shape. ``_encoder_layer``: the ``src`` (by position or
    keyword; a decoder layer's ``tgt`` by position or keyword, as torch 2.13 gives it) with its
    dtype, lineage, tag and stream. ``_transformer``: shaped like ``tgt`` (by position or
    keyword), with its dtype and lineage."""
    values, _ = _nn_layers()
    names = ("o1", "o2", "o3", "o4", "t1", "t2", "t3", "t4", "t5", "t6", "r1", "r2")
    found = {name: (_shape(values[name]), values[name].dtype, _code(values[name].node)) for name in names}
    assert found == {
        "o1": ("(b, t, 4)", "float", "self.mha(x, tgt, tgt)"), "o2": ("(b, t, 4)", "float", "self.mha(query=xd, key=xd, value=xd)"),
        "o3": ("(*, t, d)", "float", "self.mha(xv, xv, xv)"), "o4": ("(b, t, 4)", "float", "self.mha(e1, e1, e1)"),
        "t1": ("(b, t, 4)", "float", "self.enc(x)"), "t2": ("(b, t, 4)", "float", "self.enc(src=e1)"),
        "t3": ("(b, s, 4)", "float", "self.dec(tgt, x)"), "t4": ("(b, s, 4)", "float", "self.dec(tgt=tgt, memory=x)"),
        "t5": ("(b, t, 4)", "float", "self.stack(x)"), "t6": ("(b, t, 4)", "float", "self.enc(o4)"),
        "r1": ("(b, s, 4)", "float", "self.tr(x, tgt)"), "r2": ("(b, t, 4)", "float", "self.tr(src=x, tgt=e1)"),
    }
    for name in names:
        value = values[name]
        assert _code(value.tag(AttentionOutputTag).node) == _code(value.node)
        if not name.startswith("r"):
            assert _code(value.node) in {_code(site) for site in value.tag(StreamTag).sites}
    assert {_code(site) for site in values["t6"].tag(StreamTag).sites} == {"self.mha(e1, e1, e1)", "self.enc(o4)"}
    assert [values[name].has(TokenEmbeddingTag) for name in ("o1", "o4", "t1", "t2", "t6", "r1", "r2")] == [False, True, False, True, True, False, True]
    for name in ("w1", "w2", "w3"):
        assert (values[name].shape, values[name].dtype, values[name].tags, _code(values[name].node)) == (None, "float", (), _code(values[f"o{name[1]}"].node))
    unseen = values["o5"]
    assert isinstance(unseen, TupleValue) and _shape(unseen.items[0]) is None and unseen.items[0].has(AttentionOutputTag)


def test_nn_loss_layers_keep_the_model_call_their_input_came_from() -> None:
    """``_cross_entropy_module``: a 0-dim float loss at the call that keeps which model call its
    input (by position or ``input=``) came from."""
    module, facts = training_facts_of(
        """
        model = Net()
        crit = nn.CrossEntropyLoss()
        for step in range(10):
            loss = crit(input=model(ids).flatten(0, 1), target=ids.flatten())
            loss.backward()
            other = crit(model(ids).flatten(0, 1), ids.flatten())
        """
    )
    assert facts.internal_errors == []
    losses = [e.result for e in facts.events if e.op == "module.CrossEntropyLoss"]
    assert [(str(loss.shape), loss.dtype, module.code_for_node(loss.node), loss.has(ModelOutputTag)) for loss in losses] == [
        ("()", "float", "crit(input=model(ids).flatten(0, 1), target=ids.flatten())", True),
        ("()", "float", "crit(model(ids).flatten(0, 1), ids.flatten())", True),
    ]


NN_METHODS = """
from mylib import tokens


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.fk = nn.Linear(tokens(), 8)
        self.fo = nn.Linear(4, tokens())
        self.emb = nn.Embedding(10, 6)
        self.ek = nn.Embedding(tokens(), 6)
        self.ln = nn.LayerNorm(4)
        self.rms = nn.RMSNorm(4)
        self.lk = nn.LayerNorm(tokens())
        self.conv = nn.Conv2d(3, 8, 3)
        self.ml = nn.ModuleList([nn.Linear(4, 8)])
        self.seq = nn.Sequential(nn.Linear(4, 8))
        self.rep = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self.md = nn.ModuleDict({"a": nn.Linear(4, 8), "b": nn.Linear(4, 2)})
        self.ml.append(nn.Linear(8, 2))
        self.seq.append(nn.Linear(8, 3))
        self.rep.append(nn.Linear(4, 5))
        self.ex = nn.ModuleList()
        self.ex.extend([nn.Linear(4, 6), nn.Linear(6, 2)])
        self.er = nn.ModuleList()
        self.er.extend([nn.Linear(4, 4) for _ in range(3)])
        self.eu = nn.ModuleList([nn.Linear(4, 4)])
        self.eu.extend(tokens())
        self.ee = nn.ModuleList([nn.Linear(4, 4)])
        self.ee.extend([nn.Linear(4, 4) for _ in range(3)])
        self.eq = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.eq.extend([nn.Linear(4, 4)])
        self.register_buffer("mask", torch.tril(torch.ones(4, 4)))
        self.register_buffer(name="m2", tensor=torch.ones(3))
        self.register_parameter("w", nn.Parameter(torch.zeros(2, 2)))
        self.register_parameter(name="w2", param=nn.Parameter(torch.zeros(5)))
        self.register_parameter("w3", param=nn.Parameter(torch.zeros(6)))
        pe = torch.zeros(32, 12)
        position = torch.arange(0, 32).unsqueeze(1)
        pe[:, 0::2] = torch.sin(position * 0.5)
        self.register_buffer("pe", pe.unsqueeze(0))
        self.register_buffer("pe2", pe)
        self.register_buffer(tokens(), pe)

    def forward(self, x: Float[Tensor, "b t 4"]):
        w1 = self.fc.weight
        w2 = self.fk.weight
        w3 = self.emb.weight
        w4 = self.ek.weight
        w5 = self.ln.weight
        w6 = self.rms.weight
        w7 = self.lk.weight
        w8 = self.conv.weight
        b1 = self.fc.bias
        b2 = self.fo.bias
        f1 = self.fc.forward(x)
        f2 = self.fc.__call__(x)
        f3 = self.fc.type(torch.float64)
        f4 = self.fc.zero_grad()
        h = x
        for layer in self.ml:
            h = layer(h)
        a1 = h
        a2 = self.seq(x)
        h = x
        for layer in self.ex:
            h = layer(h)
        a3 = h
        a4 = self.md.values()
        a5 = self.md.keys()
        a6 = self.md.items()
        a7 = self.ml.values()
        m1 = self.mask
        m2 = self.m2
        m3 = self.w
        m4 = self.w2
        m5 = self.pe
        m6 = self.pe2
        m7 = self.w3
        return x
"""


def _nn_methods():
    (built, values), facts = _nn_run(NN_METHODS, "M.__init__", "M.forward")
    return built, values, facts


def test_nn_layer_weights_and_biases_are_parameters_of_the_layer() -> None:
    """``module_attribute``: ``weight`` is ``(out, in)`` for a ``Linear``, ``(num, dim)`` for an
    ``Embedding``, ``(normalized,)`` for a ``LayerNorm`` / ``RMSNorm`` (torch's shapes), unknown
    when a size is unknown or for other layers; ``bias`` is ``(out,)``; both float parameters of the
    layer at the attribute."""
    _, values, _ = _nn_methods()
    found = {name: (_shape(values[name]), values[name].dtype, _code(values[name].node)) for name in values if name[0] in "wb" and name[1:].isdigit()}
    assert found == {
        "w1": ("(8, 4)", "float", "self.fc.weight"), "w2": (None, "float", "self.fk.weight"), "w3": ("(10, 6)", "float", "self.emb.weight"),
        "w4": (None, "float", "self.ek.weight"), "w5": ("(4)", "float", "self.ln.weight"), "w6": ("(4)", "float", "self.rms.weight"),
        "w7": (None, "float", "self.lk.weight"), "w8": (None, "float", "self.conv.weight"), "b1": ("(8)", "float", "self.fc.bias"),
        "b2": (None, "float", "self.fo.bias"),
    }
    layers = {"w1": "self.fc", "w3": "self.emb", "w5": "self.ln", "b1": "self.fc", "b2": "self.fo"}
    assert {name: values[name].tag(ParameterTag).ident.label for name in layers} == layers
    assert all(values[name].tags == (values[name].tag(ParameterTag),) for name in layers)


def test_nn_layer_methods_forward_containers_and_dict_views() -> None:
    """``call_module_method``: ``forward`` / ``__call__`` run the layer; ``type()`` returns the layer,
    ``zero_grad()`` nothing known; ``append`` adds a layer to a ``ModuleList`` or ``Sequential`` (not
    to a repeated one), ``extend`` adds a list's layers, makes an empty list a repeated one, and
    forgets what any other list holds; a ``ModuleDict``'s ``values`` / ``keys`` / ``items`` are its
    layers, keys and pairs (a ``ModuleList`` has no ``values``: unknown)."""
    built, values, _ = _nn_methods()
    assert [(_shape(values[n]), _code(values[n].node)) for n in ("f1", "f2")] == [("(b, t, 8)", "self.fc.forward(x)"), ("(b, t, 8)", "self.fc.__call__(x)")]
    assert values["f3"] is built["self.fc"] and values["f4"] is UNKNOWN and values["a7"] is UNKNOWN
    assert [_shape(values[n]) for n in ("a1", "a2", "a3")] == ["(b, t, 2)", "(b, t, 3)", "(b, t, 2)"]
    lists = {name: ([str(item.params["out_features"].dim) for item in built[name].items], built[name].repeated)
             for name in ("self.ml", "self.seq", "self.rep", "self.ex", "self.er", "self.eu", "self.ee", "self.eq")}
    assert lists == {
        "self.ml": (["8", "2"], False), "self.seq": (["8", "3"], False), "self.rep": (["4"], True), "self.ex": (["6", "2"], False),
        "self.er": (["4"], True), "self.eu": ([], False), "self.ee": ([], False), "self.eq": ([], False),
    }
    a4, a5, a6 = values["a4"], values["a5"], values["a6"]
    layers = built["self.md"].named
    assert [item for item in a4.items] == [layers["a"], layers["b"]]
    assert [item.value for item in a5.items] == ["a", "b"]
    assert [(pair.items[0].value, pair.items[1]) for pair in a6.items] == [("a", layers["a"]), ("b", layers["b"])]


def test_nn_registered_buffers_and_parameters_become_attributes() -> None:
    """``register``: ``register_buffer`` / ``register_parameter`` by position or keyword (``name=``,
    ``tensor=``, ``param=``) make the tensor an attribute, a parameter of its own identity (the
    attribute's name, the call) with its shape; a position table registered as a buffer is a table
    as long as its first axis that is not 1; a name that is not a known string (``tokens()``) is
    skipped without an error."""
    built, values, _ = _nn_methods()
    found = {name: _shape(values[name]) for name in ("m1", "m2", "m3", "m4", "m5", "m6", "m7")}
    assert found == {"m1": "(4, 4)", "m2": "(3)", "m3": "(2, 2)", "m4": "(5)", "m5": "(1, 32, 12)", "m6": "(32, 12)", "m7": "(6)"}
    for name, attribute in (("m1", "mask"), ("m2", "m2"), ("m3", "w"), ("m4", "w2"), ("m5", "pe"), ("m7", "w3")):
        tag = values[name].tag(ParameterTag)
        assert (tag.ident.label, _code(tag.ident.node).startswith("self.register_"), tag.shape) == (f"self.{attribute}", True, values[name].shape)
    assert values["m1"].has(TriangleTag) and not values["m1"].has(PositionTag)
    for name in ("m5", "m6"):
        table = values[name].tag(PositionTag)
        assert (table.kind, str(table.full_length), table.sliced) == ("table", "32", False)
        assert _code(table.node) == f'self.register_buffer("{name.replace("m5", "pe").replace("m6", "pe2")}", {"pe.unsqueeze(0)" if name == "m5" else "pe"})'


NN_ODD = """
from mylib import tokens


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.m0 = nn.Transformer.generate_square_subsequent_mask(tokens())
        self.register_buffer("one", torch.arange(1).unsqueeze(0))
        self.ck = nn.Conv2d(3, 8, (3,))
        self.kn = nn.Conv2d(3, 8, tokens())
        self.sn = nn.Conv2d(3, 8, 3, stride=(1,))
        self.pn = nn.Conv2d(3, 8, 3, padding=(1,))
        self.dn = nn.Conv2d(3, 8, 3, dilation=(1,))

    def forward(self, img: Float[Tensor, "b 3 32 32"], k: int):
        o = self.one
        assert k == 5
        conv = nn.Conv2d(k, 6, 3)
        c = conv(img)
        c1 = self.ck(img)
        c2 = self.kn(img)
        c3 = self.sn(img)
        c4 = self.pn(img)
        c5 = self.dn(img)
        return img
"""


def test_nn_sizes_the_engine_cannot_read_give_unknown_sizes() -> None:
    """A causal mask of unknown size has no shape; a position table of ones (``(1, 1)``) registered
    as a buffer has no known length; a convolution whose kernel size is unknown, whose kernel tuple
    has one item for two axes (torch raises) gives unknown spatial sizes, without an internal error;
    a stride, padding or dilation given as a one-item tuple is repeated over the axes, as torch does
    ((b, 8, 30, 30), (b, 8, 32, 32), (b, 8, 30, 30) in torch 2.13); channels that disagree under
    what the path assumes (``assert k == 5``, 3 channels given; torch raises) are a conflict."""
    (built, values), facts = _nn_run(NN_ODD, "M.__init__", "M.forward")
    assert (built["self.m0"].shape, built["self.m0"].dtype, built["self.m0"].tag(TriangleTag).full_size) == (None, "float", None)
    table = values["o"].tag(PositionTag)
    assert (table.kind, table.full_length, _shape(values["o"])) == ("table", None, "(1, 1)")
    assert [_shape(values[name]) for name in ("c1", "c2")] == ["(b, 8, _, _)"] * 2
    assert [_shape(values[name]) for name in ("c3", "c4", "c5")] == ["(b, 8, 30, 30)", "(b, 8, 32, 32)", "(b, 8, 30, 30)"]
    assert _conflicts(facts) == [
        ("linear", "conv", "conv(img)", "nn.Conv2d expects k input channels but the input has shape (b, 3, 32, 32) (3 channels at axis -3)",
         None, None, "M.forward"),
    ]


def test_dtype_promotion_is_torch_s_and_independent_of_set_order() -> None:
    """``promoted``: float over int over bool, as torch promotes (``ids * bool_mask`` is int64,
    ``torch.tensor([True, 1])`` too, anything with a float is floating), and nothing known gives
    None. Arithmetic and ``torch.tensor`` use it, so no result depends on a set's iteration order
    (the hash seed)."""
    from shapecheck.engine.ops.base import promoted

    cases = {
        frozenset({"int", "bool"}): "int", frozenset({"bool", "float"}): "float", frozenset({"int", "float", "bool"}): "float",
        frozenset({"bool"}): "bool", frozenset({"int"}): "int", frozenset(): None,
    }
    assert {kinds: promoted(kinds) for kinds in cases} == cases


def test_a_window_whose_length_is_too_complex_to_compute_has_no_length() -> None:
    """``_window``: when the shape algebra gives up on the length (``DimTooComplex``, an
    ``ArithmeticError``: here a full length of ``MAX_TERMS`` symbols minus one), the window keeps
    its offset and has no known length, never a made-up one."""
    from shapecheck.engine.domain.values import IntValue
    from shapecheck.engine.ops.windows import _window
    from shapecheck.engine.symbolic.dims import MAX_TERMS, Dim

    full = sum((Dim.sym(f"s{i}") for i in range(MAX_TERMS)), Dim.const(0))
    assert _window((None, IntValue(Dim.const(-1)), None), full) == (Dim.const(0), None)
    assert _window((None, IntValue(Dim.const(-1)), None), Dim.sym("t")) == (Dim.const(0), Dim.sym("t") - 1)


def test_a_layer_called_by_a_script_keeps_where_its_keyword_arguments_are() -> None:
    """``tag_model_inputs`` rebuilds the call of a script's model with its keyword nodes: an integer
    ``attn_mask=`` given to a script-level ``nn.MultiheadAttention`` is reported on the mask (SC201
    reads the keyword's node), not on the whole call."""
    from shapecheck.linter import lint_source

    source = textwrap.dedent(
        """
        import torch
        import torch.nn as nn

        mha = nn.MultiheadAttention(8, 2, batch_first=True)
        x = torch.randn(2, 5, 8)
        mask = torch.ones(5, 5).long()
        out, _ = mha(x, x, x, attn_mask=mask)
        """
    )
    result = lint_source(source, "script.py", {"SC201"})
    assert [(d.code, d.span.line, d.span.column) for d in result.diagnostics] == [("SC201", 8, 33)]  # 1-based: `mask`


def test_one_token_embedding_broadcast_over_other_positions_is_no_longer_the_tokens() -> None:
    """``tensor_binary``: an embedding broadcast over the other operand's axes is a bias or a gain,
    not the tokens, whether added or multiplied (one token's embedding ``(b, 1, 8)`` gating every
    position of ``x``); token embeddings times a per-position mask ``(b, t, 1)`` are still the tokens."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(100, 8)

            def forward(self, ids: Int[Tensor, "b t"], x: Float[Tensor, "b t 8"], m: Float[Tensor, "b t 1"]):
                e = self.emb(ids)
                g = e[:, :1]
                y1 = g * x
                y2 = x / g
                y3 = e * m
                y4 = g + x
                return y1
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    found = {name: (_shape(values[name]), values[name].has(TokenEmbeddingTag)) for name in ("g", "y1", "y2", "y3", "y4")}
    assert found == {
        "g": ("(b, 1, 8)", True), "y1": ("(b, t, 8)", False), "y2": ("(b, t, 8)", False), "y3": ("(b, t, 8)", True),
        "y4": ("(b, t, 8)", False),
    }


def test_scores_plus_a_maybe_positional_bias_keep_their_own_positions() -> None:
    """``tensor_binary``: scores of tokens with added positions, plus a bias an unseen callee made
    (``PositionTag`` "unknown"), keep their own "added" positions, whichever side the bias is on."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(100, 8)
                self.pos = nn.Embedding(16, 8)

            def forward(self, ids: Int[Tensor, "b t"], helper):
                x = self.emb(ids) + self.pos(torch.arange(ids.shape[1]))
                scores = x @ x.transpose(-2, -1)
                bias = helper(x)
                s1 = bias + scores
                s2 = scores + bias
                return s1
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    found = {name: (_shape(values[name]), values[name].tag(PositionTag).kind) for name in ("scores", "bias", "s1", "s2")}
    assert found == {"scores": ("(b, t, t)", "added"), "bias": (None, "unknown"), "s1": ("(b, t, t)", "added"), "s2": ("(b, t, t)", "added")}


def test_a_missing_key_is_the_engines_unknown_never_pythons_none() -> None:
    """``index_value``: a key a dict or an ``nn.ModuleDict`` is not known to hold (``d["b"]``, the
    layer ``self.layers["b"]``) reads as the engine's UNKNOWN, a value every op handles, never as
    Python's ``None`` (not a value of the engine: it would be stored as one, ``[y, x][0]`` too)."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleDict({"a": nn.Linear(4, 8)})

            def forward(self, x: Float[Tensor, "b 4"]):
                d = {"a": x}
                y = d["b"]
                first = [y, x][0]
                layer = self.layers["b"]
                return x
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    assert [values[name] is UNKNOWN for name in ("y", "first", "layer")] == [True, True, True]


def test_slicing_off_the_end_of_a_length_that_is_already_an_expression() -> None:
    """``_slice_length``: ``y[:, :-1]`` of a ``y`` whose length is ``t - 1`` has ``t - 2`` positions,
    as torch gives (the length need not be a single name)."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t 4"]):
            y = x[:, 1:]
            z = y[:, :-1]
            return z
        """
    )
    assert [_shape(values[name]) for name in ("y", "z")] == ["(b, t-1, 4)", "(b, t-2, 4)"] and conflicts == []


def test_running_sums_products_rolls_and_flips_move_a_windows_tokens() -> None:
    """``_elementwise``: after ``cumsum``, ``cumprod``, ``roll`` or ``flip`` a window of a token
    sequence no longer holds its tokens where they were (its origin becomes opaque, so SC603 does
    not compare its offset); an elementwise op that keeps each token in place (``abs``) keeps it."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        def f(data: Int[Tensor, "n"], i: int):
            x = data[i:i + 8]
            c1 = torch.cumsum(x, dim=0)
            c2 = torch.cumprod(x, dim=0)
            r = torch.roll(x, 1)
            fl = torch.flip(x, (0,))
            same = torch.abs(x)
            return x
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    found = {name: (_shape(values[name]), values[name].tag(SequenceOriginTag).opaque) for name in ("x", "c1", "c2", "r", "fl", "same")}
    assert found == {"x": ("(8)", False), "c1": ("(8)", True), "c2": ("(8)", True), "r": ("(8)", True), "fl": ("(8)", True), "same": ("(8)", False)}


def test_a_frequency_table_names_the_call_that_made_it() -> None:
    """``_elementwise`` (``exp``), ``_pow`` and the ``**`` operator: the log-linear frequency tag of a
    sinusoidal table (what SC304 judges) keeps the node of the call or operator that made it, where
    a finding on the formula lands."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        def f(d: int):
            div1 = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
            div2 = torch.pow(10000.0, torch.arange(0, d, 2) / d)
            div3 = 10000.0 ** (torch.arange(0, d, 2) / d)
            return div1
        """
    ))
    from shapecheck.engine.ops import frequencies

    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert [_code(values[name].tag(frequencies.LogLinear).node) for name in ("div1", "div2", "div3")] == [
        "torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))",
        "torch.pow(10000.0, torch.arange(0, d, 2) / d)",
        "10000.0 ** (torch.arange(0, d, 2) / d)",
    ]


def test_masks_conditions_and_elementwise_maxima_broadcast_with_the_paths_assumptions() -> None:
    """``_masked_fill``, ``_where`` and ``torch.max(a, b)`` broadcast with what the path asserted:
    under ``assert mask.shape[-1] == 4`` a mask ``(b, 1, 1, n)`` cannot fill scores whose last axis
    is 8 (torch raises); under ``assert c.shape[0] == a.shape[0]`` a condition or an operand of
    size ``n`` fits ``t``. ``where`` also presumes that a size the engine invented (``torch.ones(1,
    helper())``) fits the other side, as torch requires for the call to run."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        def f(a: Float[Tensor, "t"], c: Float[Tensor, "n"], x: Float[Tensor, "b t"], helper):
            assert c.shape[0] == a.shape[0]
            w1 = torch.where(c > 0, a, 0.0)
            m3 = torch.max(a, c)
            keep = torch.ones(1, helper(), dtype=torch.bool)
            w2 = torch.where(keep, x, 0.0)
            return a


        def g(scores: Float[Tensor, "b h t 8"], mask: Bool[Tensor, "b 1 1 n"]):
            assert mask.shape[-1] == 4
            m1 = scores.masked_fill(mask, float("-inf"))
            return m1
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert {name: _shape(values[name]) for name in ("w1", "m3", "keep", "w2")} == {
        "w1": "(t)", "m3": "(t)", "keep": "(1, n1)", "w2": "(b, t)",
    }
    assert [(c.kind, c.op, c.detail) for c in facts.conflicts] == [
        ("mask-broadcast", "masked_fill", "mask of shape (b, 1, 1, n) cannot broadcast against (b, h, t, 8) (n vs 8)"),
    ]


def test_einops_einsum_patterns_become_torch_equations_letter_by_letter() -> None:
    """``_letters_equation``: each axis name gets the next letter, lower case then upper case (torch's
    einsum takes both), so 27 names reach ``A`` and 52 reach ``Z``; a 53rd name has no letter (None:
    the call is left unknown); an ellipsis may sit between named axes (``i ... j``)."""
    from shapecheck.engine.ops.patterns import _letters_equation

    names = [f"n{i}" for i in range(53)]
    assert _letters_equation(" ".join(names[:27]) + " -> " + names[26]) == "abcdefghijklmnopqrstuvwxyzA->A"
    assert _letters_equation(" ".join(names[:52]) + " -> " + names[51]).endswith("XYZ->Z")
    assert _letters_equation(" ".join(names) + " -> " + names[0]) is None
    assert _letters_equation("i ... j, j k -> i ... k") == "a...b,bc->a...c"


def test_an_einsum_that_sums_the_batch_away_makes_no_scores() -> None:
    """``_attention_role``: ``...id,...jd->...ij`` is q @ k^T for every example (scores);
    ``...id,...jd->ij`` also sums over the batch axes the ellipsis stands for, which no attention
    does (torch gives a ``(t, s)`` matrix): not scores."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"]):
            s1 = torch.einsum("...id,...jd->...ij", q, k)
            s2 = torch.einsum("...id,...jd->ij", q, k)
            return s1
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert [values[name].has(ScoresTag) for name in ("s1", "s2")] == [True, False]


def test_a_written_out_product_is_scores_only_in_the_scores_layout() -> None:
    """``_attention_role``: ``btc,bcs->bts`` with a transposed key is q @ k^T, scores with queries
    second to last and keys last; ``->tbs`` (batch moved inside) and ``->bst`` (keys before queries)
    are the same numbers in another layout, which the scores facts (a key axis at -1, a query axis
    at -2: masks, softmax dims) do not describe, so they are not called scores."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        def f(q: Float[Tensor, "b t c"], k: Float[Tensor, "b s c"]):
            s1 = torch.einsum("btc,bcs->bts", q, k.transpose(1, 2))
            s2 = torch.einsum("btc,bcs->tbs", q, k.transpose(1, 2))
            s3 = torch.einsum("btc,bcs->bst", q, k.transpose(1, 2))
            return s1
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert {name: (_shape(values[name]), values[name].has(ScoresTag)) for name in ("s1", "s2", "s3")} == {
        "s1": ("(b, t, s)", True), "s2": ("(t, b, s)", False), "s3": ("(b, s, t)", False),
    }


def test_an_einops_pattern_without_an_ellipsis_fixes_the_rank_of_a_variadic_input() -> None:
    """``einops_call``: a tensor known only by its trailing dims, ``(*, 4, 8)``, rearranged by ``n d ->
    d n`` is exactly ``(4, 8)`` (einops raises for any other rank); a leading ``1`` in the pattern is
    an axis of size 1. Shapes as einops gives them."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        import einops

        def f(x: Float[Tensor, "*batch 4 8"], y: Float[Tensor, "*batch 3 4"]):
            r1 = einops.rearrange(x, "n d -> d n")
            r2 = einops.rearrange(y, "1 n d -> n d")
            r3 = einops.rearrange(x, "b n d -> b d n")
            return r1
        """
    ))
    assert facts.internal_errors == [] and facts.conflicts == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert {name: _shape(values[name]) for name in ("r1", "r2", "r3")} == {"r1": "(8, 4)", "r2": "(3, 4)", "r3": "(b, 8, 4)"}


def test_joins_and_splits_at_the_edges() -> None:
    """``_cat`` with a variadic operand takes the other axes from the operand that knows most of them
    (``(*, 4)`` and ``(b, t, 4)`` give ``(b, t, 8)``), and gives up, without an internal error, when
    the joined size is too complex to compute (33 distinct widths); ``_unbind`` of a zero-size axis
    gives no tensor at all (torch: ``()``); ``_split`` of a zero-size axis by a size the engine does
    not know has unknown pieces (torch gives one empty piece: never "none"), by a known size one
    empty piece that is still piece 0 of its projection."""
    params = ", ".join(f'w{i}: Float[Tensor, "*batch d{i}"]' for i in range(33))
    names = ", ".join(f"w{i}" for i in range(33))
    facts = analyze_src(HEADER + textwrap.dedent(
        f"""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.empty = nn.Linear(8, 0)

            def forward(self, x: Float[Tensor, "*batch 4"], y: Float[Tensor, "b t 4"], h: Float[Tensor, "b 8"],
                        e: Float[Tensor, "0 3"], k, {params}):
                c1 = torch.cat([x, y], dim=-1)
                c2 = torch.cat([y, x], dim=-1)
                many = torch.cat([{names}], dim=-1)
                u = e.unbind(0)
                unknown_pieces = torch.zeros(2, 0).split(k, dim=-1)
                (piece,) = self.empty(h).split(4, dim=-1)
                return c1
        """
    ))
    assert facts.internal_errors == [] and facts.conflicts == []
    values = {a.name: a.value for a in run_of(facts, "M.forward").assignments}
    assert [_shape(values[name]) for name in ("c1", "c2", "many")] == ["(b, t, 8)", "(b, t, 8)", None]
    assert values["u"].pieces == () and values["unknown_pieces"].pieces is None
    assert (_shape(values["piece"]), values["piece"].tag(ProjectionTag).part) == ("(b, 0)", (0,))


def test_an_einops_ellipsis_that_covers_one_axis_is_that_axis() -> None:
    """``einops_call``: ``b ... d -> b d ...`` of ``(b, t, d)`` is ``(b, d, t)``, the ellipsis standing
    for the one axis between (einops gives it); of ``(b, h, t, d)`` it covers two axes, written out
    (``(b, d, h, t)``, as einops gives)."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        import einops

        def f(x: Float[Tensor, "b t d"], y: Float[Tensor, "b h t d"]):
            r1 = einops.rearrange(x, "b ... d -> b d ...")
            r2 = einops.rearrange(y, "b ... d -> b d ...")
            return r1
        """
    ))
    assert facts.internal_errors == [] and facts.conflicts == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert [_shape(values[name]) for name in ("r1", "r2")] == ["(b, d, t)", "(b, d, h, t)"]


def test_a_split_whose_size_does_not_divide_the_axis_has_unknown_pieces() -> None:
    """``_split``: ``(b, 3n)`` split by ``2n`` gives two pieces in torch, ``2n`` and ``n``; the
    quotient ``3n // 2n`` is the constant 1 but not exact, so the pieces stay unknown (never one
    piece of ``2n``); ``(b, 2n)`` split by ``n`` is two pieces of ``n``."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        def f(a: Float[Tensor, "b n"]):
            x = torch.cat([a, a, a], dim=-1)
            pieces = x.split(2 * a.shape[-1], dim=-1)
            halves = torch.cat([a, a], dim=-1).split(a.shape[-1], dim=-1)
            return x
        """
    ))
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert (_shape(values["x"]), values["pieces"].pieces) == ("(b, 3*n)", None)
    assert [_shape(piece) for piece in values["halves"].pieces] == ["(b, n)", "(b, n)"]
