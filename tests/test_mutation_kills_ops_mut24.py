"""Kill tests for the survivors of ``ops/shapes.py``'s view functions (the ``--only`` run of the
functions changed after its first run) and the survivors left "not killed" in ``ops/products.py``
and ``ops/windows.py`` (benchmarks/README.md, the ``mut24`` subsection).

Black-box through the engine, like tests/test_mutation_kills_ops.py: each test analyses a small
function and asserts the shapes, tags or conflicts the engine infers. Every shape asserted is what
torch 2.13 gives (checked in a scratch script); where torch raises, the test asserts the engine's
conflict or an unknown shape.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine.domain.tags import LeadingOfUnknownRank
from shapecheck.linter import lint_source

from test_engine_ops import HEADER, _shape, analyze_src, run_of

CODE = cst.Module([])


def _code(node: cst.CSTNode | None) -> str | None:
    return None if node is None else CODE.code_for_node(node)


def _run(src: str, func: str = "f", header: str = HEADER):
    facts = analyze_src(header + textwrap.dedent(src))
    assert facts.internal_errors == []  # an op rule that raises gives up silently: never in these tests
    return {a.name: a.value for a in run_of(facts, func).assignments}, facts.conflicts


# --- ops/shapes.py: view and reshape ----------------------------------------------------------------


NANOGPT_VIEW_BY_KEYWORD = """
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(size=(B, T, self.n_head, C // self.n_head)).transpose(1, 2)
        q = q.view(size=(B, T, self.n_head, C // self.n_head)).transpose(1, 2)
        v = v.view(size=(B, T, self.n_head, C // self.n_head)).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(size=(B, T, C))
        return self.c_proj(y)
"""


def test_view_reads_its_sizes_by_the_keyword_size_and_its_dtype_by_keyword() -> None:
    """torch's ``Tensor.view`` names its sizes ``size=`` (``reshape``: ``shape=``) and takes
    ``dtype=`` by keyword too. The engine read only ``shape=``, so ``view(size=(B, T, h, C // h))``
    was a view as ``()``: SC403 on each of nanoGPT's head splits written by keyword (a false
    positive). Torch: (2, 3, 8).view(size=(2, 3, 2, 4)) is (2, 3, 2, 4); view(dtype=float16) of
    float32 is (2, 3, 16), a last size the engine does not compute (unknown shape, the dtype kept)."""
    assert lint_source(NANOGPT_VIEW_BY_KEYWORD, "attn.py").diagnostics == []
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"], B: int, T: int, H: int):
            heads = x.view(size=(B, T, H, -1))
            flat = x.view(size=(-1,))
            halves = x.view(dtype=torch.float16)
            merged = heads.reshape(shape=(B, T, -1))
        """
    )
    assert conflicts == []
    found = {name: (_shape(values[name]), values[name].dtype) for name in ("heads", "flat", "halves", "merged")}
    assert found == {
        "heads": ("(B, T, H, b*d*t//(B*H*T))", "float"),
        "flat": ("(b*d*t)", "float"),
        "halves": (None, "float"),
        "merged": ("(B, T, b*d*t//(B*T))", "float"),
    }


def test_a_size_target_given_alone_by_position_or_keyword_and_never_with_more_sizes() -> None:
    """``_view`` / ``_derived_view`` read a size value (``x.shape[:-1] + (h, d)``) as the target when it
    is the only size, by position or by keyword: Hugging Face's split of an input of unknown rank
    keeps the sizes written after the leading dims, and a derived view of a known rank checks the
    split trailing dims (12 is not 5 * 2: torch raises) or resolves its -1 (torch: (2, 3, 12) to
    (2, 3, 3, 4)). A size value followed by more sizes is no target torch takes (TypeError): the
    shape stays unknown."""
    values, conflicts = _run(
        """
        def f(x, q, r: Float[Tensor, "b t 12"], H: int, D: int):
            input_shape = x.shape[:-1]
            by_shape = q.reshape(shape=input_shape + (H, D))
            by_size = q.view(size=input_shape + (H, D))
            loose = q.view(input_shape + (H,), D)
            uneven = r.view(size=r.size()[:-1] + (5, 2))
            split = r.reshape(shape=r.size()[:-1] + (3, -1))
            loose_known = r.view(r.size()[:-1] + (3,), -1)
        """
    )
    found = {name: _shape(values[name]) for name in ("by_shape", "by_size", "loose", "uneven", "split", "loose_known")}
    assert found == {
        "by_shape": "(*, H, D)",
        "by_size": "(*, H, D)",
        "loose": None,
        "uneven": None,
        "split": "(b, t, 3, 4)",
        "loose_known": None,
    }
    assert [(c.kind, c.op, c.detail, _code(c.node)) for c in conflicts] == [
        (
            "heads",
            "view",
            "cannot view the trailing dims (12) of (b, t, 12) as (5, 2): 12 elements vs 10",
            "r.view(size=r.size()[:-1] + (5, 2))",
        )
    ]


def test_a_derived_view_checks_the_split_trailing_dims_with_what_the_path_knows() -> None:
    """``_derived_view`` (``x.view(x.size()[:-k] + sizes)``): the trailing dims are checked against the
    sizes, a count that differs unless a size is 1 being a conflict (the classic split that forgot
    to divide: C as (H, C)), with the path's assumptions (``assert`` binds C to 12: 12 is not 5 * 2, torch raises, even
    after a split into named sizes ran, which teaches nothing about C on its own), the message names
    every split dim, a count that differs only when a size is 2 is no conflict (``(2, D)`` as ``(H, D)``
    runs when H == 2), and the kept dims of a variadic source stay: (2, 5, 7, 12) split as
    ``(3, -1)`` is (2, 5, 7, 3, 4), (2, 5, 4, 8) merged as ``shape[:-2] + (-1,)`` is (2, 5, 32)."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t C"], p: Float[Tensor, "*batch t d"], w: Float[Tensor, "*batch h d"],
              r: Float[Tensor, "b 3 4"], pairs: Float[Tensor, "b t 2 D"], H: int, D: int):
            q = x.view(x.size()[:-1] + (H, D))
            whole = x.view(x.size()[:-1] + (H, x.shape[-1]))
            assert x.shape[-1] == 12
            bound = x.view(x.size()[:-1] + (5, 2))
            merged = w.reshape(w.shape[:-2] + (-1,))
            split = p.view(p.size()[:-1] + (3, -1))
            wrong = r.view(r.size()[:-2] + (5, 2))
            halves = pairs.view(pairs.size()[:-2] + (H, D))
        """
    )
    found = {name: _shape(values[name]) for name in ("q", "whole", "bound", "merged", "split", "wrong", "halves")}
    assert found == {
        "q": "(b, t, H, D)",
        "whole": None,
        "bound": None,
        "merged": "(*, d*h)",
        "split": "(*, t, 3, d//3)",
        "wrong": None,
        "halves": "(b, t, H, D)",
    }
    assert [(c.kind, c.detail, _code(c.node)) for c in conflicts] == [
        (
            "reshape",
            "cannot view the trailing dims (C) of (b, t, C) as (H, C): C elements vs C*H",
            "x.view(x.size()[:-1] + (H, x.shape[-1]))",
        ),
        ("reshape", "cannot view the trailing dims (C) of (b, t, C) as (5, 2): C elements vs 10", "x.view(x.size()[:-1] + (5, 2))"),
        ("reshape", "cannot view the trailing dims (3, 4) of (b, 3, 4) as (5, 2): 12 elements vs 10", "r.view(r.size()[:-2] + (5, 2))"),
    ]
    assert values["split"].has(LeadingOfUnknownRank)  # a split of one axis in two: for a later head move


def test_no_layout_is_presumed_for_a_split_after_two_dropped_dims_or_without_a_split() -> None:
    """A split of the features into (heads, head_dim) after ``x.shape[:-1]`` marks the view for the
    batch-first layout; after ``x.shape[:-2]`` it does not (the rank before the split is not two), so
    ``transpose(1, 2)`` of it stays unknown, as a plain transpose of a tensor of unknown rank does
    (torch: (2, 5, 4, 8) gives (2, 4, 5, 8), (5, 4, 8) gives (5, 8, 4))."""
    values, conflicts = _run(
        """
        def f(w: Float[Tensor, "*batch h d"], x, v, H: int, D: int):
            derived = w.view(w.size()[:-2] + (H, D)).transpose(1, 2)
            other = v.view(*x.shape[:-2], H, D).transpose(1, 2)
            plain = w.transpose(1, 2)
            split = v.view(*x.shape[:-1], H, D).transpose(1, 2)
        """
    )
    assert conflicts == []
    found = {name: _shape(values[name]) for name in ("derived", "other", "plain", "split")}
    assert found == {"derived": None, "other": None, "plain": None, "split": "(batch1, H, seq2, D)"}


def test_a_view_flags_a_head_count_too_many_only_between_sizes_the_code_named() -> None:
    """``_view``: ``view(B, T, H, C)`` of (B, T, C) holds H times the elements (a conflict unless H is
    1); when C is a size the engine made up (the width of an unseen call, the ``-1`` of a view of an
    unseen tensor) it is no ground for a finding. A ``-1`` the other sizes do not divide is a conflict
    whose message gives the quotient (torch: (3, 32, 32) viewed as (-1, 49) raises, 3072 % 49 != 0)."""
    values, conflicts = _run(
        """
        def f(img: Float[Tensor, "2 3 32 32"], u, B: int, T: int, H: int):
            z = torch.zeros(B, T, width())
            made_up = z.view(B, T, H, z.shape[-1])
            m = u.view(B, T, -1)
            unseen = m.view(B, T, H, m.shape[-1])
            x = torch.zeros(B, T, 64)
            wrong = x.view(B, T, H, 64)
            patches = img[0].view(-1, 7 * 7)
        """
    )
    found = {name: _shape(values[name]) for name in ("made_up", "unseen", "wrong", "patches")}
    assert found == {"made_up": "(B, T, H, n1)", "unseen": "(B, T, H, _)", "wrong": "(B, T, H, 64)", "patches": None}
    assert [(c.kind, c.detail, _code(c.node)) for c in conflicts] == [
        ("reshape", "cannot view a tensor of shape (B, T, 64) (numel 64*B*T) as (B, T, H, 64) (numel 64*B*H*T)", "x.view(B, T, H, 64)"),
        (
            "reshape",
            "cannot view a tensor of shape (3, 32, 32) (numel 3072) as (-1, 49): the other sizes multiply to 49, "
            "so the -1 would be (3072) / (49)",
            "img[0].view(-1, 7 * 7)",
        ),
    ]


GENERATED_ATTENTION = """
class Attention(nn.Module):
    def __init__(self, hidden_size: int, num_heads: int, num_kv_heads: int):
        super().__init__()
        self.head_dim = hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, hidden_size, bias=False)

    def forward(self, hidden_states, past_value, rope):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        unreadable = past_value.view(*input_shape, -2, self.head_dim)
        cache = past_value.view(*input_shape, -1, -1)
        whole = past_value.reshape(input_shape)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_split = self.k_proj(hidden_states).view(hidden_shape)
        key_states = key_split.transpose(1, 2)
        value_states = past_value.view(hidden_shape).transpose(1, 2)
        attn_output = query_states.transpose(1, 2).reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)
"""


def test_the_generated_head_split_shares_the_presumed_leading_dims_with_every_view_of_the_input() -> None:
    """Hugging Face's ``view(hidden_shape)`` with ``hidden_shape = (*input_shape, -1, head_dim)`` of an
    input of unknown rank: once the query's heads moved (``transpose(1, 2)``) the input's leading dims
    are presumed (batch, seq), and every later view by ``hidden_shape`` gets them: the key's
    projection (*, kv * head_dim) resolves its -1 to kv (torch, hidden (2, 5, 32), 4 heads, 2 kv
    heads: key (2, 5, 2, 8)), a value of unknown shape keeps the written sizes, and the merge
    ``reshape(*input_shape, -1)`` gives (batch, seq, heads * head_dim). Before any head moved, a view
    with a size torch rejects (-2, two -1) reads no size from the source, and ``reshape(input_shape)``
    alone (the rank unknown) no shape at all."""
    facts = analyze_src(HEADER + GENERATED_ATTENTION)
    assert facts.internal_errors == []
    values = {a.name: a.value for a in run_of(facts, "Attention.forward").assignments}
    names = ("unreadable", "cache", "whole", "query_states", "key_split", "key_states", "value_states", "attn_output")
    assert {name: _shape(values[name]) for name in names} == {
        "unreadable": None,
        "cache": "(*, _, _)",
        "whole": None,
        "query_states": "(batch1, num_heads, seq2, hidden_size//num_heads)",
        "key_split": "(batch1, seq2, num_kv_heads, hidden_size//num_heads)",
        "key_states": "(batch1, num_kv_heads, seq2, hidden_size//num_heads)",
        "value_states": "(batch1, _, seq2, hidden_size//num_heads)",
        "attn_output": "(batch1, seq2, num_heads*(hidden_size//num_heads))",
    }
    assert facts.conflicts == []


def test_a_view_after_leading_dims_of_unknown_rank_splits_the_last_dim_with_what_the_path_knows() -> None:
    """``_view_of_unknown_leading``: ``y.view(*x.shape[:-1], 3, -1)`` with y's last dim C bound to 12
    by an ``assert`` is (*, 3, 4) (torch: (2, 5, 12) viewed after (2, 5) as (3, -1) is (2, 5, 3, 4));
    two ``-1`` (torch raises) resolve nothing from y's last dim: the sizes are made up."""
    values, conflicts = _run(
        """
        def f(x, y: Float[Tensor, "*batch C"]):
            input_shape = x.shape[:-1]
            assert y.shape[-1] == 12
            heads = y.view(*input_shape, 3, -1)
            twice = y.view(*input_shape, -1, -1)
        """
    )
    assert conflicts == []
    assert {name: _shape(values[name]) for name in ("heads", "twice")} == {"heads": "(*, 3, 4)", "twice": "(*, _, _)"}


CONFIGURED_HEADS = """
from dataclasses import dataclass


@dataclass
class Config:
    n_embd: int = 12
    n_head: int = 5


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head

    def forward(self, x: Float[Tensor, "b 5 12"], h: Float[Tensor, "b 5 12"]):
        B, T, C = x.size()
        by_sizes = x.view(B, T, self.n_head, C // self.n_head)
        by_list = x.view([B, T, self.n_head, C // self.n_head])
        by_size_value = x.view(h.size()[:-1] + (self.n_head, C // self.n_head))
        return by_sizes


model = Attention(Config())
"""


def test_an_uneven_head_split_lands_on_the_head_count_default_not_on_an_equal_sequence_length() -> None:
    """``_origin_of``: five heads of a width 12 (torch raises: 12 % 5 != 0) is reported where the
    head count was written (the ``n_head`` default), also when the sequence length before it is 5
    too (a number with no origin); sizes given as one size value carry no origin: the conflict
    stays, at the call."""
    facts = analyze_src(HEADER + CONFIGURED_HEADS)
    assert facts.internal_errors == []
    assert [(c.kind, _code(c.node), _code(c.at)) for c in facts.conflicts] == [
        ("heads", "x.view(B, T, self.n_head, C // self.n_head)", "5"),
        ("heads", "x.view([B, T, self.n_head, C // self.n_head])", "5"),
        ("heads", "x.view(h.size()[:-1] + (self.n_head, C // self.n_head))", None),
    ]
    assert [("Config.n_head default" in c.detail) for c in facts.conflicts] == [True, True, False]


PROJECTED_SPLITS = """
class CrossAttention(nn.Module):
    def __init__(self, hidden_size: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)

    def split(self, x):
        return x.view(x.size()[:-1] + (self.num_heads, self.head_size)).permute(0, 2, 1, 3)

    def forward(self, hidden_states, encoder_hidden_states):
        query_layer = self.split(self.query(hidden_states))
        key_layer = self.split(self.key(encoder_hidden_states))
        value_layer = self.split(self.value(encoder_hidden_states))
        scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        return torch.matmul(scores.softmax(dim=-1), value_layer)


class DeepQuery(nn.Module):
    def __init__(self, d: int, h: int):
        super().__init__()
        self.h = h
        self.l1, self.l2, self.l3 = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.l4, self.l5, self.l6 = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.l7, self.l8, self.l9 = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.k = nn.Linear(d, d)

    def forward(self, x):
        deep = self.l9(self.l8(self.l7(self.l6(self.l5(self.l4(self.l3(self.l2(self.l1(x)))))))))
        q = deep.view(deep.size()[:-1] + (self.h, -1)).transpose(1, 2)
        k = self.k(x)
        k = k.view(k.size()[:-1] + (self.h, -1)).transpose(1, 2)
        return q @ k.transpose(-1, -2)
"""


def test_presumed_leading_dims_belong_to_the_input_behind_every_projection() -> None:
    """``presumed_leading`` / ``_leading_owner``: a head split of a projection of an input of unknown
    rank presumes (batch, seq) for that input, followed back through every Linear (each keeps the
    leading dims): BERT's cross-attention splits the queries of ``hidden_states`` and the keys and
    values of ``encoder_hidden_states``, two inputs with leading dims of their own (scores
    (batch, heads, seq, enc_seq): torch, (2, 5, 32) and (2, 7, 32) give (2, 4, 5, 7)), while a
    query behind nine Linear layers and a key behind one share x's (torch: (2, 4, 5, 5))."""
    facts = analyze_src(HEADER + PROJECTED_SPLITS)
    assert facts.internal_errors == [] and facts.conflicts == []
    cross = {a.name: a.value.shape for a in run_of(facts, "CrossAttention.forward").assignments}
    deep = {a.name: a.value.shape for a in run_of(facts, "DeepQuery.forward").assignments}
    query, key, value, scores = (cross[name] for name in ("query_layer", "key_layer", "value_layer", "scores"))
    batch, seq, enc_batch, enc_seq = query.dims[0], query.dims[2], key.dims[0], key.dims[2]
    assert [str(s) for s in (query, key, value, scores)] == [
        f"({batch}, num_heads, {seq}, hidden_size//num_heads)",
        f"({enc_batch}, num_heads, {enc_seq}, hidden_size//num_heads)",
        f"({enc_batch}, num_heads, {enc_seq}, hidden_size//num_heads)",
        f"(max({batch},{enc_batch}), num_heads, {seq}, {enc_seq})",
    ]
    assert len({batch, seq, enc_batch, enc_seq}) == 4 and all(str(d).startswith(("batch", "seq")) for d in query.dims[::2] + key.dims[::2])
    batch, seq = deep["q"].dims[0], deep["q"].dims[2]
    assert [str(deep[name]) for name in ("q", "k")] == [f"({batch}, h, {seq}, d//h)"] * 2


# --- ops/products.py ---------------------------------------------------------------------------------


def test_a_key_transposed_over_the_wrong_axes_is_judged_with_the_sizes_the_path_knows() -> None:
    """``matmul_values``' key-transpose checks read the path's assumptions: a key whose feature size
    is the query's only by an ``assert`` (e vs d), transposed over axes 1 and 3, is a product over the
    wrong axes (SC504); when the path also pins the contracted sizes apart (d == 8, s == 16: torch
    raises), the conflict is the product's inner dims, still of kind ``key-transpose``."""
    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s e"]):
            assert q.shape[-1] == k.shape[-1]
            s1 = q @ k.transpose(1, 3)

        def g(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s e"]):
            assert q.shape[-1] == k.shape[-1]
            assert q.shape[-1] == 8
            assert k.shape[2] == 16
            s2 = q @ k.transpose(1, 3)
        """
    )
    assert [(c.kind, c.op, c.detail, _code(c.node)) for c in conflicts] == [
        (
            "key-transpose",
            "matmul",
            "matmul of (b, h, t, d) and (b, e, s, h): the key is transposed over the wrong axes; it contracts d with s",
            "q @ k.transpose(1, 3)",
        ),
        ("key-transpose", "matmul", "matmul of (b, h, t, d) and (b, e, s, h): inner dims d and s differ", "q @ k.transpose(1, 3)"),
    ]


def test_a_query_computed_by_a_conflicting_view_is_no_ground_for_an_untransposed_key() -> None:
    """``_after_a_conflict`` reads both operands: ``q`` comes from a view that holds H times too many
    elements (the conflict is there), so ``q @ k`` ending in the same size is its echo, not a second
    finding; a 0-d left operand (torch: matmul needs at least 1-D operands) gives an unknown shape
    and no internal error; an untransposed key is one finding and its product keeps a shape."""
    _, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t c"], k: Float[Tensor, "b s h c"], H: int):
            B, T, C = x.shape
            q = x.view(B, T, H, C)
            echo = q @ k
        """
    )
    assert [(c.kind, _code(c.node)) for c in conflicts] == [("reshape", "x.view(B, T, H, C)")]
    values, conflicts = _run(
        """
        def f(w: Float[Tensor, "n m"], q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"]):
            s = torch.tensor(2.0)
            left = torch.matmul(s, w)
            right = torch.matmul(w, s)
            untransposed = q @ k
        """
    )
    assert [(c.kind, _code(c.node)) for c in conflicts] == [("matmul", "q @ k")]
    assert {name: _shape(values[name]) for name in ("left", "right", "untransposed")} == {
        "left": None,
        "right": None,
        "untransposed": "(b, h, t, d)",
    }


def test_scores_are_never_a_query_or_a_key() -> None:
    """``matmul_values`` judges an untransposed right operand only between a query and a key: scores
    (``q @ k.mT``, (b, h, t, s)) times a tensor ending in the key length are not reported as an
    untransposed key (torch runs them only when t == s; the engine presumes it)."""
    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"], v: Float[Tensor, "b h s d"]):
            scores = q @ k.mT
            twice = scores @ scores
            back = v.mT @ scores
        """
    )
    assert conflicts == []
    assert {name: _shape(values[name]) for name in ("scores", "twice", "back")} == {
        "scores": "(b, h, t, s)",
        "twice": "(b, h, t, s)",
        "back": "(b, h, d, s)",
    }


LAYER_OUTPUTS = """
class Windowed(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)

    def forward(self, x: Float[Tensor, "b w h t d"], y, G: int):
        B, W, H, T, D = x.shape
        q = self.q(x)
        same = self.k(y).view(B, W, H, -1, D)
        other = self.k(y).view(B, W, G, -1, D)
        s1 = q @ same
        s2 = q @ other
        return s1


class Cache(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)

    def forward(self, x: Float[Tensor, "b t d"], y):
        B, T, D = x.shape
        q = self.q(x)
        k = self.k(y).view(B, -1, D)
        self.register_buffer("cached_k", k, persistent=False)
        s1 = q @ k
        s2 = q @ self.cached_k
        return s1
"""


def test_two_layer_outputs_are_alike_only_with_every_batch_axis_equal_and_never_as_a_buffer() -> None:
    """``_activations_alike``: an untransposed key whose length the engine made up (the ``-1`` of a
    view of an input of unknown shape) is judged when it is a layer output laid out like the query,
    every axis before the last two equal, also in 5-D (windowed attention, (b, w, h, t, d)); with
    another head axis (G for h) its rows may be anything: unjudged. The same key read back as a
    registered buffer is a parameter to the engine (a weight, whose rows the constructor names):
    unjudged. Torch runs each product only when the key length equals d."""
    facts = analyze_src(HEADER + LAYER_OUTPUTS)
    assert facts.internal_errors == []
    assert [(c.kind, _code(c.node), c.detail.split(":")[0]) for c in facts.conflicts] == [
        ("matmul", "q @ same", "matmul of (b, w, h, t, d) and (b, w, h, _, d)"),
        ("matmul", "q @ k", "matmul of (b, t, d) and (b, _, d)"),
    ]


# --- ops/windows.py --------------------------------------------------------------------------------


TWICE_GIVEN = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyLM(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, tie_targets: bool):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.head = nn.Linear(d_model, vocab_size)
        self.tie_targets = tie_targets

    def forward(self, input_ids, labels):
        targets = input_ids if self.tie_targets else labels
        logits = self.head(self.embed(input_ids))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten()) + F.cross_entropy(logits.flatten(0, 1), labels.flatten())


if __name__ == "__main__":
    model = TinyLM(100, 32, tie_targets=False)
    ids = torch.randint(0, 100, (4, 16))
    loss = model(ids, labels=ids)
"""


def test_a_tensor_given_twice_to_a_model_is_one_sequence() -> None:
    """``tag_model_inputs`` tags each tensor a script gives its model once: ``model(ids, labels=ids)``
    makes ``input_ids`` and ``labels`` one sequence with one tag (offset 0, length 16, at the first
    argument), so the targets the model picks on either path are the input's own tokens."""
    from shapecheck.engine.domain.tags import SequenceOriginTag

    facts = analyze_src(TWICE_GIVEN)
    assert facts.internal_errors == []
    run = run_of(facts, "TinyLM.forward", inlined=True)
    values = {a.name: a.value for a in run.assignments}
    targets, logits = values["targets"].tag(SequenceOriginTag), values["logits"].tag(SequenceOriginTag)
    assert targets == logits
    assert (str(targets.offset), str(targets.length), targets.sliced) == ("0", "16", False)
    call = facts.module.body[-1].body.body[-1].body[0].value  # model(ids, labels=ids)
    assert targets.node is call.args[0].value


def test_a_scalar_viewed_as_a_matrix_on_a_path_that_bound_a_width_is_a_reshape_conflict() -> None:
    """``_uneven_head_split`` of a 0-d source (no last dim) on a path whose ``assert`` bound a size:
    no head split to name; the view is a plain ``reshape`` conflict (torch: a tensor of one element
    viewed as (2, 3) raises)."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t C"], s: Float[Tensor, ""]):
            assert x.shape[-1] == 12
            bad = s.view(2, 3)
        """
    )
    assert _shape(values["bad"]) is None
    assert [(c.kind, c.detail) for c in conflicts] == [("reshape", "cannot view a tensor of shape () (numel 1) as (2, 3) (numel 6)")]
