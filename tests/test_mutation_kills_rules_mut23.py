"""Rule decisions that mutation testing found unpinned, branch ``mut23`` (benchmarks/mutation_testing.py):
SC302's last survivors and rule survivors earlier sessions left "not killed".

Each test names its rule code, so ``-k SCnnn`` selects it with the rule's other tests. The shapes and
errors quoted in the docstrings were checked under torch 2.13 first.
"""

from __future__ import annotations

from pathlib import Path

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
    size of tensor b (64)"). Until 2 Dec 2026 any operand with positional information silenced the
    rule; only a second whole table does now."""
    assert _messages(SC302_TOKENS_WITH_POSITIONS, "SC302") == [
        (26, "positional table of length 64 added unsliced to a sequence of length t"),
        (26, "positional table of length 64 added unsliced to a sequence of length t"),
    ]
    assert _found(SC302_TOKENS_WITH_POSITIONS, "SC302") == [(26, 26), (26, 46)]


SC302_TWO_TABLES = """import math

import torch
from jaxtyping import Int
from torch import Tensor, nn


class MixedPositions(nn.Module):
    def __init__(self, vocab_size, d_model, max_len, max_position_embeddings):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(max_position_embeddings, d_model)
        self.register_buffer("position_ids", torch.arange(max_position_embeddings))
        position = torch.arange(max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, ids: Int[Tensor, "b t"]):
        t = ids.size(1)
        table = self.wpe(self.position_ids) + self.pe
        x = self.tok(ids) + table[:t]
        unsliced = self.wpe(self.position_ids) + self.pe[:t]
        return x, unsliced
"""


def test_SC302_two_whole_tables_are_a_sum_of_maxima_but_a_cut_one_is_a_sequence() -> None:
    """A learned table looked up with the whole ``position_ids`` buffer plus the whole sinusoidal
    buffer: two tables at their configured maxima (equal at run time when the configuration agrees),
    summed and then sliced: nothing to report. The lookup plus the buffer already cut to ``t`` rows is
    a whole table against a sequence (torch: "size of tensor a (64) must match the size of tensor b
    (16)"); until 2 Dec 2026 any positional operand made the sum silent."""
    assert _messages(SC302_TWO_TABLES, "SC302") == [
        (25, "positional table of length max_position_embeddings added unsliced to a sequence of length t"),
    ]


SC302_SOFT_PROMPT = """import torch
from torch import nn


class PromptTuning(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, n_prompt=8, max_len=64):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, d_model)
        init_ids = torch.randint(vocab_size, (n_prompt,))
        self.prompt = nn.Parameter(self.wte(init_ids).detach().clone())
        self.pos = nn.Parameter(torch.zeros(max_len, d_model))

    def forward(self):
        return self.prompt + self.pos
"""


def test_SC302_a_soft_prompt_initialised_from_the_vocabulary_given_the_whole_table() -> None:
    """Prompt tuning: 8 prompt vectors initialised from token embeddings (a per-position parameter
    holding tokens) plus the whole 64-row table (torch: "size of tensor a (8) must match the size of
    tensor b (64)"): reported at the table, with the fix that slices it to the prompt's length."""
    from shapecheck.fixes import fix_module

    result = lint_source(SC302_SOFT_PROMPT, "snippet.py", {"SC302"})
    assert result.error is None, result.error
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (14, 30, "positional table of length 64 added unsliced to a sequence of length 8"),
    ]
    fixed = fix_module(result.module, SC302_SOFT_PROMPT, result.diagnostics).fixed.splitlines()
    assert fixed[13] == "        return self.prompt + self.pos[:self.prompt.size(-2)]"


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


# ------------------------------------------------------------------------------------------- SC202

SC202_FIRST_TOKEN = """import math

import torch
from jaxtyping import Float
from torch import Tensor


def first_token(q: Float[Tensor, "b h 1 64"], k: Float[Tensor, "b h 1 64"], v: Float[Tensor, "b h 1 64"]):
    causal = torch.tril(torch.ones(16, 16))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(64)
    att = att.masked_fill(causal == 0, float("-inf"))
    return torch.softmax(att, dim=-1) @ v


def chunk_with_cache(q: Float[Tensor, "b h 16 64"], k: Float[Tensor, "b h s 64"], v: Float[Tensor, "b h s 64"]):
    causal = torch.tril(torch.ones(16, 16))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(64)
    att = att.masked_fill(causal == 0, float("-inf"))
    return torch.softmax(att, dim=-1) @ v
"""


