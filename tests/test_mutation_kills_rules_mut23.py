"""Rule decisions that mutation testing found unpinned, branch ``mut23`` (benchmarks/mutation_testing.py):
SC302's last survivors and rule survivors earlier sessions left "not killed".

Each test names its rule code, so ``-k SCnnn`` selects it with the rule's other tests. Every snippet's
broadcast was run under torch 2.13 first: a finding is reported only where torch raises for a sequence
shorter than the table.
"""

from __future__ import annotations

from shapecheck.linter import lint_source


def _found(code: str, rule: str) -> list[tuple[int, int]]:
    result = lint_source(code, "snippet.py", {rule})
    assert result.error is None, result.error
    return sorted((d.line, d.column) for d in result.diagnostics if d.code == rule)


def _messages(code: str, rule: str) -> list[tuple[int, str]]:
    result = lint_source(code, "snippet.py", {rule})
    assert result.error is None, result.error
    return sorted((d.line, d.message) for d in result.diagnostics if d.code == rule)


# ------------------------------------------------------------------------------------------- SC302

SC302_TOKENS_WITH_POSITIONS = """import math

import torch
from jaxtyping import Int
from torch import Tensor, nn

from .segments import segment_embedding


class Embeddings(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(max_len, d_model)
        position = torch.arange(max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, ids: Int[Tensor, "b t"]):
        b, t = ids.shape
        learned = self.tok(ids) + self.wpe(torch.arange(t, device=ids.device))
        segments = self.tok(ids) + segment_embedding(ids)
        return learned + self.pe, segments + self.pe
"""


def test_SC302_a_whole_table_added_to_tokens_that_already_carry_positions_is_unsliced() -> None:
    """Tokens that already carry positions (a learned lookup of ``arange(t)`` added, or a helper the
    engine cannot see, which may add some) are still a length-``t`` sequence: the whole 64-row
    sinusoidal buffer added to them cannot broadcast (torch: "size of tensor a (16) must match the
    size of tensor b (64)"). Only positions themselves (another table, its rows, position ids) are
    no sequence."""
    assert _messages(SC302_TOKENS_WITH_POSITIONS, "SC302") == [
        (26, "positional table of length 64 added unsliced to a sequence of length t"),
        (26, "positional table of length 64 added unsliced to a sequence of length t"),
    ]
    assert _found(SC302_TOKENS_WITH_POSITIONS, "SC302") == [(26, 26), (26, 46)]


SC302_BERT_EMBEDDINGS = """import torch
from jaxtyping import Int
from torch import Tensor, nn


class BertEmbeddings(nn.Module):
    def __init__(self, vocab_size=100, type_vocab_size=2, hidden_size=32, max_position_embeddings=64):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, hidden_size)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)

    def forward(self, input_ids: Int[Tensor, "b t"], token_type_ids: Int[Tensor, "b t"]):
        t = input_ids.size(1)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        return embeddings + self.position_embeddings(torch.arange(t))
"""


def test_SC302_bert_word_plus_token_type_embeddings_are_no_table() -> None:
    """Word plus token-type embeddings (two token lookups, no parameter of either) and positions looked
    up with ``arange(t)``: nothing to report, and no crash on an operand with no parameter."""
    assert _found(SC302_BERT_EMBEDDINGS, "SC302") == []


SC302_CHANNELS_FIRST = """import torch
from jaxtyping import Int
from torch import Tensor, nn


class TextEncoder(nn.Module):
    def __init__(self, n_symbols=60, channels=32, max_len=64):
        super().__init__()
        self.embedding = nn.Embedding(n_symbols, channels)
        self.pos = nn.Parameter(torch.zeros(1, max_len, channels))
        self.conv = nn.Conv1d(channels, channels, kernel_size=5, padding=2)

    def forward(self, text: Int[Tensor, "b t"]):
        x = self.embedding(text).transpose(1, 2)
        x = x + self.pos.transpose(1, 2)
        return self.conv(x)
"""


def test_SC302_a_whole_table_transposed_for_channels_first_tokens_is_unsliced() -> None:
    """A TTS text encoder keeps its tokens channels-first ``(b, d, t)`` for the convolutions; the whole
    ``(1, max_len, d)`` table transposed to ``(1, d, max_len)`` still has its 64 rows (torch: "size of
    tensor a (10) must match the size of tensor b (64)"). No fix: the table is a call, not a name."""
    result = lint_source(SC302_CHANNELS_FIRST, "snippet.py", {"SC302"})
    assert result.error is None, result.error
    assert [(d.line, d.column, d.message, d.fix) for d in result.diagnostics] == [
        (15, 17, "positional table of length 64 added unsliced to a sequence of length t", None),
    ]


SC302_KEPT_POSITIONS = """import torch
from jaxtyping import Bool, Int
from torch import Tensor, nn

from .helpers import keep_indices


class MaskedTokens(nn.Module):
    def __init__(self, vocab_size=100, dim=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos_embed = nn.Parameter(torch.zeros(1, max_len, dim))

    def forward(self, ids: Int[Tensor, "b t"], keep: Int[Tensor, "k"], mask: Bool[Tensor, "m"]):
        x = self.tok(ids)
        a = x + self.pos_embed[:, keep]
        b = x + self.pos_embed[:, mask]
        c = x + self.pos_embed[:, keep_indices(ids)]
        d = x + self.pos_embed[:, self.first:]
        return a, b, c, d
"""


