"""Shapes coverage in attention functions (issue 8 item 7), second round: idioms that used to erase a
whole shape in the functions that compute attention.

- ``nn.GroupNorm`` and ``nn.InstanceNorm1d/2d/3d`` keep their input's shape (they normalise per
  channel, as BatchNorm does); they used to be layers the engine did not know, whose output had no
  shape (diffusers' processors: ``attn.group_norm(hidden_states.transpose(1, 2)).transpose(1, 2)``).
- ``getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads``: an
  attribute of a configuration the engine does not see, or else a size, is the size ``a|b`` (one or
  the other, as a size a name holds on two paths is); it used to be unknown, and with it every view
  that used the head dim (Mistral, Mixtral, Qwen-style attention).

Snippets are written from scratch in the style of published code.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine import analyze
from shapecheck.engine.domain.values import TensorValue
from engine_snippets import findings, line_of


def facts_of(source: str):
    source = textwrap.dedent(source)
    return analyze(cst.parse_module(source), source, "snippet.py")


def shapes(source: str, function: str) -> dict[str, str | None]:
    """name -> shape of the last tensor each name gets in the standalone run of ``function``."""
    facts = facts_of(source)
    runs = [run for run in facts.runs if run.qualname == function and not run.inlined]
    assert runs, f"no run of {function}"
    return {
        a.name: None if a.value.shape is None else str(a.value.shape)
        for a in runs[0].assignments
        if isinstance(a.value, TensorValue)
    }


# --- GroupNorm / InstanceNorm keep the shape ------------------------------------------------------

CONV_BLOCK = """
import torch.nn as nn


class ResBlock(nn.Module):
    def __init__(self, channels: int = 64, groups: int = 8):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, channels)
        self.norm2 = nn.GroupNorm(num_groups=groups, num_channels=channels, eps=1e-6, affine=True)
        self.inst = nn.InstanceNorm2d(channels, affine=True)
        self.inst1 = nn.InstanceNorm1d(channels)
        self.inst3 = nn.InstanceNorm3d(channels)

    def forward(self, x, seq, vol):
        n, c, h, w = x.shape
        a = self.norm1(x)
        b = self.norm2(a)
        y = self.inst(b)
        _, _, t = seq.shape
        s = self.inst1(seq)
        _, _, d, hh, ww = vol.shape
        z = self.inst3(vol)
        return y, s, z
"""


def test_group_and_instance_norms_keep_the_shape():
    got = shapes(CONV_BLOCK, "ResBlock.forward")
    assert got["a"] == "(n, c, h, w)"
    assert got["b"] == "(n, c, h, w)"
    assert got["y"] == "(n, c, h, w)"
    assert got["s"] == "(size1, size2, t)"
    assert got["z"] == "(size3, size4, d, hh, ww)"
    assert findings(CONV_BLOCK) == []


PROCESSOR = """
import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, query_dim: int, heads: int = 8, dim_head: int = 64, groups: int = 32):
        super().__init__()
        self.heads = heads
        inner = heads * dim_head
        self.group_norm = nn.GroupNorm(num_channels=query_dim, num_groups=groups, affine=True)
        self.to_q = nn.Linear(query_dim, inner)
        self.to_k = nn.Linear(query_dim, inner)
        self.to_v = nn.Linear(query_dim, inner)
        self.to_out = nn.Linear(inner, query_dim)


class SpatialProcessor:
    def __call__(self, attn: CrossAttention, hidden_states: torch.Tensor) -> torch.Tensor:
        batch_size, seq_len, _ = hidden_states.shape
        hidden_states = attn.group_norm(hidden_states.transpose(1, 2)).transpose(1, 2)
        query = attn.to_q(hidden_states)
        key = attn.to_k(hidden_states)
        value = attn.to_v(hidden_states)
        head_dim = key.shape[-1] // attn.heads
        query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        scores = query @ key.transpose(-1, -2) * head_dim ** -0.5
        out = scores.softmax(dim=-1) @ value
        out = out.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
        return attn.to_out(out)