def test_SC202_a_whole_buffer_against_one_key_or_a_chunk_of_queries_over_a_cache() -> None:
    """One query and one key (the first step of generation, no cache): ``masked_fill`` broadcasts the
    scores ``(b, h, 1, 1)`` against the whole 16 x 16 buffer to ``(b, h, 16, 16)`` without a word, and
    the product with the values then raises (torch 2.13: "Expected size for first two dimensions of
    batch2 tensor to be: [8, 16] but got: [8, 1]"). Until 2 Dec 2026 a key length of 1 was exempt and
    nothing was reported, by this rule or any other. The key length is the scores' last axis: 16 new
    queries against ``s`` cached keys need a ``(16, s)`` mask (torch raises for s = 20), though the
    query axis matches the buffer."""
    result = lint_source(SC202_FIRST_TOKEN, "snippet.py", {"SC202"})
    assert result.error is None, result.error
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (11, 27, "mask built at 16 x 16 is used unsliced against scores (b, h, 1, 1); slice it to the sequence length"),
        (18, 27, "mask built at 16 x 16 is used unsliced against scores (b, h, 16, s); slice it to the sequence length"),
    ]


# ------------------------------------------------------------------------------------------- SC204

SC204_LOG_SOFTMAX_CROSS_ATTENTION = """import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model=64):
        super().__init__()
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)

    def forward(self, x, memory):
        q = self.q(x)
        k, v = self.kv(memory).chunk(2, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        weights = torch.log_softmax(scores, dim=-1)
        return weights @ v


class Captioner(nn.Module):
    def __init__(self, vocab=100, d_model=64, block=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(block, d_model)
        self.cross = CrossAttention(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, idx, image_features):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1)))
        return self.head(x + self.cross(x, image_features))

    def loss(self, idx, image_features):
        logits = self(idx, image_features)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), idx[:, 1:].reshape(-1))
"""


def test_SC204_log_softmax_weights_over_encoder_memory_are_cross_attention() -> None:
    """``_is_self_attention`` reads the scores of a ``log_softmax`` site as it does a softmax's: the
    captioner's weights (log-probabilities, contracted with the values) are over the image features,
    so cross-attention, which needs no causal mask though its output feeds a next-token loss. The
    same site over the tokens themselves is self-attention with no causal mask."""
    assert _found(SC204_LOG_SOFTMAX_CROSS_ATTENTION, "SC204") == []
    self_attention = SC204_LOG_SOFTMAX_CROSS_ATTENTION.replace("self.cross(x, image_features)", "self.cross(x, x)")
    assert _found(self_attention, "SC204") == [(18, 19)]


# ------------------------------------------------------------------------------------------- SC205

SC205_SHARED_BIAS_HELPER = """import math

import torch
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor


def add_bias(x, bias):
    return x + bias


class Block(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.fc = nn.Linear(d_model, d_model)
        self.shift = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: Float[Tensor, "b t 32"]):
        t = x.size(1)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        causal = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        scores = add_bias(q @ k.transpose(-2, -1) / math.sqrt(32), causal)
        x = x + torch.softmax(scores, dim=-1) @ v
        return add_bias(self.fc(x), self.shift)
"""


def test_SC205_a_bias_helper_shared_by_the_scores_and_a_layer_output() -> None:
    """``check``'s additive candidates: ``add_bias`` applies the (right) additive causal mask to the
    scores and, in another call, a bias to a layer's output, where its sum has no mask of its own.
    Nothing to report, and no crash on the sum that is no mask application."""
    assert _found(SC205_SHARED_BIAS_HELPER, "SC205") == []


SC205_TRIU_OUT = """import math

import torch
from jaxtyping import Float
from torch import Tensor


def attend(q: Float[Tensor, "b t 64"], k: Float[Tensor, "b t 64"], v: Float[Tensor, "b t 64"]):
    t = q.size(1)
    blocked = torch.empty(t, t, dtype=torch.bool)
    causal = torch.triu(torch.ones(t, t, dtype=torch.bool), out=blocked)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(64)
    scores = scores.masked_fill(causal, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
"""