def test_SC302_a_table_indexed_by_kept_or_selected_positions_is_not_unsliced() -> None:
    """MAE-style: the table indexed by the kept positions (an index tensor, a boolean mask, a helper's
    indices, or rows from ``self.first`` on) has rows picked for the sequence, of a size the engine
    cannot read: no claim, and no crash on the unknown shape."""
    assert _found(SC302_KEPT_POSITIONS, "SC302") == []


SC302_ASSERTED_LENGTH = """from dataclasses import dataclass

import torch
import torch.nn as nn
from jaxtyping import Int
from torch import Tensor


@dataclass
class GPTConfig:
    vocab_size: int = 50
    block_size: int = 16
    n_embd: int = 32


class FixedLengthEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd))

    def forward(self, idx: Int[Tensor, "b t"]):
        b, t = idx.size()
        assert t == self.config.block_size, f"expected {self.config.block_size} tokens, got {t}"
        return self.wte(idx) + self.wpe
"""


def test_SC302_a_whole_table_after_asserting_the_block_size_is_right() -> None:
    """``assert t == block_size`` before the whole ``(1, block_size, d)`` table is added: the sequence
    length is the table's on the path that reaches the addition (the assumption is the event's)."""
    assert _found(SC302_ASSERTED_LENGTH, "SC302") == []
    unchecked = SC302_ASSERTED_LENGTH.replace("        assert t == self.config.block_size", "        # unchecked")
    assert _found(unchecked, "SC302") == [(26, 32)]


SC302_WHOLE_WINDOWS = """import torch
from jaxtyping import Int
from torch import Tensor, nn


class WindowedEmbeddings(nn.Module):
    def __init__(self, vocab_size, d_model, max_len, window):
        super().__init__()
        self.window = window
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Parameter(torch.zeros(1, max_len, d_model))

    def forward(self, ids: Int[Tensor, "b t"]):
        b, t = ids.shape
        n = (t // self.window) * self.window
        x = self.tok(ids[:, :n])
        return x + self.pos
"""


def test_SC302_tokens_cut_to_whole_windows_against_a_plain_max_len_table_are_unsliced() -> None:
    """``_same_formula`` judges two formulas only: ``window * (t // window)`` tokens against a table of
    a plain ``max_len`` rows would look equal with every symbol renamed to one, but the table is simply
    not sliced (torch: "size of tensor a (16) must match the size of tensor b (64)")."""
    assert _messages(SC302_WHOLE_WINDOWS, "SC302") == [
        (17, "positional table of length max_len added unsliced to a sequence of length window*(t//window)"),
    ]


SC302_SPECIAL_TOKENS = """import torch
from torch import nn


class VisionEmbeddings(nn.Module):
    def __init__(self, image_size, patch_size, hidden_size):
        super().__init__()
        num_positions = (image_size // patch_size) ** 2 + 1
        self.class_embedding = nn.Parameter(torch.randn(hidden_size))
        self.distillation_token = nn.Parameter(torch.zeros(1, 1, hidden_size))
        self.patch_embedding = nn.Conv2d(3, hidden_size, kernel_size=patch_size, stride=patch_size)
        self.position_embedding = nn.Embedding(num_positions, hidden_size)
        self.register_buffer("position_ids", torch.arange(num_positions).expand((1, -1)))

    def forward(self, pixel_values):
        b = pixel_values.shape[0]
        patches = self.patch_embedding(pixel_values).flatten(2).transpose(1, 2)
        special = torch.cat([self.class_embedding.expand(b, 1, -1), self.distillation_token.expand(b, -1, -1)], dim=1)
        special = special + self.position_embedding(self.position_ids)
        return torch.cat([special, patches], dim=1)
"""


def test_SC302_class_and_distillation_tokens_given_the_whole_patch_table_are_unsliced() -> None:
    """The class and distillation tokens (a constant 2) given the whole table of
    ``(image_size // patch_size) ** 2 + 1`` positions before the patches join them: a constant is no
    formula of the input's sizes (renamed to one symbol the table would count 2 rows too). torch:
    "size of tensor a (2) must match the size of tensor b (17)"."""
    assert _messages(SC302_SPECIAL_TOKENS, "SC302") == [
        (19, "positional table of length (image_size//patch_size)**2+1 added unsliced to a sequence of length 2"),
    ]


SC302_FRAMES = """import torch
from jaxtyping import Float
from torch import Tensor, nn


class FramePositions(nn.Module):
    def __init__(self, d_model, max_samples, hop):
        super().__init__()
        self.pos = nn.Embedding(max_samples // hop, d_model)
        self.register_buffer("ids", torch.arange(max_samples // hop))

    def forward(self, frames: Float[Tensor, "b samples//(window-overlap) d"]):
        return frames + self.pos(self.ids)
"""


def test_SC302_frames_whose_count_divides_by_a_difference_are_no_formula_of_the_table() -> None:
    """Frames annotated ``samples // (window - overlap)``: renamed to one symbol the divisor is 0, so
    ``_same_formula`` makes no claim and the whole ``max_samples // hop`` table is reported."""
    assert _messages(SC302_FRAMES, "SC302") == [
        (13, "positional table of length max_samples//hop added unsliced to a sequence of length samples//(window-overlap)"),
    ]
