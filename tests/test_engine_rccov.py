"""Shapes coverage in attention functions (issue 8 item 7): what the engine keeps where it used to lose
the whole shape, and the coverage script's "at some run" figure.

- A ``float | None = None`` parameter given a value the engine cannot read (``softcap=
  self.attn_logit_softcapping``, a config field) is None or a number: ``is not None`` stays open, and
  ``scores / softcap`` keeps the scores' shape (it used to broadcast with a tensor of unknown shape,
  so every later score had a ``*`` prefix).
- A Linear whose width the engine cannot read (``nn.Linear(inner, out_dim if out_dim is not None
  else dim)`` standalone) keeps the input's leading dims: only the last dim is unnamed.
- ``benchmarks/shapes_coverage.py`` counts each standalone value also at the best shape its
  assignment got in any run (``site_full`` / ``site_rank_known``).

Snippets are written from scratch in the style of published code (Hugging Face's Gemma attention,
lucidrains' attend helpers, diffusers' attention processors, nanoGPT).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import libcst as cst

from shapecheck.engine import analyze
from shapecheck.engine.domain.values import TensorValue
from engine_snippets import findings, line_of


def facts_of(source: str):
    source = textwrap.dedent(source)
    return analyze(cst.parse_module(source), source, "snippet.py")


def shapes(source: str, function: str, inlined: bool) -> list[tuple[str, str | None]]:
    """(name, shape) of every tensor the first such run of ``function`` assigns, in order."""
    facts = facts_of(source)
    runs = [run for run in facts.runs if run.qualname == function and run.inlined == inlined]
    assert runs, f"no run of {function}"
    return [
        (a.name, None if a.value.shape is None else str(a.value.shape))
        for a in runs[0].assignments
        if isinstance(a.value, TensorValue)
    ]


# --- a float | None parameter given an unreadable value ------------------------------------------

GEMMA = """
import torch
from torch import nn


def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    softcap: float | None = None,
):
    if scaling is None:
        scaling = module.head_dim**-0.5
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if softcap is not None:
        attn_weights = attn_weights / softcap
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * softcap
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class GemmaAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.head_dim = config.head_dim
        self.num_heads = config.num_attention_heads
        self.scaling = config.query_pre_attn_scalar**-0.5
        self.attn_logit_softcapping = config.attn_logit_softcapping
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim)
        self.k_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim)
        self.v_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, config.hidden_size)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        attn_output, attn_weights = eager_attention_forward(
            self,
            query_states,
            key_states,
            value_states,
            attention_mask,
            scaling=self.scaling,
            softcap=self.attn_logit_softcapping,
        )
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output), attn_weights
"""

ATTEND = """
import torch
import torch.nn.functional as F
from torch import nn, einsum
from einops import rearrange


def attend(q, k, v, scale: float, softclamp_value: float | None = None):
    sim = einsum('b h i d, b h j d -> b h i j', q, k) * scale
    if softclamp_value is not None:
        sim = (sim / softclamp_value).tanh() * softclamp_value
    attn = sim.softmax(dim=-1)
    return einsum('b h i j, b h j d -> b h i d', attn, v)


class Attention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64, softclamp=None):
        super().__init__()
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.softclamp = softclamp
        self.to_qkv = nn.Linear(dim, dim_head * heads * 3, bias=False)
        self.to_out = nn.Linear(dim_head * heads, dim)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=self.heads), (q, k, v))
        out = attend(q, k, v, self.scale, softclamp_value=self.softclamp)
        out = rearrange(out, 'b h n d -> b n (h d)')
        return self.to_out(out)
"""


def test_scores_divided_by_an_unreadable_softcap_keep_their_shape():
    # torch: (2, 8, 5, 64) @ (2, 8, 64, 5) -> (2, 8, 5, 5); / 30.0, tanh, * 30.0 keep it
    scores = "(batch1, config.num_attention_heads, seq2, seq2)"
    found = shapes(GEMMA, "eager_attention_forward", inlined=True)
    assert [name for name, _ in found[:5]] == ["attn_weights"] * 5  # both sides of `is not None`
    assert found[:4] == [("attn_weights", scores)] * 4  # the product, / softcap, tanh, * softcap
    assert found[4] == ("attn_weights", scores)  # + the mask (unknown, fits the scores)
    assert ("attn_output", "(batch1, seq2, config.num_attention_heads, config.head_dim)") in found


UNTYPED_OPTIONAL = """
import torch
from torch import nn


def add_bias(scores, bias=None, softcap: float | None = None):
    seen_bias = bias
    seen_softcap = softcap
    return scores


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.bias = config.attention_bias
        self.softcap = config.attn_logit_softcapping

    def forward(self, x):
        return add_bias(x, self.bias, softcap=self.softcap)
