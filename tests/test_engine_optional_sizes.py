"""Sizes that differ between paths, and sizes a caller may leave out.

Vision attention modules take an optional head dim (``attn_head_dim: int | None = None``,
``head_dim: Optional[int] = None``) and fall back to ``dim // num_heads``. Read standalone, the
parameter is a size callers may give, or None: both paths run, and the head dim after them is the
path-joined size ``attn_head_dim|dim//num_heads``, equal to nothing known but itself. What is computed
from it on every path then still agrees: ``self.scale = head_dim ** -1`` against scores whose head
dim is that same size is the wrong scale on every path (SC102), and ``** -0.5`` is right on every
path. A renormalised attention matrix (``attn / attn.sum(-1, keepdim=True)``) is still the
weights that reach the values.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine import analyze
from shapecheck.linter import lint_source

OPTIONAL_HEAD_DIM = """
import torch
from torch import nn
from typing import Optional


class Attention(nn.Module):
    def __init__(self, dim: int, num_heads: int = 8, qkv_bias: bool = False, attn_head_dim: Optional[int] = None):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        if attn_head_dim is not None:
            head_dim = attn_head_dim
        all_head_dim = head_dim * self.num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, all_head_dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(all_head_dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, -1)
        return self.proj(x)
"""

#: The ``or`` fallback of an optional size, in the mmpretrain style.
OR_FALLBACK = """
import torch.nn as nn


class WindowSelfAttention(nn.Module):
    def __init__(self, embed_dims, num_heads, head_dims: int | None = None):
        super().__init__()
        self.num_heads = num_heads
        head_dims = head_dims or embed_dims // num_heads
        self.scale = head_dims ** -0.5
        self.to_qkv = nn.Linear(embed_dims, head_dims * num_heads * 3)
        self.out = nn.Linear(head_dims * num_heads, embed_dims)

    def forward(self, tokens):
        b, n, _ = tokens.shape
        q, k, v = self.to_qkv(tokens).reshape(b, n, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        weights = (q @ k.transpose(-2, -1)) * self.scale
        weights = weights.softmax(dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(b, n, -1))
"""

#: Gated positional self-attention (ConViT's style): content and positional attention mixed by a
#: learned gate, renormalised, and applied to the values in another method.
GATED = """
import torch
from torch import nn


class GatedPositionalAttention(nn.Module):
    def __init__(self, dim, num_heads=8):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.qk = nn.Linear(dim, dim * 2, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)
        self.pos_proj = nn.Linear(3, num_heads)
        self.gating = nn.Parameter(torch.ones(num_heads))
        self.attn_drop = nn.Dropout(0.1)

    def weights(self, x, rel_indices):
        B, N, C = x.shape
        qk = self.qk(x).reshape(B, N, 2, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k = qk[0], qk[1]
        pos_score = self.pos_proj(rel_indices).permute(0, 3, 1, 2).softmax(dim=-1)
        patch_score = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        gate = torch.sigmoid(self.gating.view(1, -1, 1, 1))
        attn = (1.0 - gate) * patch_score + gate * pos_score
        attn /= attn.sum(dim=-1).unsqueeze(-1)
        return self.attn_drop(attn)

    def forward(self, x, rel_indices):
        B, N, C = x.shape
        attn = self.weights(x, rel_indices)
        v = self.v(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        return (attn @ v).transpose(1, 2).reshape(B, N, C)
"""


def codes(source: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(source)
    result = lint_source(source, "attention.py")
    assert result.error is None
    return [(d.code, d.line) for d in result.diagnostics]


def line_of(source: str, text: str) -> int:
    lines = textwrap.dedent(source).splitlines()
    matches = [number for number, line in enumerate(lines, start=1) if text in line]
    assert len(matches) == 1, (text, matches)
    return matches[0]


def test_an_optional_head_dim_scaled_by_itself_is_found_on_every_path():
    assert codes(OPTIONAL_HEAD_DIM) == []
    bug = OPTIONAL_HEAD_DIM.replace("head_dim ** -0.5", "head_dim ** -1")
    assert codes(bug) == [("SC102", line_of(bug, "self.scale = head_dim ** -1"))]
    # Without the annotation the parameter could be anything (a tensor, a module): no size.
    untyped = bug.replace("attn_head_dim: Optional[int] = None", "attn_head_dim=None")
    assert codes(untyped) == []


def test_the_or_fallback_of_an_optional_size_keeps_both_paths():
    assert codes(OR_FALLBACK) == []
    bug = OR_FALLBACK.replace("head_dims ** -0.5", "head_dims ** -1")
    assert codes(bug) == [("SC102", line_of(bug, "self.scale = head_dims ** -1"))]


def test_the_head_dim_of_two_paths_is_one_joined_size():
    source = textwrap.dedent(OPTIONAL_HEAD_DIM)
    facts = analyze(cst.parse_module(source), source, "attention.py")
    shapes = {
        (a.name, str(a.value.shape))
        for run in facts.runs
        if run.qualname == "Attention.forward" and not run.inlined
        for a in run.assignments
        if a.name in ("q", "attn") and getattr(a.value, "shape", None) is not None
    }
    # The standalone instance has the default head count (8); its head dim is the given one or the
    # width's share, whichever path ran.
    assert shapes == {("q", "(B, 8, N, attn_head_dim|dim//8)"), ("attn", "(B, 8, N, N)")}


def test_renormalised_attention_still_reaches_the_values():
    assert codes(GATED) == []
    bug = GATED.replace("head_dim ** -0.5", "head_dim ** -1")
    assert codes(bug) == [("SC102", line_of(bug, "self.scale = head_dim ** -1"))]
    # Without the renormalisation the mixture still reaches the values (a sum of probabilities).
    plain = bug.replace("        attn /= attn.sum(dim=-1).unsqueeze(-1)\n", "")
    assert codes(plain) == [("SC102", line_of(plain, "self.scale = head_dim ** -1"))]
