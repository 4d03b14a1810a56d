"""A scale the code applied explicitly, with a factor the engine cannot read (``q * scale`` where
``scale = default(self.scale, dim_head ** -0.5)``), survives a later product with a tensor (an xpos
or rotary table), as a readable factor does. local-attention scales this way and then applies
rotary embeddings in another file, which project-wide analysis follows: losing the scale there was
a false positive of SC101. A sum that merely mixed a scaled value into unscaled ones is not an
explicit scale: a residual stream does not become a scaled query."""

from __future__ import annotations

import textwrap

from shapecheck.linter import lint_source

HEADER = """
import torch
from jaxtyping import Float
from torch import Tensor


def default(value, fallback):
    return value if value is not None else fallback
"""


def _codes(body: str) -> list[str]:
    source = HEADER + textwrap.dedent(body)
    return [d.code for d in lint_source(source, "attn.py").diagnostics]


def test_an_unreadable_scale_survives_a_rotary_table_product():
    assert _codes("""
        def attend(q: Float[Tensor, "2 4 8 64"], k, v, freqs: Float[Tensor, "8 64"], custom=None):
            scale = default(custom, q.shape[-1] ** -0.5)
            q = q * scale
            q = q * freqs.cos() * freqs.sin()
            sim = torch.einsum("b h i d, b h j d -> b h i j", q, k)
            return sim.softmax(dim=-1) @ v
        """) == []


def test_an_unreadable_scale_survives_the_rotated_halves_joined():
    assert _codes("""
        def rotate_half(x):
            x1, x2 = x.chunk(2, dim=-1)
            return torch.cat((-x2, x1), dim=-1)


        def attend(q: Float[Tensor, "2 4 8 64"], k, v, cos: Float[Tensor, "8 64"], sin: Float[Tensor, "8 64"], custom=None):
            q = q * default(custom, q.shape[-1] ** -0.5)
            q = q * cos + rotate_half(q) * sin
            sim = torch.einsum("b h i d, b h j d -> b h i j", q, k)
            return sim.softmax(dim=-1) @ v
        """) == []


def test_a_sum_of_differently_scaled_values_is_still_scaled():
    assert _codes("""
        def attend(q: Float[Tensor, "2 4 8 64"], k: Float[Tensor, "2 4 8 64"], v, cos: Float[Tensor, "8 64"]):
            both = q * 0.125 + q * 0.25
            both = both * cos
            sim = torch.einsum("b h i d, b h j d -> b h i j", both, k)
            return sim.softmax(dim=-1) @ v
        """) == []


def test_a_sum_that_mixed_in_a_scaled_value_is_no_scale():
    assert _codes("""
        def attend(q: Float[Tensor, "2 4 8 64"], k: Float[Tensor, "2 4 8 64"], v, cos: Float[Tensor, "8 64"], custom=None):
            mixed = q * default(custom, 0.125) + q
            mixed = mixed * cos
            sim = torch.einsum("b h i d, b h j d -> b h i j", mixed, k)
            return sim.softmax(dim=-1) @ v
        """) == ["SC101"]