"""


def test_only_a_parameter_declared_float_is_an_optional_number():
    from shapecheck.engine.domain.values import Opaque, OptionalNumber

    facts = facts_of(UNTYPED_OPTIONAL)
    seen = {a.name: a.value for run in facts.runs if run.inlined for a in run.assignments}
    assert isinstance(seen["seen_softcap"], OptionalNumber)
    assert seen["seen_softcap"].name == "config.attn_logit_softcapping"  # the caller's unknown, by name
    assert isinstance(seen["seen_bias"], Opaque) and not isinstance(seen["seen_bias"], OptionalNumber)


def test_the_none_path_of_an_optional_softcap_is_kept():
    # The caller's value may be None: the scores without the softcap reach the softmax as well
    # (both paths give the same shape, so the merge keeps it).
    facts = facts_of(GEMMA)
    runs = [r for r in facts.runs if r.qualname == "eager_attention_forward" and r.inlined]
    softmaxes = [e for e in facts.events_of("softmax") if e.run in runs]
    assert softmaxes and all(str(e.result.shape) == "(batch1, config.num_attention_heads, seq2, seq2)" for e in softmaxes)


def test_a_softclamp_given_by_the_constructor_keeps_the_scores():
    # lucidrains style: a None default built into the module, an annotated helper parameter
    found = shapes(ATTEND, "attend", inlined=True)
    assert ("sim", "(b, 8, n, n)") in found
    assert ("attn", "(b, 8, n, n)") in found
    assert [shape for name, shape in found if name == "sim"] == ["(b, 8, n, n)", "(b, 8, n, n)"]


def test_the_clean_softcapped_models_stay_clean_and_a_flipped_softmax_is_found():
    assert findings(GEMMA) == []
    assert findings(ATTEND) == []
    bug = GEMMA.replace("softmax(attn_weights, dim=-1,", "softmax(attn_weights, dim=-2,")
    assert findings(bug) == [("SC103", line_of(bug, "softmax(attn_weights, dim=-2,"))]
    bug = ATTEND.replace("attn = sim.softmax(dim=-1)", "attn = sim.softmax(dim=-2)")
    assert findings(bug) == [("SC103", line_of(bug, "attn = sim.softmax(dim=-2)"))]


# --- a Linear of unreadable width ------------------------------------------------------------------

PROCESSOR = """
import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, query_dim: int, heads: int = 8, dim_head: int = 64, out_dim=None):
        super().__init__()
        self.inner_dim = dim_head * heads
        self.heads = heads
        self.out_dim = out_dim if out_dim is not None else query_dim
        self.to_q = nn.Linear(query_dim, self.inner_dim)
        self.to_k = nn.Linear(query_dim, self.inner_dim)
        self.to_v = nn.Linear(query_dim, self.inner_dim)
        self.to_out = nn.ModuleList([])
        self.to_out.append(nn.Linear(self.inner_dim, self.out_dim))
        self.to_out.append(nn.Dropout(0.0))
        self.processor = AttnProcessor()

    def forward(self, hidden_states, encoder_hidden_states=None):
        return self.processor(self, hidden_states, encoder_hidden_states)


class AttnProcessor:
    def __call__(self, attn: Attention, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor | None = None):
        batch_size, sequence_length, _ = hidden_states.shape
        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states
        query = attn.to_q(hidden_states)
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)
        head_dim = attn.inner_dim // attn.heads
        query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        hidden_states = F.scaled_dot_product_attention(query, key, value)
        hidden_states = hidden_states.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
        hidden_states = attn.to_out[0](hidden_states)
        hidden_states = attn.to_out[1](hidden_states)
        return hidden_states
"""

NANOGPT = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from .widths import mlp_width


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, mlp_width(config))
        self.gelu = nn.GELU()

    def forward(self, x):
        B, T, C = x.size()
        h = self.c_fc(x)
        h = self.gelu(h)
        return h
"""


def test_a_linear_of_unreadable_width_keeps_the_leading_dims():
    # torch: nn.Linear(512, 320)(torch.randn(2, 77, 512)).shape == (2, 77, 320): only the width changes
    found = dict(shapes(PROCESSOR, "AttnProcessor.__call__", inlined=False))
    assert found["hidden_states"] == "(batch_size, sequence_length, _)"  # to_out[1] (Dropout) of to_out[0]
    found = dict(shapes(NANOGPT, "MLP.forward", inlined=False))
    assert found["h"] == "(B, T, _)"


def test_a_linear_of_unreadable_width_still_checks_its_input_and_stays_quiet_otherwise():
    assert findings(PROCESSOR) == []
    assert findings(NANOGPT) == []
    # The input width is still checked against in_features (SC505: the product has the wrong width).
    bug = PROCESSOR.replace("attn.heads * head_dim)", "attn.heads * head_dim * 2)")
    assert [code for code, _ in findings(bug)] == ["SC505"]


# --- the coverage script's "at some run" figure --------------------------------------------------

