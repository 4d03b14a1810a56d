"""Attention written for inputs whose rank the code never states (Hugging Face's generated
attention modules, analysed on their own): the head split of ``x.shape[:-1]``, a key / value cache
updated by a callee the engine cannot see, rotary tables and masks of unknown shape, and
``getattr(config, "head_dim", default)``.

The engine presumes the batch-first layout where the code itself says it: a split of the features
into ``(heads, head_dim)`` after the leading dims of x, then the heads moved in front of the
sequence (``transpose(1, 2)`` / ``permute(0, 2, 1, 3)``), which only makes sense for two leading
dims. Each case has its buggy twin (the finding) and its correct one (no finding); the snippets are
written from scratch in the styles of the modules they stand for.
"""

from __future__ import annotations

import re
import textwrap

from engine_snippets import findings_on_lines, standalone_shapes
from shapecheck.linter import lint_source

GENERATED = """
import torch
from torch import nn


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q, k, cos, sin, unsqueeze_dim=1):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def eager_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


class DecoderAttention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.head_dim = getattr(config, "head_dim", config.hidden_size // config.num_attention_heads)
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=False)

    def forward(self, hidden_states: torch.Tensor, position_embeddings, attention_mask: torch.Tensor | None, cache=None, **kwargs):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary(query_states, key_states, cos, sin)
        if cache is not None:
            key_states, value_states = cache.update(key_states, value_states, self.layer_idx)
        attn_output, attn_weights = eager_attention(
            self, query_states, key_states, value_states, attention_mask, scaling=self.scaling, **kwargs
        )
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output), attn_weights
"""

#: The BERT-era layout: the split target built as ``size()[:-1] + (heads, size)``, the heads
#: moved by ``permute(0, 2, 1, 3)`` in a helper method.
ENCODER = """
import math
import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)
"""


def without_cache(source: str) -> str:
    cache = "        if cache is not None:\n            key_states, value_states = cache.update(key_states, value_states, self.layer_idx)\n"
    assert cache in source
    return source.replace(cache, "")


def codes(source: str) -> list[str]:
    result = lint_source(textwrap.dedent(source), "attention.py")
    assert result.error is None
    return [d.code for d in result.diagnostics]


def assigned(source: str, function: str, name: str) -> list[str]:
    """The shapes ``name`` was given in every standalone run of ``function``."""
    return standalone_shapes(source, function, name)


def test_the_head_split_of_an_unknown_prefix_moves_the_heads_of_a_batch_first_input():
    queries = assigned(GENERATED, "DecoderAttention.forward", "query_states")
    # The first binding: (batch, heads, seq, head_dim), the heads the -1 of the split.
    assert re.fullmatch(r"\(batch\d+, config.num_attention_heads, seq\d+, config.head_dim\)", queries[0]), queries
    keys = assigned(GENERATED, "DecoderAttention.forward", "key_states")
    # Queries and keys share the batch and sequence sizes presumed for the one input they split.
    assert keys[0].split(",")[0] == queries[0].split(",")[0] and keys[0].split(",")[2] == queries[0].split(",")[2]
    # The merge back, ``reshape(*input_shape, -1)``, gets the same leading dims back (and, without
    # a cache that may have changed the keys' length, all the heads' features).
    merged = assigned(GENERATED, "DecoderAttention.forward", "attn_output")
    assert merged[-1].split(",")[:2] == [queries[0].split(",")[0], queries[0].split(",")[2]]
    merged = assigned(without_cache(GENERATED), "DecoderAttention.forward", "attn_output")
    assert merged[-1].startswith(merged_leading := queries[0].split(", ")[0] + ", " + queries[0].split(", ")[2])
    assert "config.head_dim" in merged[-1].removeprefix(merged_leading)  # heads * head_dim features


def test_the_generated_attention_is_clean_and_its_bugs_are_found():
    assert codes(GENERATED) == []
    assert codes(GENERATED.replace("self.head_dim**-0.5", "self.head_dim**-1")) == ["SC102"]
    assert codes(GENERATED.replace("key_states.transpose(2, 3)", "key_states.transpose(1, 2)")) == ["SC504"]