def test_SC205_the_fix_of_a_triu_written_into_a_buffer_adds_the_diagonal_keyword() -> None:
    """``_fix``: ``torch.triu(ones, out=blocked)`` (the blocked set written into a preallocated buffer)
    has one positional argument; ``out=`` is a keyword and stays, ``diagonal=1`` is added."""
    from shapecheck.fixes import fix_module

    result = lint_source(SC205_TRIU_OUT, "snippet.py", {"SC205"})
    assert result.error is None, result.error
    assert [(d.line, d.column) for d in result.diagnostics] == [(11, 14)]
    fixed = fix_module(result.module, SC205_TRIU_OUT, result.diagnostics).fixed.splitlines()
    assert fixed[10] == "    causal = torch.triu(torch.ones(t, t, dtype=torch.bool), out=blocked, diagonal=1)"


# ------------------------------------------------------------------------------------------- SC301

SC301_TRANSFORMED_POSITIONS = """import torch
from jaxtyping import Int
from torch import Tensor, nn


class TokensAndPositions(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos_embedding = nn.Parameter(torch.zeros(1, max_len, d_model))
        self.norm = nn.LayerNorm(d_model)
        self.gate = nn.Parameter(torch.ones(1, 1, d_model))

    def forward(self, ids: Int[Tensor, "b t"]):
        b, t = ids.shape
        x = self.tok(ids)
        a = torch.cat([x, self.norm(self.pos_embedding[:, :t]).expand(b, -1, -1)], dim=-1)
        c = torch.cat([x, (self.gate * self.pos_embedding[:, :t]).expand(b, -1, -1)], dim=-1)
        d = torch.cat([x, torch.tanh(self.pos_embedding[:, :t]).expand(b, -1, -1)], dim=-1)
        return a, c, d
"""


def test_SC301_positions_normalised_gated_or_squashed_before_the_concatenation() -> None:
    """``_positional``'s ``learned`` kind: rows of the learned table passed through a LayerNorm, a
    gate tensor or ``tanh`` are no parameter any more, but still positions; concatenated to the
    tokens along the features (torch: ``(b, t, 64)``, twice the width) each is reported."""
    assert _found(SC301_TRANSFORMED_POSITIONS, "SC301") == [(17, 13), (18, 13), (19, 13)]


SC301_BATCH_OF_ONE = """import torch
from jaxtyping import Float, Int
from torch import Tensor, nn


class Conditioned(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)

    def forward(self, ids: Int[Tensor, "1 t"], style: Float[Tensor, "b t 8"]):
        t = ids.size(1)
        h = torch.cat([self.tok(ids), self.pos(torch.arange(t)).unsqueeze(0)], dim=-1)
        return torch.cat([h, style], dim=-1)
"""


def test_SC301_features_that_already_hold_tokens_and_positions_are_no_positional_table() -> None:
    """A batch of one prompt: the positions concatenated to the tokens are reported; the result, which
    holds the tokens, concatenated with a style vector is not a positional table made to broadcast
    (its batch axis of 1 comes from the prompt), so it is no second finding."""
    assert _found(SC301_BATCH_OF_ONE, "SC301") == [(14, 13)]


SC301_STEP_DECODER = """import torch
from jaxtyping import Int
from torch import Tensor, nn


class StepDecoder(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, max_len=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Parameter(torch.zeros(max_len, d_model))
        self.cell = nn.GRUCell(2 * d_model, d_model)

    def forward(self, token: Int[Tensor, ""], step: int, hidden):
        inp = torch.cat([self.embed(token), self.pos[step]])
        return self.cell(inp.unsqueeze(0), hidden)
"""


def test_SC301_a_step_decoder_concatenating_one_token_and_its_position_row_without_dim() -> None:
    """``torch.cat`` without ``dim`` joins along axis 0, which for one token's embedding ``(d,)`` and
    its position's row ``(d,)`` is the feature axis: ``(2 * d,)`` (torch 2.13), reported."""
    assert _found(SC301_STEP_DECODER, "SC301") == [(14, 15)]


