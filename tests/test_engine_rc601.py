"""Sizes read off an input the engine cannot see tell which axis is the sequence (SC507).

``T = x.shape[1]`` (or ``x.size(1)``) on an input of unknown shape gives a size the engine keeps per
tensor and axis (``FileFacts.front_sizes``, filled by ``ops.base.read_trailing_size``). A mask built
from it says which axis the code treats as the sequence: an ``attn_mask`` ``(T, T)`` whose ``T``
was read off the query's axis 1, or a ``key_padding_mask`` ``(B, T)`` whose sizes were read off
axes 0 and 1, shows a batch-first input, whatever the input's rank is known to be
(``facts.sequence_layers._leading``). Given to an ``nn.MultiheadAttention`` built without
``batch_first=True``, torch raises when batch and sequence differ (checked in a scratch script with
``x = torch.randn(2, 5, 64)``: "The shape of the 2D attn_mask is torch.Size([5, 5]), but should be
(2, 2)" and "Expected key_padded_mask.shape[0] to be 5, but got 2"). Code that reads the sequence
off axis 0 (seq-first), builds the layer batch-first, or transposes the input first is left alone
(all three run with torch).
"""

from __future__ import annotations

import textwrap

import libcst as cst

from engine_snippets import findings_on_lines
from shapecheck.engine import analyze
from shapecheck.linter import lint_source

NANOGPT_STYLE = """
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, n_embd=64, n_head=4):
        super().__init__()
        self.ln = nn.LayerNorm(n_embd)
        self.attn = nn.MultiheadAttention(n_embd, n_head, dropout=0.1{batch_first})

    def forward(self, x):
        T = x.size(1)
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        h = self.ln(x)
        return x + self.attn(h, h, h, attn_mask=causal, need_weights=False)[0]
"""


def test_a_causal_mask_sized_off_axis_one_shows_a_batch_first_input() -> None:
    bug = NANOGPT_STYLE.format(batch_first="")
    assert findings_on_lines(bug) == [
        ("SC507", "self.attn = nn.MultiheadAttention(n_embd, n_head, dropout=0.1)")
    ]
    result = lint_source(textwrap.dedent(bug), "attention.py", {"SC507"})
    assert result.diagnostics[0].message == (
        "nn.MultiheadAttention built without batch_first=True reads its input (*, 64) as (seq, batch, feature), "
        "but the input is (batch, seq, feature): its attn_mask (T, T) is (seq, seq) with seq = T, the size read "
        "off axis 1 of the query (called in Block.forward)"
    )
    assert findings_on_lines(NANOGPT_STYLE.format(batch_first=", batch_first=True")) == []


HUGGING_FACE_STYLE = """
import torch
from torch import nn


class EncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(config.hidden_size, config.num_attention_heads)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        batch_size, seq_length = hidden_states.shape[0], hidden_states.shape[1]
        padding_mask = torch.zeros(batch_size, seq_length, dtype=torch.bool, device=hidden_states.device)
        attn_output, _ = self.self_attn(hidden_states, hidden_states, hidden_states, key_padding_mask=padding_mask)
        return hidden_states + self.dropout(attn_output)
"""


def test_a_padding_mask_sized_off_axes_zero_and_one_shows_a_batch_first_input() -> None:
    result = lint_source(textwrap.dedent(HUGGING_FACE_STYLE), "attention.py", {"SC507"})
    assert [(d.code, d.line) for d in result.diagnostics] == [("SC507", 9)]
    assert "its key_padding_mask (size1, size2) is (batch, seq) and matches axes 0 and 1 of the key" in (
        result.diagnostics[0].message
    )


def test_a_bool_mask_of_an_annotated_query_read_inline() -> None:
    source = """
    import torch
    import torch.nn as nn


    class CausalSelfAttention(nn.Module):
        def __init__(self, dim: int, heads: int):
            super().__init__()
            self.mha = nn.MultiheadAttention(dim, heads)

        def forward(self, query: torch.Tensor) -> torch.Tensor:
            n = query.shape[1]
            mask = torch.ones((n, n), dtype=torch.bool).triu(1)
            out, _ = self.mha(query, query, query, attn_mask=mask)
            return out
    """
    assert findings_on_lines(source) == [("SC507", "self.mha = nn.MultiheadAttention(dim, heads)")]


def test_the_size_read_survives_a_cast_and_a_layer_norm() -> None:
    """audiocraft's ``query, key, value = [x.float() for x in [query, key, value]]`` before its
    ``nn.MultiheadAttention``; nanoGPT's ``self.ln(x)`` above (the message shows the LayerNorm's
    ``(*, 64)``). A shape-changing op (``transpose``) carries nothing: below, clean."""
    source = """
    import torch
    import torch.nn as nn


    class AsFloat(nn.Module):
        def __init__(self, d_model=64, n_heads=4):
            super().__init__()
            self.attn = nn.MultiheadAttention(d_model, n_heads)

        def forward(self, x):
            t = x.shape[1]
            mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
            x = x.float()
            return self.attn(x, x, x, attn_mask=mask)[0]
    """
    assert findings_on_lines(source) == [("SC507", "self.attn = nn.MultiheadAttention(d_model, n_heads)")]


def test_the_size_read_is_kept_per_tensor_and_axis() -> None:
    source = textwrap.dedent(NANOGPT_STYLE.format(batch_first=""))
    facts = analyze(cst.parse_module(source), source, "attention.py")
    read = {(axis, str(dim)) for (_, axis), (_, dim) in facts.front_sizes.items()}
    assert read == {(1, "T")}


SEQ_FIRST = """
import torch
import torch.nn as nn


class SeqFirst(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, x):
        seq_len = x.shape[0]
        causal = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1)
        return self.attn(x, x, x, attn_mask=causal)[0]


class SeqFirstPadding(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, x):
        seq, batch = x.shape[0], x.shape[1]
        pad = torch.zeros(batch, seq, dtype=torch.bool)
        return self.attn(x, x, x, key_padding_mask=pad)[0]


class TransposedFirst(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, x):
        t = x.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        x = x.transpose(0, 1)
        return self.attn(x, x, x, attn_mask=mask)[0].transpose(0, 1)


class BatchFirst(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x):
        t = x.size(1)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        return self.attn(x, x, x, attn_mask=mask)[0]


class TransposedAnnotated(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, x: torch.Tensor):
        t = x.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        x = x.transpose(0, 1)
        return self.attn(x, x, x, attn_mask=mask)[0].transpose(0, 1)


class SeqFirstBatchRead(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, x, length: int):
        batch = x.shape[1]
        mask = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
        return self.attn(x, x, x, attn_mask=mask)[0].reshape(length, batch, 64)


class OnlyTheBatchRead(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, x, mask):
        b = x.shape[1]
        return self.attn(x, x, x, attn_mask=mask)[0].reshape(-1, b, 64)
"""


def test_seq_first_code_and_batch_first_layers_stay_clean() -> None:
    assert findings_on_lines(SEQ_FIRST) == []


SQUARE_INPUT = """
import torch
import torch.nn as nn


class Square(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, x):
        n0, n1 = x.shape[0], x.shape[1]
        assert n0 == n1
        mask = torch.triu(torch.ones(n1, n1, dtype=torch.bool), diagonal=1)
        pad = torch.zeros(n0, n1, dtype=torch.bool)
        return self.attn(x, x, x, attn_mask=mask, key_padding_mask=pad)[0]
"""


def test_sizes_read_off_a_square_input_tell_nothing() -> None:
    """With batch == seq the layout cannot be told apart (and torch runs either way)."""
    assert findings_on_lines(SQUARE_INPUT) == []
