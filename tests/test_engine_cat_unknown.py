"""``torch.cat`` with an operand the engine cannot see (the result of an imported helper): torch
requires every operand to have the rank and the other dims of the known one, so the result keeps
that layout with the joined axis of unknown size. timm's rotary attention keeps its prefix tokens
apart this way (``torch.cat([q[:, :, :npt], apply_rot_embed_cat(q[:, :, npt:], rope)], dim=2)``),
and the query and key then still reach the scores in the head layout, so a key transposed over
the wrong axes is found (SC504). The rotated queries are "maybe scaled" (an unseen helper may
scale), so a missing scale is left to the project-wide analysis, which reads the helper."""

from __future__ import annotations

import textwrap

from shapecheck.linter import lint_source

ROTARY = """
import torch
from torch import nn

from .pos_embed import apply_rot_embed_cat


class Attention(nn.Module):
    def __init__(self, dim=768, num_heads=12, num_prefix_tokens=1):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.num_prefix_tokens = num_prefix_tokens
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, rope=None):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if rope is not None:
            npt = self.num_prefix_tokens
            q = torch.cat([q[:, :, :npt, :], apply_rot_embed_cat(q[:, :, npt:, :], rope)], dim=2).type_as(v)
            k = torch.cat([k[:, :, :npt, :], apply_rot_embed_cat(k[:, :, npt:, :], rope)], dim=2).type_as(v)
        q = q * self.scale
        attn = q @ KEY
        attn = attn.softmax(dim=-1)
        x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj(x)
"""


def _codes(source: str) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in lint_source(textwrap.dedent(source), "attention.py").diagnostics]


def test_a_query_rotated_by_an_unseen_helper_keeps_its_head_layout_up_to_the_scores():
    scores_line = next(n for n, line in enumerate(ROTARY.splitlines(), 1) if "attn = q @ KEY" in line)
    assert _codes(ROTARY.replace("KEY", "k.transpose(1, 2)")) == [("SC504", scores_line)]
    assert _codes(ROTARY.replace("KEY", "k.transpose(-2, -1)")) == []


def test_the_joined_axis_is_of_unknown_size_and_the_others_are_kept():
    """Along an axis before the last: that axis unknown, the others kept; along the last (the
    features): unknown, as before (the width could not be checked, and the leading dims it kept met
    path-insensitive joins in real code: Qwen2.5-Omni's doubled classifier-free-guidance batch)."""
    from shapecheck.engine import analyze
    from shapecheck.parsing import parse_module

    source = """
    import torch
    from helpers import rotate


    def f():
        x = torch.randn(2, 4, 10, 16)
        y = torch.cat([x[:, :, :1], rotate(x[:, :, 1:])], dim=2)
        z = torch.cat([rotate(x), x], dim=-1)
        w = torch.cat([rotate(x), x[0]], dim=-1)
        return y, z, w
    """
    text = textwrap.dedent(source)
    facts = analyze(parse_module(text), text, "m.py")
    shapes = {a.name: str(a.value.shape) for run in facts.runs for a in run.assignments if a.name in ("y", "z", "w")}
    assert shapes["y"] == "(2, 4, _, 16)"
    assert shapes["z"] == "None"  # joined along the features: nothing downstream can be checked
    assert shapes["w"] == "None"


def test_an_elementwise_combination_is_the_output_of_the_one_projection_it_comes_from():
    """RoPE (``q * cos + rotate_half(q) * sin``, the tables passed in) is still the query
    projection's output; a product of two projections (``q * k``) is neither's; the two halves of one
    projection joined by ``rotate_half`` are that projection's; halves of two are not."""
    from shapecheck.engine import analyze
    from shapecheck.engine.domain.values import ProjectionTag
    from shapecheck.parsing import parse_module

    source = """
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, dim=64):
            super().__init__()
            self.q_proj = nn.Linear(dim, dim)
            self.k_proj = nn.Linear(dim, dim)

        def forward(self, x, cos, sin):
            q, k = self.q_proj(x), self.k_proj(x)
            half = q.shape[-1] // 2
            rotated = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
            roped = q * cos + rotated * sin
            mixed = q * k
            crossed = torch.cat((q[..., :half], k[..., half:]), dim=-1)
            gated = q * torch.sigmoid(x)
            return roped, mixed, crossed, gated
    """
    text = textwrap.dedent(source)
    facts = analyze(parse_module(text), text, "m.py")
    run = next(r for r in facts.runs if r.qualname == "Block.forward" and not r.inlined)
    values = {a.name: a.value for a in run.assignments}
    label = lambda name: (values[name].tag(ProjectionTag).ident.label if values[name].tag(ProjectionTag) else None)
    assert label("rotated") == "self.q_proj"
    assert label("roped") == "self.q_proj"
    assert label("mixed") is None
    assert label("crossed") is None
    assert label("gated") == "self.q_proj"
