"""Untransposed and mis-transposed keys in published attention code (issue 8 / 10, helper rc505):
what the engine lost between the projections and ``q @ k``.

- ``x.new_empty(*x.shape[:-1], d)`` / ``torch.zeros(*x.shape[:-1], d)``: a torch.Size of known
  rank unpacked into a call gives one size per argument (DeepSeek / Kimi MLA keys).
- ``self.qk_nope_head_dim + self.v_head_dim`` in ``forward``: configuration fields kept by the
  constructor, added, are a size, as they are in ``__init__``.
- ``q, k, v = qkv.chunk(3, dim=3)`` of a conv's output of unseen spatial size: the query and the
  key share the very same (made-up) token axis, so the key's rows are tokens.
- ``torch.cat([past_key_value[0], key_layer], dim=2)``: keys joined along their sequence axis have
  a sequence axis (and a key whose batch differs between paths is still laid out as the query).
- An inlined callee runs under its caller's path facts (``if seqlen % block != 0: raise``).

Each idiom has a buggy snippet and its corrected twin, which stays clean.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine import analyze
from shapecheck.engine.domain.values import IntValue, TensorValue
from shapecheck.linter import lint_source


def facts_of(source: str):
    source = textwrap.dedent(source)
    return analyze(cst.parse_module(source), source, "idiom.py")


def values(source: str, function: str, inlined: bool = False) -> dict:
    """name -> value in the first (standalone or inlined) run of ``function`` (the last assignment wins)."""
    runs = [run for run in facts_of(source).runs if run.qualname == function and run.inlined == inlined]
    assert runs, f"no run of {function}"
    return {a.name: a.value for a in runs[0].assignments}


def shape_text(value) -> str:
    assert isinstance(value, TensorValue) and value.shape is not None, value
    return str(value.shape)


def findings(source: str, select: str | None = None) -> list[tuple[str, int]]:
    result = lint_source(textwrap.dedent(source), "idiom.py")
    assert result.error is None
    return [(d.code, d.span.line) for d in result.diagnostics if select is None or d.code == select]


def twin(source: str, old: str, new: str) -> str:
    assert old in source
    return source.replace(old, new)


# --- a torch.Size unpacked into a call -------------------------------------------------------------

STARRED = """
import torch
from torch import nn

