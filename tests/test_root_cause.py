"""One root cause, one finding: what breaks downstream of a reported bug is not reported again."""

from __future__ import annotations

import textwrap

from shapecheck.linter import lint_source

GPT = """
import math
import torch
import torch.nn as nn
from torch.nn import functional as F


class SelfAttention(nn.Module):
    def __init__(self, width, heads, block):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.heads, self.width = heads, width
        self.register_buffer("causal", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(self.width, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.causal[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.out(y.transpose(1, 2).contiguous().view(B, T, C))


class Layer(nn.Module):
    def __init__(self, width, heads, block):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.attn = SelfAttention(width, heads, block)
        self.ff = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.norm(x))
        return x + self.ff(x)


class TinyLM(nn.Module):
    def __init__(self, vocab=100, width=64, heads=4, block=32, depth=2):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(block, width)
        self.layers = nn.ModuleList([Layer(width, heads, block) for _ in range(depth)])
        self.head = nn.Linear(width, vocab)

    def forward(self, ids):
        b, t = ids.shape
        pos = torch.arange(t)
        x = COMBINE
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


if __name__ == "__main__":
    logits = TinyLM()(torch.randint(0, 100, (2, 16)))
"""


def findings(source: str) -> list[tuple[int, str]]:
    result = lint_source(textwrap.dedent(source), "model.py")
    assert result.error is None
    return [(d.line, d.code) for d in result.diagnostics]


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


def test_correct_model_is_clean() -> None:
    assert findings(GPT.replace("COMBINE", "self.tokens(ids) + self.positions(pos)")) == []


def test_concatenated_pe_is_one_finding_at_the_cat() -> None:
    source = GPT.replace("COMBINE", "torch.cat([self.tokens(ids), self.positions(pos).expand(b, t, -1)], dim=-1)")
    assert findings(source) == [(line_of(source, "torch.cat"), "SC301")]


def test_without_the_root_finding_the_follow_ons_are_reported() -> None:
    # The same width-doubling cat with SC301 deselected: the conflicts it causes are real findings.
    source = GPT.replace("COMBINE", "torch.cat([self.tokens(ids), self.positions(pos).expand(b, t, -1)], dim=-1)")
    result = lint_source(textwrap.dedent(source), "model.py", selected={"SC505", "SC403", "SC405", "SC406"})
    # the first layer that receives the doubled width is now the root; what follows from it is not
    assert [(d.line, d.code) for d in result.diagnostics] == [(line_of(source, "self.qkv(x)"), "SC505")]


def test_annotation_violation_goes_on_with_the_annotated_shape() -> None:
    source = """
    import torch
    from torch import nn
    from jaxtyping import Float
    from torch import Tensor


    class Block(nn.Module):
        def __init__(self, d_model=64):
            super().__init__()
            self.proj = nn.Linear(d_model, d_model)
            self.out = nn.Linear(d_model, d_model)

        def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
            h: Float[Tensor, "b t d_model"] = self.proj(x)[..., :32]
            return self.out(h) + x
    """
    lines = findings(source)
    assert lines == [(line_of(source, "h: Float"), "SC506")]


def test_scores_plus_a_mask_of_the_wrong_shape_is_a_mask_finding() -> None:
    source = """
    import math
    import torch
    from jaxtyping import Float
    from torch import Tensor


    def attend(q: Float[Tensor, "b h 16 64"], k: Float[Tensor, "b h 16 64"], v: Float[Tensor, "b h 16 64"]):
        bias = torch.zeros(32, 32)
        scores = q @ k.transpose(-2, -1) / math.sqrt(64) + bias
        return torch.softmax(scores, dim=-1) @ v
    """
    assert findings(source) == [(line_of(source, "+ bias"), "SC202")]


MIXER = """
import torch
import torch.nn as nn


class Mixer(nn.Module):
    def __init__(self, vocab=100, width=64, block=32):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(block, width)
        self.proj = nn.Linear(width, width)

    def project(self, h):
        return self.proj(h)

    def forward(self, ids, other):
        b, t = ids.shape
        pos = torch.arange(t)
        x = torch.cat([self.tokens(ids), self.positions(pos).expand(b, t, -1)], dim=-1)
        FIRST
        SECOND
        return y + z


if __name__ == "__main__":
    out = Mixer()(torch.randint(0, 100, (2, 16)), torch.randn(2, 16, OTHER_WIDTH))
"""


def _mixer(first: str, second: str, other_width: int) -> str:
    return MIXER.replace("FIRST", first).replace("SECOND", second).replace("OTHER_WIDTH", str(other_width))


def test_helper_met_only_downstream_of_the_root_is_not_reported() -> None:
    # both calls give `project` the doubled width of the cat: its conflict follows from the cat in
    # every context, so only the cat is reported
    source = _mixer("y = self.project(x)", "z = self.project(x)", 64)
    assert findings(source) == [(line_of(source, "torch.cat"), "SC301")]


def test_helper_wrong_in_a_context_of_its_own_is_reported_in_either_call_order() -> None:
    # `project` conflicts twice: once downstream of the reported cat, once on a 32-wide input of its
    # own. Its causes are the intersection over both contexts (empty), so it is a root finding; the
    # union, or the causes of only the first or only the last context, would drop it.
    for first, second in [("y = self.project(x)", "z = self.project(other)"),
                          ("z = self.project(other)", "y = self.project(x)")]:
        source = _mixer(first, second, 32)
        assert findings(source) == [
            (line_of(source, "return self.proj(h)"), "SC505"),
            (line_of(source, "torch.cat"), "SC301"),
        ], (first, second)


def test_helper_given_a_right_width_in_its_other_context_stays_downstream() -> None:
    # the other context is correct (64 wide): no conflict there, so the only conflict's causes hold
    source = _mixer("y = self.project(x)", "z = self.project(other)", 64)
    assert findings(source) == [(line_of(source, "torch.cat"), "SC301")]


def test_a_finding_moved_to_the_constructor_still_roots_what_follows_from_its_call() -> None:
    # SC406 is reported at the Linear's constructor (where the fix goes); the residual that adds the
    # layer's wrong-width output follows from the call, and is not a second finding.
    source = """
    from torch import nn


    class FeedForward(nn.Module):
        def __init__(self, width=64):
            super().__init__()
            self.up = nn.Linear(width, 2 * width)
            self.down = nn.Linear(width, width // 2)

        def forward(self, x):
            return x + self.down(self.up(x))
    """
    assert findings(source) == [(line_of(source, "self.down = nn.Linear"), "SC406")]
    alone = lint_source(textwrap.dedent(source), "model.py", selected={"SC405"})
    assert [d.code for d in alone.diagnostics] == ["SC405"]