"""


def test_a_group_norm_over_channels_keeps_the_tokens_of_a_processor():
    got = shapes(PROCESSOR, "SpatialProcessor.__call__")
    assert got["hidden_states"] == "(batch_size, seq_len, size1)"
    assert got["query"] == "(batch_size, 8, seq_len, 64)"
    assert got["scores"] == "(batch_size, 8, seq_len, seq_len)"
    assert findings(PROCESSOR) == []


def test_a_key_left_untransposed_after_a_group_norm_is_found():
    broken = PROCESSOR.replace("scores = query @ key.transpose(-1, -2)", "scores = query @ key")
    assert findings(broken) == [("SC505", line_of(broken, "scores = query @ key"))]


# --- getattr(config, "head_dim", None) or a size ---------------------------------------------------

MISTRAL_STYLE = """
import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_heads = config.num_attention_heads
        self.head_size = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.wq = nn.Linear(config.hidden_size, self.n_heads * self.head_size, bias=False)
        self.wk = nn.Linear(config.hidden_size, self.n_heads * self.head_size, bias=False)
        self.wv = nn.Linear(config.hidden_size, self.n_heads * self.head_size, bias=False)
        self.wo = nn.Linear(self.n_heads * self.head_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor):
        bsz, seqlen, _ = x.shape
        q = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_size).transpose(1, 2)
        k = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_size).transpose(1, 2)
        v = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_size).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) * self.head_size ** -0.5
        probs = scores.softmax(dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(bsz, seqlen, -1)
        return self.wo(out)
"""

HEAD = "config.head_dim|config.hidden_size//config.num_attention_heads"


def test_an_unseen_attribute_or_a_size_is_a_size():
    got = shapes(MISTRAL_STYLE, "SelfAttention.forward")
    assert got["q"] == f"(bsz, config.num_attention_heads, seqlen, {HEAD})"
    assert got["scores"] == "(bsz, config.num_attention_heads, seqlen, seqlen)"
    assert got["out"] == f"(bsz, seqlen, {HEAD}*config.num_attention_heads)"
    assert findings(MISTRAL_STYLE) == []


def test_an_untransposed_key_with_such_a_head_dim_is_found():
    broken = MISTRAL_STYLE.replace("torch.matmul(q, k.transpose(2, 3))", "torch.matmul(q, k)")
    assert findings(broken) == [("SC505", line_of(broken, "torch.matmul(q, k)"))]


LOCAL_HEAD_DIM = """
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, cfg, layer_idx: int):
        super().__init__()
        head_dim = getattr(cfg, "attention_head_size", None) or cfg.d_model // cfg.heads
        self.heads = cfg.heads
        self.dim_head = head_dim
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.heads * head_dim)

    def forward(self, h):
        b, n, _ = h.shape
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        q = q.reshape(b, n, self.heads, self.dim_head).permute(0, 2, 1, 3)
        k = k.reshape(b, n, self.heads, self.dim_head).permute(0, 2, 1, 3)
        att = (q @ k.transpose(-2, -1)) * self.dim_head ** -0.5
        return att.softmax(-1)
"""


def test_the_joined_head_dim_also_works_through_a_local_name():
    got = shapes(LOCAL_HEAD_DIM, "Block.forward")
    assert got["q"] == "(b, cfg.heads, n, cfg.attention_head_size|cfg.d_model//cfg.heads)"
    assert got["att"] == "(b, cfg.heads, n, n)"
    assert findings(LOCAL_HEAD_DIM) == []


def test_a_number_or_a_size_is_not_joined():
    # ``softcap or 1.0`` / a tensor ``or`` a size stay what they were: only an unseen value with a
    # size as its fallback is read as one of two sizes.
    source = """
    import torch
    import torch.nn as nn


    class Scaled(nn.Module):
        def __init__(self, config, dim: int = 64):
            super().__init__()
            self.scale = getattr(config, "attn_scale", None) or dim ** -0.5
            self.width = getattr(config, "width", None) or dim
            self.proj = nn.Linear(dim, self.width)

        def forward(self, x):
            b, t, d = x.shape
            y = self.proj(x)
            return y * self.scale
    """
    got = shapes(source, "Scaled.forward")
    assert got["y"] == "(b, t, config.width|64)"
    assert findings(source) == []


# --- a float | None parameter filled by **kwargs stays a number ------------------------------------

SOFTCAP_THROUGH_KWARGS = """
import torch
import torch.nn as nn


def attention_fn(module: nn.Module, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout: float = 0.0,
                 scaling: float | None = None, softcap: float | None = None, **kwargs):
    w = torch.matmul(q, k.transpose(2, 3)) * scaling
    if softcap is not None:
        w = w / softcap
        w = torch.tanh(w)
        w = w * softcap
    w = nn.functional.softmax(w, dim=-1)
    out = torch.matmul(w, v)
    return out.transpose(1, 2)


class Attn(nn.Module):
    def __init__(self, d: int = 64, h: int = 4):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.scaling = (d // h) ** -0.5

    def forward(self, x: torch.Tensor, **kwargs):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        out = attention_fn(self, q, k, v, scaling=self.scaling, **kwargs)
        return out.reshape(b, t, -1)
"""


def inlined_shapes(source: str, function: str) -> list[tuple[str, str | None]]:
    facts = facts_of(source)
    runs = [run for run in facts.runs if run.qualname == function and run.inlined]
    assert runs, f"no inlined run of {function}"
    return [
        (a.name, None if a.value.shape is None else str(a.value.shape))
        for a in runs[0].assignments
        if isinstance(a.value, TensorValue)
    ]


def test_an_optional_number_filled_by_kwargs_keeps_the_scores_shape():
    # ``softcap`` is not given by name: ``**kwargs`` of a forward run standalone may fill it, so it is
    # an unreadable value of a ``float | None`` parameter, a number where it meets the scores.
    got = inlined_shapes(SOFTCAP_THROUGH_KWARGS, "attention_fn")
    assert got == [
        ("w", "(b, 4, t, t)"),
        ("w", "(b, 4, t, t)"),
        ("w", "(b, 4, t, t)"),
        ("w", "(b, 4, t, t)"),
        ("w", "(b, 4, t, t)"),
        ("out", "(b, 4, t, 16)"),
    ]
    assert findings(SOFTCAP_THROUGH_KWARGS) == []


def test_heads_merged_without_moving_them_back_after_a_softcap_are_found():
    # The helper returns (b, h, t, d) instead of (b, t, h, d): the caller's reshape(b, t, -1) runs
    # (same element count) but mixes heads and positions.
    broken = SOFTCAP_THROUGH_KWARGS.replace("return out.transpose(1, 2)", "return out")
    assert findings(broken) == [("SC502", line_of(broken, "return out.reshape(b, t, -1)"))]
