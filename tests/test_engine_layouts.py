"""The engine's memory-layout and head-layout facts (``Permuted``, ``Reordered``, ``KernelLayout``,
``engine.facts.layouts``, ``engine.facts.norms``, ``engine.facts.sequence_layers``), black-box from
source. Expected layouts are what torch does (``is_contiguous()``, ``view`` raising or not)."""

from __future__ import annotations

import pytest

from shapecheck.engine.domain.tags import Permuted, Reordered
from shapecheck.engine.facts.layouts import (
    heads_merged_without_transpose,
    heads_split_without_transpose,
    misplaced_key_transpose,
    non_contiguous_merge,
)
from shapecheck.engine.facts.norms import layer_norm_sites, sequence_lengths
from shapecheck.engine.facts.sequence_layers import batch_first, batch_first_evidence, layer_calls
from tests.test_engine_ops import analyze_src, body, values_of


def layout(code: str, name: str = "y") -> tuple[int, ...] | None:
    tag = values_of(body(code))[name].tag(Permuted)
    return None if tag is None else tag.order


@pytest.mark.parametrize(
    ("code", "order"),
    [
        ("y = q.transpose(1, 2)", (0, 2, 1, 3)),
        ("y = q.permute(0, 2, 3, 1)", (0, 2, 3, 1)),
        ("y = x.transpose(0, 1).transpose(1, 2)", (1, 2, 0)),
        ("y = q.transpose(1, 2).transpose(1, 2)", None),  # back to row-major
        ("y = q.transpose(1, 2).contiguous()", None),
        ("y = q.transpose(1, 2).reshape(B, T, -1)", None),
        ("y = q.transpose(1, 2) * 2", (0, 2, 1, 3)),  # torch keeps the input's strides
        ("y = q.transpose(1, 2) + q.transpose(1, 2)", None),  # a new tensor: not tracked (never guessed)
        ("y = q.transpose(1, 2).detach()", (0, 2, 1, 3)),
        ("y = F.scaled_dot_product_attention(q, q, q).transpose(1, 2)", None),  # the kernel's strides
        ("y = F.scaled_dot_product_attention(q, q, q).contiguous().transpose(1, 2)", (0, 2, 1, 3)),
        ("y = m.T", (1, 0)),
    ],
)
def test_memory_layout_after_reordering(code: str, order) -> None:
    assert layout(code) == order


def test_reordered_records_only_the_last_reordering() -> None:
    values = values_of(body("k = q.transpose(1, 2)\ny = k.transpose(1, 2)"))
    tag = values["y"].tag(Reordered)
    assert tag.order == (0, 2, 1, 3) and not tag.contracts_features()
    assert values["y"].tag(Permuted) is None  # contiguous again, yet a wrong key transpose


def test_layout_of_a_branch_is_kept_only_when_both_paths_agree() -> None:
    code = "y = q.transpose(1, 2)\nif T > 1:\n    y = q\n"
    assert layout(code) is None


def _events(src: str, op: str):
    facts = analyze_src(src)
    return facts.events_of(op)


ATTENTION = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class A(nn.Module):
    def __init__(self, d=64, h=4):
        super().__init__()
        self.h = h
        self.q = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        {body}
'''


@pytest.mark.parametrize(
    ("line", "view_breaks", "split", "merge"),
    [
        ("y = torch.randn(b, self.h, t, d // self.h).transpose(1, 2).view(b, t, d)", True, False, False),
        # heads merged without moving them back: SC502's pattern; the view also raises, but the
        # axes do not group one-to-many, so the layout question stays unanswered (never guessed)
        ("y = self.q(x).view(b, t, self.h, d // self.h).transpose(1, 2).view(b, t, d)", False, False, True),
        ("y = self.q(x).view(b, t, self.h, d // self.h).transpose(1, 2).contiguous().view(b, t, d)", False, False, True),
        ("y = self.q(x).view(b, self.h, t, d // self.h)", False, True, False),
        ("y = self.q(x).view(b, t, self.h, d // self.h).transpose(1, 2).reshape(b, t, d)", False, False, True),
        ("y = self.q(x).view(b, t, self.h, d // self.h).transpose(0, 1).view(t, b, d)", False, False, False),
        ("y = self.q(x).view(b, t, self.h, d // self.h)", False, False, False),
    ],
)
def test_view_and_head_layout_questions(line: str, view_breaks: bool, split: bool, merge: bool) -> None:
    views = _events(ATTENTION.format(body=line), "view") + _events(ATTENTION.format(body=line), "reshape")
    assert any(non_contiguous_merge(e) for e in views) is view_breaks
    assert any(heads_split_without_transpose(e) for e in views) is split
    assert any(heads_merged_without_transpose(e) for e in views) is merge


@pytest.mark.parametrize(
    ("key", "wrong"),
    [
        ("k.transpose(-2, -1)", False),
        ("k.transpose(2, 3)", False),
        ("k.mT", False),
        ("k.transpose(1, 2)", True),
        ("k.T", True),
        ("k.permute(0, 2, 1, 3)", True),
    ],
)
def test_misplaced_key_transpose(key: str, wrong: bool) -> None:
    line = f"k = self.q(x).view(b, t, self.h, d // self.h).transpose(1, 2)\n        s = k @ {key}"
    (event,) = [e for e in _events(ATTENTION.format(body=line), "matmul") if e.run.inlined is False]
    assert (misplaced_key_transpose(event.tensor(0), event.tensor(1), event.assumptions) is not None) is wrong


NORMS = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class N(nn.Module):
    def __init__(self, vocab=10, d=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.ln = nn.LayerNorm((max_len, d))

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok(ids) + self.pos(torch.arange(t))
        return self.ln(x), F.layer_norm(x, x.shape[1:])
'''


def test_layer_norm_sites_read_the_normalized_shape() -> None:
    facts = analyze_src(NORMS)
    shapes = {tuple(str(d) for d in site.normalized) for site in layer_norm_sites(facts)}
    assert shapes == {("64", "32"), ("t", "32")}
    assert [str(d) for d in sequence_lengths(facts)] == ["64", "t"]


MHA = '''
import torch
import torch.nn as nn


class E(nn.Module):
    def __init__(self, vocab=10, d=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.attn = nn.MultiheadAttention(d, 4{flag})

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok(ids){move}
        return self.attn(x, x, x, key_padding_mask=ids == 0)
'''


@pytest.mark.parametrize(
    ("flag", "move", "first", "evidence"),
    [
        ("", "", False, True),
        ("", ".transpose(0, 1)", False, False),
        (", batch_first=True", "", True, True),
        (", batch_first=flag_from_config", "", None, True),
    ],
)
def test_batch_first_evidence(flag: str, move: str, first, evidence: bool) -> None:
    facts = analyze_src(MHA.format(flag=flag, move=move))
    calls = layer_calls(facts)
    assert calls and all(batch_first(call.module) is first for call in calls)
    assert any(batch_first_evidence(call, calls) is not None for call in calls) is evidence