def test_a_cache_update_by_an_unseen_callee_keeps_the_keys_rank_and_head_dim():
    assert codes(without_cache(GENERATED).replace("key_states.transpose(2, 3)", "key_states.transpose(1, 2)")) == ["SC504"]
    # A callee that is not given the keys back under their names tells nothing about them.
    renamed = GENERATED.replace(
        "key_states, value_states = cache.update(key_states, value_states, self.layer_idx)",
        "key_states, value_states = cache.update(value_states, key_states, self.layer_idx)",
    )
    assert codes(renamed.replace("key_states.transpose(2, 3)", "key_states.transpose(1, 2)")) == []


def test_the_encoder_layout_with_permute_is_clean_and_its_bugs_are_found():
    assert codes(ENCODER) == []
    assert codes(ENCODER.replace("attention_scores / math.sqrt(self.attention_head_size)", "attention_scores / self.attention_head_size")) == ["SC102"]
    assert codes(ENCODER.replace("key_layer.transpose(-1, -2)", "key_layer.transpose(1, 2)")) == ["SC504"]


def test_getattr_reads_a_configuration_attribute_or_gives_the_default():
    source = """
    import torch
    from dataclasses import dataclass
    from torch import nn


    @dataclass
    class Config:
        hidden_size: int = 64
        num_attention_heads: int = 4


    def build(config):
        known = Config()
        head_dim = getattr(known, "head_dim", known.hidden_size // known.num_attention_heads)
        width = getattr(known, "hidden_size")
        table = torch.zeros(head_dim, width)
        seen = torch.zeros(getattr(config, "head_dim", 8), getattr(config, "max_len", None) or 16)
        return table, seen
    """
    # An object of the file without the attribute: the default; with it: the attribute.
    assert assigned(source, "build", "table") == ["(16, 64)"]
    # A configuration the engine does not see has every attribute, a size where the default is one.
    assert assigned(source, "build", "seen")[0].startswith("(config.head_dim, ")


def test_no_layout_is_presumed_where_the_code_does_not_move_heads_in_front_of_a_sequence():
    # Window attention over a (b, h, w, c) map: the permute names five axes, so nothing is presumed
    # and nothing is reported.
    source = """
    import torch
    from torch import nn


    class WindowAttention(nn.Module):
        def __init__(self, dim=64, heads=4):
            super().__init__()
            self.heads, self.head_dim = heads, dim // heads
            self.qkv = nn.Linear(dim, 3 * dim)

        def forward(self, x):
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            q = q.view(*x.shape[:-1], self.heads, self.head_dim).permute(0, 3, 1, 2, 4)
            return q
    """
    shapes = assigned(source, "WindowAttention.forward", "q")
    assert shapes and not any("batch" in shape or "seq" in shape for shape in shapes)
    assert codes(source) == []


def test_an_inlined_branch_on_a_known_size_follows_only_the_path_that_runs():
    # Deformable-attention style: points of 2 or 4 coordinates; called with 4, the 2-coordinate
    # branch (which would not broadcast) never runs. Called with 2, its twin with a wrong offset
    # width is found.
    source = """
    import torch
    from torch import nn


    class Sampler(nn.Module):
        def __init__(self, width=32, points=4):
            super().__init__()
            self.points = points
            self.offsets = nn.Linear(width, points * 2)

        def forward(self, hidden, reference):
            b, q, _ = hidden.shape
            offsets = self.offsets(hidden).view(b, q, self.points, 2)
            coordinates = reference.shape[-1]
            if coordinates == 2:
                return reference[:, :, None, :] + offsets
            return reference[:, :, None, :2] + offsets * reference[:, :, None, 2:]


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.sampler = Sampler()

        def forward(self, hidden):
            return self.sampler(hidden, torch.rand(hidden.shape[0], hidden.shape[1], COORDINATES))
    """
    assert codes(source.replace("COORDINATES", "4")) == []
    assert codes(source.replace("COORDINATES", "2")) == []
    assert codes(source.replace("COORDINATES", "2").replace("view(b, q, self.points, 2)", "view(b, q, 2, self.points)")) == ["SC405"]