SC301_KEPT_POSITIONS = """import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from .augment import mix_tokens


class MaskedPatches(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos_embed = nn.Parameter(torch.zeros(1, max_len, d_model))

    def forward(self, ids: Int[Tensor, "b t"], features: Float[Tensor, "b k 32"], keep: Tensor):
        pos = self.pos_embed[:, keep].expand(features.size(0), -1, -1)
        mixed = mix_tokens(self.tok(ids))
        return torch.cat([features, pos], dim=-1), torch.cat([mixed, pos], dim=-1)
"""


def test_SC301_kept_positions_of_unknown_shape_are_no_claim() -> None:
    """Positions indexed by an index tensor (MAE's kept patches) have a shape the engine cannot read:
    beside patch features they are no table made to broadcast, and beside tokens passed through a
    helper the engine cannot see (their width unknown too) no claim either; no crash on the unknown
    shapes."""
    assert _found(SC301_KEPT_POSITIONS, "SC301") == []


# ------------------------------------------------------------------------------------------- SC402

SC402_DEFAULTS_READ_BY_THE_LAYER = {
    "__init__.py": "",
    "configs/__init__.py": "",
    "configs/gpt.py": """from dataclasses import dataclass


@dataclass
class GPTConfig:
    vocab_size: int = 100
    n_embd: int = 768
    n_groups: int = 10
""",
    "models/__init__.py": "",
    "models/mlp.py": """import torch.nn as nn

from ..configs.gpt import GPTConfig


class GroupedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        config = GPTConfig()
        width, groups = config.n_embd, config.n_groups
        assert width % groups == 0, "the groups must split the width"
        self.fc = nn.Linear(width // groups, 4 * width // groups)
""",
}


def test_SC402_a_failed_check_on_defaults_of_another_folder_names_it_relative_to_the_default(tmp_path) -> None:
    """The divisibility loop's ``facts.elsewhere(check.node, node)``: a layer that reads the project's
    default configuration itself (no instantiation anywhere) fails its check at the default
    ``n_groups = 10`` in ``configs/``, reported there; the check's place is written relative to
    that folder (``../models/mlp.py``), not to the folder of the file analysed."""
    from shapecheck.runner import LintOptions, run

    for name, text in SC402_DEFAULTS_READ_BY_THE_LAYER.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    report = run(LintOptions(paths=[str(tmp_path)], isolated=True, cache=False)).report
    found = [(Path(d.path).relative_to(tmp_path).as_posix(), d.span.line, d.message) for d in report.diagnostics if d.code == "SC402"]
    assert found == [
        (
            "configs/gpt.py",
            8,
            "768 is not divisible by 10 (768 % 10 = 8): the heads cannot split the model width (checked in ../models/mlp.py:11)",
        )
    ]


# ------------------------------------------------------------------------------------------- SC404

SC404_QK_NORM_OVER_TIME = """import torch
import torch.nn as nn
import torch.nn.functional as F


class QKNormAttention(nn.Module):
    def __init__(self, vocab_size, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, idx):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        C = x.size(-1)
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = F.layer_norm(q.view(B, T, self.n_head, C // self.n_head), (T,))
        k = k.view(B, T, self.n_head, C // self.n_head)
        return q, k, v
"""


def test_SC404_a_qk_norm_over_the_time_axis_of_split_heads_names_the_positional_length() -> None:
    """``_sequence_length`` names axis 1 only for a 3-D input ``(b, t, d)``: for the split heads
    ``(B, T, n_head, hs)`` the normalized size ``T`` is recognised as the length of the positional
    lookup ``wpe(arange(T))`` instead (torch raises: normalized_shape [T] against [B, T, n_head, hs])."""
    result = lint_source(SC404_QK_NORM_OVER_TIME, "snippet.py", {"SC404"})
    assert result.error is None, result.error
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (
            19,
            13,
            "F.layer_norm normalized_shape (T,) is a sequence length (the size of a positional table or lookup), not "
            "the feature dim n_embd//n_head of its input (B, T, n_head, n_embd//n_head): expected F.layer_norm(n_embd//n_head)",
        )
    ]
