"""Op-rule behaviour that mutation testing found unpinned (benchmarks/mutation_testing.py).

Black-box through the engine, like tests/test_engine_ops.py: each test analyses a small function and
asserts the shape, dtype, tags or conflicts the engine infers; shapes are what torch gives.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine.domain.tags import KeyTransposed, Permuted, Reordered
from shapecheck.engine.domain.values import ScoresTag

from test_engine_ops import HEADER, _shape, analyze_src, body, run_of, values_of

CODE = cst.Module([])


def _code(node: cst.CSTNode | None) -> str | None:
    return None if node is None else CODE.code_for_node(node)


def _run(src: str, func: str = "f"):
    facts = analyze_src(HEADER + textwrap.dedent(src))
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