class Mixer(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, _ = x.shape
        y = self.proj(x)
        heads = y.view(*y.shape[:-1], self.heads, -1)
        filled = y.new_empty(*y.shape[:-1], 24)
        zeros = torch.zeros(*y.shape[:-1], 3)
        ones = y.new_ones(*y.shape[:2], 1, 1)
        return heads, filled, zeros, ones
"""


def test_a_torch_size_unpacked_into_a_call_gives_one_size_per_argument():
    found = values(STARRED, "Mixer.forward")
    assert shape_text(found["heads"]) == "(b, t, 4, 16)"
    assert shape_text(found["filled"]) == "(b, t, 24)"
    assert shape_text(found["zeros"]) == "(b, t, 3)"
    assert shape_text(found["ones"]) == "(b, t, 1, 1)"


def test_a_torch_size_of_unknown_rank_unpacked_after_other_sizes_stays_unknown():
    source = """
    import torch

    def pad(x):
        padded = torch.zeros(3, *x.shape[:-1])
        return padded
    """
    assert values(source, "pad")["padded"].shape is None


# --- sizes read off a tensor of known shape ----------------------------------------------------

CACHED_LATENTS = """
import torch
from torch import nn
from somewhere import Cache

class Latents(nn.Module):
    def __init__(self, dim=64, rank=32):
        super().__init__()
        self.down = nn.Linear(dim, rank)

    def forward(self, x, cache: Cache | None = None):
        b, t, _ = x.shape
        kv = self.down(x).view(b, 1, t, 32)
        if cache is not None:
            kv, x = cache.update(kv, x)
        batch_size, _, seq_length, _ = kv.shape
        return kv
"""


def test_sizes_read_off_known_dims_keep_them():
    source = twin(CACHED_LATENTS, "        if cache is not None:\n            kv, x = cache.update(kv, x)\n", "")
    source = twin(source, "        return kv\n", "        kv2 = kv\n        return kv2\n")
    found = values(source, "Latents.forward")
    assert shape_text(found["kv2"]) == "(b, 1, t, 32)"
    assert str(found["seq_length"].dim) == "t"


# --- configuration fields kept by the constructor, added in forward ------------------------------

CONFIG_SUM = """
import torch
from torch import nn

class Heads(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.nope = config.qk_nope_head_dim
        self.v_dim = config.v_head_dim

    def forward(self, x, outputs):
        total = self.nope + self.v_dim
        table = torch.zeros(total, 2)
        mixed = outputs.hidden + outputs.residual
        return table, mixed
"""


def test_configuration_fields_kept_by_the_constructor_add_up_to_a_size_in_forward():
    found = values(CONFIG_SUM, "Heads.forward")
    assert str(found["total"].dim) == "config.qk_nope_head_dim+config.v_head_dim"
    assert shape_text(found["table"]) == "(config.qk_nope_head_dim+config.v_head_dim, 2)"
    # Fields of an object this function holds (a model output) may be tensors: not a size.
    assert not isinstance(found["mixed"], IntValue)


# --- DeepSeek / Kimi multi-head latent attention: all three idioms together ------------------

MLA = """
import torch
from torch import nn
from somewhere import Cache


def eager_attention_forward(module, query, key, value, scaling):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(attn_weights, value).transpose(1, 2).contiguous()


class LatentAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.qk_nope_head_dim = config.qk_nope_head_dim
        self.qk_rope_head_dim = config.qk_rope_head_dim
        self.v_head_dim = config.v_head_dim
        self.kv_lora_rank = config.kv_lora_rank
        self.qk_head_dim = config.qk_nope_head_dim + config.qk_rope_head_dim
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.qk_head_dim, bias=False)
        self.kv_a_proj = nn.Linear(config.hidden_size, config.kv_lora_rank + config.qk_rope_head_dim)
        self.kv_b_proj = nn.Linear(config.kv_lora_rank, self.num_heads * (self.qk_nope_head_dim + self.v_head_dim))
        self.o_proj = nn.Linear(self.num_heads * self.v_head_dim, config.hidden_size)
        self.scaling = self.qk_head_dim ** -0.5

    def expand_kv(self, kv_nope, k_rot):
        batch_size, _, seq_length, _ = kv_nope.shape
        key_shape = (batch_size, seq_length, -1, self.qk_nope_head_dim + self.v_head_dim)
        kv_nope = self.kv_b_proj(kv_nope).view(key_shape).transpose(1, 2)
        k_nope, value_states = torch.split(kv_nope, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        k_rot = k_rot.expand(-1, k_nope.shape[1], -1, -1)
        key_states = kv_nope.new_empty(*kv_nope.shape[:-1], self.qk_nope_head_dim + self.qk_rope_head_dim)
        key_states[..., : self.qk_nope_head_dim].copy_(k_nope)
        key_states[..., self.qk_nope_head_dim :].copy_(k_rot)
        return key_states, value_states

    def forward(self, hidden_states, cache: Cache | None = None):
        batch_size, seq_length = hidden_states.shape[:-1]
        query_states = self.q_proj(hidden_states).view(batch_size, seq_length, -1, self.qk_head_dim).transpose(1, 2)
        kv_nope, k_rot = torch.split(self.kv_a_proj(hidden_states), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        kv_nope = kv_nope.view(batch_size, 1, seq_length, self.kv_lora_rank)
        k_rot = k_rot.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
        if cache is not None:
            kv_nope, k_rot = cache.update(kv_nope, k_rot)
        key_states, value_states = self.expand_kv(kv_nope, k_rot)
        out = eager_attention_forward(self, query_states, key_states, value_states, self.scaling)
        return self.o_proj(out.reshape(batch_size, seq_length, -1))
"""


def test_latent_attention_keys_are_seen_through_the_cache_and_new_empty():
    assert findings(MLA) == []
    # Not found: on the cache's path the key's sizes are made up (``(_, _, _, r)``), and sizes
    # unpacked from made-up dims stay made up (tests/test_mutation_kills_ops_mut25.py), so the
    # key's rows are not known to be tokens.
    untransposed = twin(MLA, "torch.matmul(query, key.transpose(2, 3))", "torch.matmul(query, key)")
    assert findings(untransposed) == []
    over_heads = twin(MLA, "torch.matmul(query, key.transpose(2, 3))", "torch.matmul(query, key.transpose(1, 2))")
    assert findings(over_heads) == [("SC504", 8)]


# --- a conv attention whose q, k, v are chunks of one tensor of unseen spatial size ---------------

CONV_ATTENTION = """
import torch
from torch import nn
import torch.nn.functional as F


class ConvAttention(nn.Module):
    def __init__(self, dim=64, num_heads=4):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Conv2d(dim, 3 * dim, 3, padding=1)
        self.proj = nn.Conv2d(dim, dim, 1)

    def forward(self, x):
        x = F.interpolate(x, scale_factor=0.5)
        feats = self.qkv(x)
        N, _, h, w = feats.size()
        qkv = feats.reshape(N, self.num_heads, 3 * self.head_dim, h * w).permute(0, 1, 3, 2)
        q, k, v = qkv.chunk(3, dim=3)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        out = attn.softmax(dim=-1) @ v
        return self.proj(out.permute(0, 1, 3, 2).reshape(N, -1, h, w))
"""


def test_chunks_of_one_tensor_share_their_token_axis_even_of_unseen_size():
    assert findings(CONV_ATTENTION) == []
    buggy = twin(CONV_ATTENTION, "(q * self.scale) @ k.transpose(-2, -1)", "(q * self.scale) @ k")
    assert findings(buggy) == [("SC505", 21)]


def test_chunks_of_one_tensor_whose_rows_are_the_head_dim_are_square():
    """Chunks of ``(N, h, d, 3 * d)`` (per-head square matrices): ``a @ b`` is a product of squares."""
    source = """
    import torch
    from torch import nn

    class FastWeights(nn.Module):
        def __init__(self, dim=64, num_heads=4):
            super().__init__()
            self.num_heads, self.head_dim = num_heads, dim // num_heads
            self.to_w = nn.Linear(dim, num_heads * 3 * (dim // num_heads) ** 2)

        def forward(self, x):
            N = x.shape[0]
            w = self.to_w(x.mean(1)).reshape(N, self.num_heads, self.head_dim, 3 * self.head_dim)
            a, b, c = w.chunk(3, dim=3)
            return a @ b @ c
    """
    assert findings(source, "SC505") == []


# --- keys joined with a cache along their sequence axis ------------------------------------------

BERT_WITH_PAST = """
import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden_size=64, num_attention_heads=4):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(*new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, encoder_hidden_states=None, past_key_value=None):
        mixed_query_layer = self.query(hidden_states)
        if encoder_hidden_states is not None:
            key_layer = self.transpose_for_scores(self.key(encoder_hidden_states))
            value_layer = self.transpose_for_scores(self.value(encoder_hidden_states))
        elif past_key_value is not None:
            key_layer = self.transpose_for_scores(self.key(hidden_states))
            value_layer = self.transpose_for_scores(self.value(hidden_states))
            key_layer = torch.cat([past_key_value[0], key_layer], dim=2)
            value_layer = torch.cat([past_key_value[1], value_layer], dim=2)
        else:
            key_layer = self.transpose_for_scores(self.key(hidden_states))
            value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        if key_layer.shape[0] > query_layer.shape[0]:
            key_layer = key_layer[:query_layer.shape[0], :, :, :]
            value_layer = value_layer[:query_layer.shape[0], :, :, :]
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        return context_layer.view(context_layer.size()[:-2] + (self.num_attention_heads * self.attention_head_size,))


class Layer(nn.Module):
    def __init__(self, hidden_size=64):
        super().__init__()
        self.attention = SelfAttention(hidden_size)
        self.crossattention = SelfAttention(hidden_size)

    def forward(self, hidden_states, encoder_hidden_states=None):
        hidden_states = self.attention(hidden_states)
        return self.crossattention(hidden_states, encoder_hidden_states=encoder_hidden_states)
"""


def test_keys_joined_with_a_cache_along_the_sequence_keep_a_sequence_axis():
    assert findings(BERT_WITH_PAST) == []
    buggy = twin(BERT_WITH_PAST, "torch.matmul(query_layer, key_layer.transpose(-1, -2))", "torch.matmul(query_layer, key_layer)")
    # One finding, at the product: not also a "wrong transpose" at transpose_for_scores's permute
    # (the key's batch is the query's on one path, the encoder's on another).
    assert findings(buggy) == [("SC505", 39)]


def test_a_cache_joined_along_the_features_stays_unknown():
    source = """
    import torch

    def extend(past, k):
        b, h, t, d = k.shape
        joined = torch.cat([past, k], dim=-1)
        return joined
    """
    found = values(source, "extend")
    assert found["joined"].shape is None


# --- a callee runs under its caller's path facts -------------------------------------------------

BLOCKS = """
import torch
from torch import nn


class BlockSparse(nn.Module):
    def __init__(self, hidden=64, heads=4, block_size=8):
        super().__init__()
        self.heads, self.head_size, self.block_size = heads, hidden // heads, block_size
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)

    def forward(self, hidden_states):
        batch_size, seqlen, _ = hidden_states.size()
        from_block_size = self.block_size
        if seqlen % from_block_size != 0:
            raise ValueError("sequence length must be a multiple of the block size")
        q = self.query(hidden_states).view(batch_size, -1, self.heads, self.head_size).transpose(1, 2)
        k = self.key(hidden_states).view(batch_size, -1, self.heads, self.head_size).transpose(1, 2)
        return self.first_block(q, k, seqlen, from_block_size)

    @staticmethod
    def first_block(query_layer, key_layer, from_seq_len, from_block_size):
        bsz, n_heads, _, _ = query_layer.size()
        blocked_query_matrix = query_layer.view(bsz, n_heads, from_seq_len // from_block_size, from_block_size, -1)
        first_product = torch.matmul(blocked_query_matrix[:, :, 0], key_layer.transpose(-1, -2))
        return (first_product * key_layer.size(-1) ** -0.5).softmax(dim=-1)
"""


def test_an_inlined_callee_knows_the_divisibility_its_caller_checked():
    found = values(BLOCKS, "BlockSparse.first_block", inlined=True)
    assert shape_text(found["blocked_query_matrix"]) == "(batch_size, 4, seqlen//8, 8, 16)"


def test_a_key_transposed_over_heads_in_a_callee_under_the_callers_check_is_reported():
    assert findings(BLOCKS) == []
    buggy = twin(BLOCKS, "key_layer.transpose(-1, -2))", "key_layer.transpose(1, 2))")
    assert findings(buggy) == [("SC504", 26)]


def test_a_key_whose_batch_differs_between_paths_is_still_in_the_querys_layout():
    """``key_layer`` is the layer's own tokens on one path and an encoder's on another, its batch
    ``batch|batch_enc``; permuted into the query's layout ``(b, h, s, d)`` and not transposed, the
    product is an untransposed key (SC505), not a key transposed over the wrong axes (SC504)."""
    from shapecheck.engine.domain.joins import path_join
    from shapecheck.engine.domain.tags import Reordered
    from shapecheck.engine.domain.values import ProjectionTag
    from shapecheck.engine.facts.layouts import misplaced_key_transpose
    from shapecheck.engine.symbolic.dims import Assumptions, Dim
    from shapecheck.engine.symbolic.shapes import Shape

    b, b_enc, h, t, s, d = (Dim.sym(name) for name in ("batch", "batch_enc", "h", "t", "s", "d"))
    node = cst.Name("k")
    query = TensorValue(Shape((b, h, t, d)), "float", (ProjectionTag(object(), (), None, node),), node)

    def key(batch):
        split = TensorValue(Shape((batch, s, h, d)), "float", (), node)
        return TensorValue(Shape((batch, h, s, d)), "float", (ProjectionTag(object(), (), None, node), Reordered((0, 2, 1, 3), node, split)), node)

    assert misplaced_key_transpose(query, key(b), Assumptions()) is None
    assert misplaced_key_transpose(query, key(path_join(b, b_enc)), Assumptions()) is None
    # A batch computed from a size that differs between paths (``(n1|n2) * h``) is no single path's
    # size: read without error, and not taken for the query's.
    assert misplaced_key_transpose(query, key(path_join(Dim.sym("n1"), Dim.sym("n2")) * h), Assumptions()) is not None
    # A batch that is another size on every path: the key is not the query's layout.
    other = path_join(Dim.sym("n1"), Dim.sym("n2"))
    assert misplaced_key_transpose(query, key(other), Assumptions()) is not None


def test_a_torch_size_of_a_tensor_known_by_its_width_only_stays_unknown_when_unpacked():
    source = """
    import torch
    from torch import nn

    class Pad(nn.Module):
        def __init__(self, dim=64):
            super().__init__()
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            y = self.proj(x)
            padded = torch.zeros(3, *y.shape[:-1])
            return padded
    """
    assert values(source, "Pad.forward")["padded"].shape is None


BLOCKS_CONFIG = """
import torch
from torch import nn


class BlockSparse(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.hidden_size % config.num_attention_heads != 0:
            raise ValueError("hidden size must be a multiple of the head count")
        self.heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.block_size = config.block_size
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        batch_size, seqlen, _ = hidden_states.size()
        if seqlen % self.block_size != 0:
            raise ValueError("sequence length must be a multiple of the block size")
        q = self.query(hidden_states).view(batch_size, -1, self.heads, self.head_size).transpose(1, 2)
        k = self.key(hidden_states).view(batch_size, -1, self.heads, self.head_size).transpose(1, 2)
        return self.first_block(q, k, seqlen)

    def first_block(self, query_layer, key_layer, from_seq_len):
        bsz, n_heads, _, _ = query_layer.size()
        blocked_query_matrix = query_layer.view(bsz, n_heads, from_seq_len // self.block_size, self.block_size, -1)
        first_product = torch.matmul(blocked_query_matrix[:, :, 0], key_layer.transpose(-1, -2))
        return (first_product * key_layer.size(-1) ** -0.5).softmax(dim=-1)
"""


def test_an_inlined_method_knows_its_callers_checks_and_its_constructors():
    found = values(BLOCKS_CONFIG, "BlockSparse.first_block", inlined=True)
    assert shape_text(found["blocked_query_matrix"]) == (
        "(batch_size, config.num_attention_heads, seqlen//config.block_size, config.block_size, "
        "config.hidden_size//config.num_attention_heads)"
    )
    assert findings(BLOCKS_CONFIG) == []
    buggy = twin(BLOCKS_CONFIG, "key_layer.transpose(-1, -2))", "key_layer.transpose(1, 2))")
    assert findings(buggy) == [("SC504", 28)]


CHILD_WITH_CHECK = """
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.hidden_size % config.num_heads != 0:
            raise ValueError("hidden size must be a multiple of the head count")
        self.heads = config.num_heads
        self.width = config.hidden_size
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.width // self.heads).permute(2, 0, 3, 1, 4)
        out = (q @ k.transpose(-2, -1)).softmax(dim=-1) @ v
        merged = out.transpose(1, 2).reshape(b, t, self.heads * (self.width // self.heads))
        return merged


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = Attention(config)

    def forward(self, x):
        y = self.attn(x)
        return y
"""


def test_a_child_inlined_from_its_parent_keeps_its_constructors_checks():
    """The parent's path facts flow into the child's run, and so do the child's constructor facts
    (``hidden_size % num_heads == 0``): ``heads * (width // heads)`` is the width."""
    found = values(CHILD_WITH_CHECK, "Block.forward")
    assert shape_text(found["y"]) == "(b, t, config.hidden_size)"


def test_assumptions_include_every_fact_of_another_frame():
    from shapecheck.engine.symbolic.dims import Assumptions, Dim, Truth, divides, equal

    a, b, c, d, e, t, k = (Dim.sym(name) for name in "a b c d e t k".split())
    constructor = Assumptions()
    constructor.add_equal(a, Dim.const(3))
    constructor.add_equal(b * c, d * e)
    constructor.add_divisible(t, k)
    path = Assumptions()
    path.add_equal(e, Dim.const(2))
    path.include(constructor)
    assert equal(a, Dim.const(3), path) is Truth.TRUE
    assert equal(b * c, d * Dim.const(2), path) is Truth.TRUE
    assert divides(k, t, path) is Truth.TRUE
    assert equal(e, Dim.const(2), path) is Truth.TRUE  # its own facts stay


CACHED_DECODER = """
import torch
from torch import nn


class DecoderAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)

    def forward(self, hidden_states, past_key_value):
        q = self.q_proj(hidden_states).view(*hidden_states.shape[:-1], self.n_heads, -1).transpose(1, 2)
        k = self.k_proj(hidden_states).view(*hidden_states.shape[:-1], self.n_heads, -1).transpose(1, 2)
        v = self.v_proj(hidden_states).view(*hidden_states.shape[:-1], self.n_heads, -1).transpose(1, 2)
        k = torch.cat([past_key_value[0], k], dim=2)
        v = torch.cat([past_key_value[1], v], dim=2)
        scores = torch.matmul(q, k.transpose(-1, -2)) * q.size(-1) ** -0.5
        return torch.matmul(scores.softmax(dim=-1), v)
"""


def test_keys_always_joined_with_a_cache_have_a_sequence_axis():
    assert findings(CACHED_DECODER) == []
    buggy = twin(CACHED_DECODER, "torch.matmul(q, k.transpose(-1, -2))", "torch.matmul(q, k)")
    assert findings(buggy) == [("SC505", 20)]


SAME_NAMES = """
import torch
from torch import nn
from somewhere import helper


class Block(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.conv = nn.Conv2d(dim, 2 * dim, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        return self.conv(x.reshape(b, c, h, w))


class Model(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.proj_in = nn.Conv2d(3, dim, 1)
        self.block = Block(dim)

    def forward(self, x):
        b, c, h, w = x.shape
        y = self.proj_in(x)
        return self.block(helper(y))
"""


def test_a_callees_sizes_named_like_its_callers_are_its_own():
    """The caller's ``c`` is 3 (its input's channels, on the path's facts, which flow into the
    callee); the block's ``c``, read off a tensor the engine cannot see, is another size."""
    assert findings(SAME_NAMES) == []
    found = values(SAME_NAMES, "Block.forward", inlined=True)
    assert str(found["c"].dim) != "c"
    assert findings(twin(SAME_NAMES, "nn.Conv2d(dim, 2 * dim, 1)", "nn.Conv2d(2 * dim, 2 * dim, 1)"), "SC406") == []


def test_assumptions_tell_which_symbols_they_speak_of():
    from shapecheck.engine.symbolic.dims import Assumptions, Dim

    a, b, c, d, e, t, k = (Dim.sym(name) for name in "a b c d e t k".split())
    facts = Assumptions()
    assert not facts.mentions("a")
    facts.add_equal(a, b + Dim.const(1))
    assert facts.mentions("a") and facts.mentions("b")
    facts.add_equal(c * d, d * e + Dim.const(2))
    assert facts.mentions("e")
    facts.add_divisible(t, k)
    assert facts.mentions("k") and facts.mentions("t")
    assert not facts.mentions("z")


def test_a_product_divisible_as_written_stays_divisible_under_the_paths_facts():
    """ViTDet's ``rel_pos.reshape(1, rel_pos.shape[0], -1)`` of ``(2 * n - 1, e // h)`` under
    ``e % h == 0`` (the caller's check): the facts fold ``e // h`` into ``(2 * n * e - e) // h``,
    which must not make the -1 look like it leaves a head count over."""
    from shapecheck.engine.symbolic.dims import Assumptions, Dim, Truth, divides, leaves_a_fraction_of_the_head_count

    n, e, h = Dim.sym("n"), Dim.sym("e"), Dim.sym("h")
    facts = Assumptions()
    facts.add_divisible(e, h)
    total, known = (Dim.const(2) * n - Dim.const(1)) * (e // h), Dim.const(2) * n - Dim.const(1)
    assert divides(known, total, facts) is Truth.TRUE
    assert leaves_a_fraction_of_the_head_count(total, known, facts) is False
    # BigBird's ``view(b, -1, h, h * d)`` of ``(b, t, e)`` still leaves ``t / h``.
    t = Dim.sym("t")
    assert leaves_a_fraction_of_the_head_count(t * e, h * e, facts) is True
