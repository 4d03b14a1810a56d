"""A finding lands on the line a user would change, and names where its values come from."""

from __future__ import annotations

import textwrap

from shapecheck.linter import lint_source

MODEL = """
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Config:
    width: int = 128
    heads: int = HEADS


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.heads = config.heads
        self.qkv = nn.Linear(config.width, 3 * config.width)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        return (q @ k.transpose(-2, -1)).softmax(dim=-1)


if __name__ == "__main__":
    model = Attention(BUILD)
    model(torch.randn(2, 8, 128))
"""


def diagnostics(heads: str, build: str):
    source = textwrap.dedent(MODEL).replace("HEADS", heads).replace("BUILD", build)
    result = lint_source(source, "model.py")
    assert result.error is None
    return source.splitlines(), result.diagnostics


def test_head_count_default_is_reported_at_the_default() -> None:
    lines, found = diagnostics("6", "Config()")
    assert [(d.code, lines[d.line - 1].strip()) for d in found] == [("SC402", "heads: int = 6")]
    assert "Config.heads default" in found[0].message and "128" in found[0].message


def test_head_count_given_at_construction_is_reported_at_the_argument() -> None:
    lines, found = diagnostics("4", "Config(heads=6)")
    assert [(d.code, lines[d.line - 1].strip()) for d in found] == [("SC402", "model = Attention(Config(heads=6))")]
    assert "Config(heads=...)" in found[0].message


def test_dividing_head_count_is_clean() -> None:
    assert diagnostics("4", "Config()")[1] == []