def test_a_table_of_unknown_shape_keeps_the_rank_of_the_heads_it_multiplies_and_nothing_else():
    source = """
    import torch
    from torch import nn


    def combine(q: torch.Tensor, table, other):
        b, h, t, d = q.shape
        scaled = q * table
        shifted = q - table
        biased = q + other[:, None]
        return scaled, shifted, biased
    """
    assert assigned(source, "combine", "scaled") == ["(b, h, t, d)"]
    assert assigned(source, "combine", "shifted") == ["(*, b, h, t, d)"]
    assert assigned(source, "combine", "biased") == ["(*, b, h, t, d)"]


def test_a_norm_of_the_split_heads_keeps_their_leading_dims():
    # Qwen3-style: the per-head RMSNorm runs between the split and the head move.
    source = GENERATED.replace(
        "class DecoderAttention(nn.Module):",
        '''class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class DecoderAttention(nn.Module):''',
    ).replace(
        "        self.o_proj = nn.Linear(",
        "        self.q_norm = RMSNorm(self.head_dim)\n        self.o_proj = nn.Linear(",
    ).replace(
        "query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)",
        "query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)",
    )
    assert "self.q_norm(self.q_proj" in source and "self.q_norm = RMSNorm" in source
    queries = assigned(source, "DecoderAttention.forward", "query_states")
    assert re.fullmatch(r"\(batch\d+, config.num_attention_heads, seq\d+, config.head_dim\)", queries[0]), queries
    assert codes(source) == []
    assert codes(source.replace("key_states.transpose(2, 3)", "key_states.transpose(1, 2)")) == ["SC504"]


def located(source: str) -> list[tuple[str, str]]:
    """The findings as (code, the text of the line they are on)."""
    return findings_on_lines(source)


def test_keys_left_untransposed_are_reported_at_the_product_whatever_the_cache_gave_back():
    # The head move made the keys (b, h, s, d) like the queries, so ``query @ key`` contracts the
    # head dim with the key length: a presumed sequence length, and after a cache's update another
    # one. The product is where the transpose is missing (SC505); the head move is right, and
    # SC504's fix of it would break the split.
    for source in (GENERATED, without_cache(GENERATED)):
        bug = source.replace("key_states.transpose(2, 3)", "key_states")
        assert located(bug) == [("SC505", "attn_weights = torch.matmul(query, key_states) * scaling")]
    bug = ENCODER.replace("key_layer.transpose(-1, -2)", "key_layer")
    assert located(bug) == [("SC505", "attention_scores = torch.matmul(query_layer, key_layer)")]
    # Keys moved over the wrong axes at the product are still SC504 (a transpose to fix there).
    assert located(ENCODER.replace("key_layer.transpose(-1, -2)", "key_layer.transpose(1, 2)")) == [
        ("SC504", "attention_scores = torch.matmul(query_layer, key_layer.transpose(1, 2))")
    ]


def test_a_product_over_the_wrong_axes_gives_nothing_to_judge_the_next_one_by():
    # ``q @ k.transpose(1, 2)`` with keys whose head dim the engine cannot prove to be the query's:
    # the product is not judged, and neither is the probabilities-times-values product after it,
    # whose left operand would otherwise end in the head dim like the values.
    bug = GENERATED.replace("key_states.transpose(2, 3)", "key_states.transpose(1, 2)")
    bug = bug.replace("batch, num_key_value_heads, slen, head_dim = hidden_states.shape", "batch, num_key_value_heads, slen, head_dim = hidden_states.size()")
    bug = bug.replace("key_states, value_states = cache.update(key_states, value_states, self.layer_idx)", "key_states, value_states = cache.update(value_states, key_states, self.layer_idx)")
    assert [code for code, _ in located(bug)] == []
    # The same keys transposed right: clean.
    assert located(bug.replace("key_states.transpose(1, 2)", "key_states.transpose(2, 3)")) == []
