"""Minimal reproductions of false positives found on real model code (transformers, timm).

Each snippet is written from scratch in the style of the code that was wrongly flagged; the comment
names the model where the pattern was seen. Every one must stay clean under all rules, and a
bug-carrying twin shows that the rule involved still fires where it should.
"""

from __future__ import annotations

import textwrap

import pytest

from shapecheck.linter import lint_source


def codes(source: str) -> list[tuple[int, str]]:
    result = lint_source(textwrap.dedent(source), "regression.py")
    assert result.error is None
    return [(d.line, d.code) for d in result.diagnostics]


FUSED_QKV_INDEXED = """
import torch
from torch import nn

class Attention(nn.Module):  # timm cait / blip: qkv[0], qkv[1], qkv[2]
    def __init__(self, dim=64, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, N, C)
"""

HEADS_VIEW_WITH_MINUS_ONE = """
import torch
from torch import nn

class Attention(nn.Module):  # deberta / wavlm: x.size()[:-1] + (heads, -1)
    def __init__(self, hidden=64, heads=4):
        super().__init__()
        self.heads = heads
        self.in_proj = nn.Linear(hidden, 3 * hidden)

    def split_heads(self, x):
        new_shape = x.size()[:-1] + (self.heads, -1)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        qkv = self.split_heads(self.in_proj(hidden_states))
        return qkv
"""

SLOT_ATTENTION = """
import torch
from torch import nn

class AssignAttention(nn.Module):  # groupvit: softmax over the queries, renormalised over the keys
    def __init__(self, dim=32):
        super().__init__()
        self.scale = dim ** -0.5
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)

    def forward(self, query, key):
        value = self.v_proj(key)
        raw = (self.q_proj(query) @ self.k_proj(key).transpose(-2, -1)) * self.scale
        attn = raw.softmax(dim=-2)
        attn = attn / (attn.sum(dim=-1, keepdim=True) + 1e-6)
        return attn @ value
"""

SCALED_STREAMS_CHUNKED = """
import torch
from torch import nn

class NgramAttention(nn.Module):  # prophetnet: scaled query chunked into streams, restacked
    def __init__(self, hidden=64, heads=4, ngram=2):
        super().__init__()
        self.head_dim = hidden // heads
        self.ngram = ngram
        self.query_proj = nn.Linear(hidden, hidden)
        self.key_proj = nn.Linear(hidden, hidden)

    def forward(self, hidden_states):
        query = self.query_proj(hidden_states) / (self.head_dim ** 0.5)
        key = self.key_proj(hidden_states)
        streams = query.chunk(1 + self.ngram, dim=1)
        predict = torch.stack(streams[1:], 1)
        keys = torch.stack(key.chunk(1 + self.ngram, dim=1)[1:], 1)
        weights = torch.einsum("bnhtc,bnhsc->bnhts", (predict, keys))
        probs = torch.softmax(weights, dim=-1)
        return torch.einsum("bnhts,bnhsc->bnhtc", probs, keys)
"""

MATCHING_NOT_ATTENTION = """
import torch
from torch import nn

class Matcher(nn.Module):  # lightglue / pointer networks: q @ k^T is a score, never applied to values
    def __init__(self, dim=32):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, descriptors):
        d = self.proj(descriptors)
        similarity = d @ d.transpose(-1, -2)
        mask = torch.tril(torch.ones(similarity.size(-1), similarity.size(-1))).bool()
        return torch.log_softmax(similarity.masked_fill(mask, -1e4), dim=-1)
"""

QK_NORM_SCALE_ONE = """
import torch
from torch import nn

class Attention(nn.Module):  # gemma-style QK-norm with scale 1.0
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.q_norm = nn.LayerNorm(dim // heads)
        self.k_norm = nn.LayerNorm(dim // heads)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k = self.q_norm(q), self.k_norm(k)
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
"""


@pytest.mark.parametrize(
    "source",
    [FUSED_QKV_INDEXED, HEADS_VIEW_WITH_MINUS_ONE, SLOT_ATTENTION, SCALED_STREAMS_CHUNKED, MATCHING_NOT_ATTENTION, QK_NORM_SCALE_ONE],
    ids=["fused-qkv-indexed", "heads-view-minus-one", "slot-attention", "scaled-streams-chunked", "matching-not-attention", "qk-norm"],
)
def test_real_code_pattern_stays_clean(source: str) -> None:
    assert codes(source) == []


def test_shared_index_of_one_fused_projection_is_still_shared() -> None:
    buggy = FUSED_QKV_INDEXED.replace("qkv[0], qkv[1], qkv[2]", "qkv[0], qkv[0], qkv[2]")
    assert [code for _, code in codes(buggy)] == ["SC401"]


def test_slot_attention_without_renormalisation_is_flagged() -> None:
    buggy = SLOT_ATTENTION.replace("        attn = attn / (attn.sum(dim=-1, keepdim=True) + 1e-6)\n", "")
    assert [code for _, code in codes(buggy)] == ["SC103"]


def test_minus_one_head_split_that_cannot_divide_is_flagged() -> None:
    buggy = HEADS_VIEW_WITH_MINUS_ONE.replace("(self.heads, -1)", "(self.heads, 5)")
    assert [code for _, code in codes(buggy)] == ["SC403"]
