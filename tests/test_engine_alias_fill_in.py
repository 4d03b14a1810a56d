"""``if context is None: context = hidden_states``: cross-attention that falls back to
self-attention. Run with what a caller passed, a value the engine cannot see (the result of an
unseen call, a join of a tuple and a tensor), the name after the ``if`` is that value or the other
input: not the other input, whose width may differ (diffusers' Cosmos gives its cross-attention a
text context of 1024 features beside a 4096-wide stream; taking the stream for the context made a
false SC406). A context left out (None) is the stream; one the engine knows is itself."""

from __future__ import annotations

import textwrap

from shapecheck.linter import lint_source

MODEL = """
import torch
from torch import nn

from .text import encode


class CrossAttention(nn.Module):
    def __init__(self, dim=64, context_dim=32):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(context_dim, dim)

    def forward(self, hidden_states, context=None):
        if context is None:
            context = hidden_states
        return self.to_q(hidden_states) @ self.to_k(context).transpose(-2, -1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = CrossAttention()

    def forward(self, tokens):
        x = torch.randn(2, 8, 64)
        return self.attn(x, {context})
"""


def _codes(context: str) -> list[str]:
    return [d.code for d in lint_source(textwrap.dedent(MODEL.format(context=context)), "model.py").diagnostics]


def test_a_context_the_engine_cannot_see_is_not_taken_for_the_stream():
    assert _codes("encode(tokens)") == []


def test_a_context_left_out_is_the_stream():
    assert _codes("None") == ["SC505"]


def test_a_known_context_of_the_wrong_width_is_reported():
    assert _codes("torch.randn(2, 7, 48)") == ["SC505"]


def test_a_known_context_of_the_right_width_is_clean():
    assert _codes("torch.randn(2, 7, 32)") == []


def test_a_fill_in_computed_from_the_stream_keeps_its_shape():
    source = MODEL.replace("context = hidden_states", "context = hidden_states * 2")
    assert [d.code for d in lint_source(textwrap.dedent(source.format(context="encode(tokens)")), "model.py").diagnostics] == ["SC505"]


def test_the_fallback_nested_in_another_branch_is_judged_the_same():
    source = MODEL.replace(
        "        if context is None:\n            context = hidden_states\n",
        "        if hidden_states.dim() == 3:\n            if context is None:\n                context = hidden_states\n",
    )
    assert [d.code for d in lint_source(textwrap.dedent(source.format(context="encode(tokens)")), "model.py").diagnostics] == []