def test_the_coverage_script_counts_a_helper_at_its_best_run():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import shapes_coverage

    facts = facts_of(GEMMA)
    counts = shapes_coverage.Counts()
    shapes_coverage.count_file(facts, counts, attention_only=True)
    standalone = sum(
        1 for run in facts.runs if not run.inlined and run.qualname == "eager_attention_forward"
        for a in run.assignments if isinstance(a.value, TensorValue)
    )
    assert counts.standalone == counts.values
    # the helper's values are unknown standalone, known in the run inlined at its call site
    assert counts.site_full - counts.full == standalone
    assert counts.site_rank_known - counts.rank_known == standalone
    inlined = shapes_coverage.Counts()
    shapes_coverage.count_file(facts, inlined, include_inlined=True, attention_only=True)
    assert inlined.standalone == counts.standalone and inlined.values > counts.values


# --- einops patterns with an ellipsis ------------------------------------------------------------

ELLIPSIS = """
import torch
from torch import nn
from einops import rearrange, repeat, reduce


def f(x: torch.Tensor, mask, z):
    b, t, d = x.shape
    a1 = rearrange(x, "... d -> ... 1 d")
    a2 = repeat(x, "b ... -> b h ...", h=4)
    a3 = rearrange(x, "b ... -> (...) b")
    a4 = rearrange(mask, "... j -> ... 1 j")
    a5 = reduce(x, "b ... d -> b d", "mean")
    w = torch.zeros(b, 12, 8)
    a6 = rearrange(w, "... (w n) -> (...) w n", n=4)
    a7 = rearrange(mask[..., None], "... i j -> ... j i")
    a8 = rearrange(z, "b ... -> b h ...", h=2)
    a9 = rearrange(x, "b t d ... -> b d t ...")
    a10 = rearrange(mask, "... j -> (...) j")
    a11 = rearrange(x, "b t d ... -> b t d (...)")
    a12 = rearrange(mask[..., None, None], "... j -> ... 1 j")
    return a1
"""


def test_einops_ellipsis_covers_the_axes_the_other_groups_leave():
    # torch + einops on x = (2, 3, 5), w = (2, 12, 8), mask[..., None] = (3, 2, 1):
    # (2, 3, 1, 5), (2, 4, 3, 5), (15, 2), (2, 5), (24, 2, 4), (3, 1, 2), (2, 5, 3), -, (2, 3, 5, 1),
    # and a mask (3, 4)[..., None, None] -> (3, 4, 1, 1, 1)
    found = dict(shapes(ELLIPSIS, "f", inlined=False))
    assert found["a1"] == "(b, t, 1, d)"
    assert found["a2"] == "(b, 4, t, d)"
    assert found["a3"] == "(d*t, b)"
    assert found["a4"] == "(*, 1, _)"  # a mask of unknown shape: the prefix stays open
    assert found["a5"] == "(b, d)"
    assert found["a6"] == "(12*b, 2, 4)"
    assert found["a7"] == "(*, 1, _)"
    assert found["a8"] is None  # unknown rank, an ellipsis after a group: nothing to say
    assert found["a9"] == "(b, d, t)"  # an ellipsis over no axis
    assert found["a10"] is None  # unknown rank merged into one axis: its size is unknown
    assert found["a11"] == "(b, t, d, 1)"  # ``(...)`` over no axis is an axis of size 1
    assert found["a12"] == "(*, 1, 1, 1)"  # the known dims before the last stay in the ellipsis


LUCIDRAINS_MASK = """
import torch
import torch.nn.functional as F
from torch import nn, einsum
from einops import rearrange, repeat


class Attention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64):
        super().__init__()
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.to_qkv = nn.Linear(dim, dim_head * heads * 3, bias=False)
        self.to_out = nn.Linear(dim_head * heads, dim)

    def forward(self, x, mask=None):
        h = self.heads
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=h), (q, k, v))
        sim = einsum('b h i d, b h j d -> b h i j', q, k) * self.scale
        if mask is not None:
            mask = rearrange(mask, '... j -> ... 1 j')
            sim = sim.masked_fill(~mask, -torch.finfo(sim.dtype).max)
        attn = sim.softmax(dim=-1)
        out = einsum('b h i j, b h j d -> b h i d', attn, v)
        return self.to_out(rearrange(out, 'b h n d -> b n (h d)'))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention(256)

    def forward(self, x, mask):
        return self.attn(x, mask)


x = torch.randn(2, 10, 256)
mask = torch.ones(2, 1, 10, dtype=torch.bool)
y = Model()(x, mask)
"""


def test_an_ellipsis_mask_reshape_keeps_the_mask_and_stays_clean():
    # torch: mask (2, 1, 10) -> '... j -> ... 1 j' -> (2, 1, 1, 10), broadcasts on (2, 8, 10, 10)
    assert findings(LUCIDRAINS_MASK) == []
    found = shapes(LUCIDRAINS_MASK, "Attention.forward", inlined=True)
    assert ("mask", "(2, 1, 1, 10)") in found
    # '... j -> ... j 1' puts the keys on the query axis
    bug = LUCIDRAINS_MASK.replace("'... j -> ... 1 j'", "'... j -> ... j 1'")
    found = shapes(bug, "Attention.forward", inlined=True)
    assert ("mask", "(2, 1, 10, 1)") in found
