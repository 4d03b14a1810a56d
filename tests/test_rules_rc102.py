"""The attention scale in real model code, continued (SC101 / SC102, branch rc102).

- **A fallback factor no caller reaches** (``if scaling is None: scaling = query.size(-1) ** -0.5``
  in transformers' ``eager_attention_forward``, every class passing ``scaling=self.scaling``): a
  plain function given a number for a parameter that defaults to ``None`` and that it fills in when
  ``None`` runs once more, inlined with the caller's tensors, with the argument left out
  (``Interpreter._run_number_fallbacks``). A wrong fallback formula is then judged where it is
  written; the callers' own contexts still decide the product (SC101).

Torch's answers for the shapes these tests rely on (checked in a scratch script):
a ``Linear(64, 64)`` of ``(2, 5, 64)`` viewed ``(2, 5, 4, 16)`` and transposed is ``(2, 4, 5, 16)``;
``(2, 4, 5, 16) @ (2, 4, 5, 16).transpose(2, 3)`` is ``(2, 4, 5, 5)``; ``einsum("bhid,bhjd->bhij")``
of the two is ``(2, 4, 5, 5)``.
"""

from __future__ import annotations

from engine_snippets import findings_on_lines, standalone_shapes

HF_FALLBACK = """
import torch
from torch import nn


def eager_attention_forward(module, query, key, value, attention_mask, scaling: float | None = None, dropout: float = 0.0, **kwargs):
    if scaling is None:
        scaling = {fallback}

    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_output = torch.matmul(attn_weights, value)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


class BartAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int):
        super().__init__()
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim**-0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, hidden_states, attention_mask=None):
        b, t, _ = hidden_states.shape
        shape = (b, t, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        out, _ = eager_attention_forward(self, q, k, v, attention_mask, scaling=self.scaling, dropout=0.0)
        return out.reshape(b, t, -1)
"""


def test_a_fallback_factor_of_d_k_in_a_helper_every_caller_gives_a_scale_is_sc102():
    found = findings_on_lines(HF_FALLBACK.format(fallback="query.size(-1) ** -1"))
    assert found == [("SC102", "scaling = query.size(-1) ** -1")]


def test_a_fallback_multiplying_by_sqrt_d_k_is_sc102():
    found = findings_on_lines(HF_FALLBACK.format(fallback="query.shape[-1] ** 0.5"))
    assert found == [("SC102", "scaling = query.shape[-1] ** 0.5")]


def test_a_right_fallback_stays_clean():
    assert findings_on_lines(HF_FALLBACK.format(fallback="query.size(-1) ** -0.5")) == []


def test_a_fallback_of_one_is_not_sc101_when_every_caller_gives_the_scale():
    # The product is judged by the callers' contexts too: they scale it.
    assert findings_on_lines(HF_FALLBACK.format(fallback="1.0")) == []


FUNCTIONAL = """
import math
import torch
import torch.nn.functional as F
from torch import nn


def attend(q, k, v, softmax_scale=None):
    if softmax_scale is None:
        softmax_scale = {fallback}
    scores = {product} * softmax_scale
    return torch.einsum("bhij,bhjd->bhid", F.softmax(scores, dim=-1), v)


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.dim_head = dim // heads
        self.to_qkv = nn.Linear(dim, dim * 3)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.heads, self.dim_head).transpose(1, 2) for t in (q, k, v))
        out = attend(q, k, v, {given})
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


model = Attention()
y = model(torch.randn(2, 5, 64))
"""

EINSUM = 'torch.einsum("bhid,bhjd->bhij", q, k)'
MATMUL = "q @ k.transpose(-2, -1)"


def test_a_functional_helper_given_the_scale_by_position_judges_its_fallback():
    source = FUNCTIONAL.format(fallback="1 / q.shape[-1]", product=EINSUM, given="self.dim_head ** -0.5")
    assert findings_on_lines(source) == [("SC102", "softmax_scale = 1 / q.shape[-1]")]


def test_a_functional_helper_with_matmul_and_a_keyword_scale_judges_its_fallback():
    source = FUNCTIONAL.format(
        fallback="1.0 / q.size(-1)", product=MATMUL, given="softmax_scale=1 / math.sqrt(self.dim_head)"
    )
    assert findings_on_lines(source) == [("SC102", "softmax_scale = 1.0 / q.size(-1)")]


def test_a_functional_helper_with_a_right_fallback_stays_clean():
    source = FUNCTIONAL.format(fallback="1 / math.sqrt(q.shape[-1])", product=EINSUM, given="self.dim_head ** -0.5")
    assert findings_on_lines(source) == []


def test_a_caller_giving_a_wrong_scale_is_still_reported_once():
    source = FUNCTIONAL.format(fallback="1 / math.sqrt(q.shape[-1])", product=EINSUM, given="self.dim_head ** -1")
    assert findings_on_lines(source) == [("SC102", "out = attend(q, k, v, self.dim_head ** -1)")]


# ---------------------------------------------------------------------------------------- timm's rotary helpers
#
# ``apply_rot_embed_cat(x, emb)`` / ``apply_rot_embed(x, sin, cos)`` (timm.layers) rotate q and k:
# x's shape, times position tables, never a scale. Before, they were unknown calls whose result was
# "maybe scaled", which hid a missing scale (EVA).

EVA_ROPE = """
import torch
import torch.nn as nn
from timm.layers import apply_rot_embed, apply_rot_embed_cat, maybe_add_mask


class EvaAttention(nn.Module):
    def __init__(self, dim=64, num_heads=4, num_prefix_tokens=1):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.num_prefix_tokens = num_prefix_tokens
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, rope=None, attn_mask=None):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if rope is not None:
            npt = self.num_prefix_tokens
            q = torch.cat([q[:, :, :npt, :], {rotate_q}], dim=2).type_as(v)
            k = torch.cat([k[:, :, :npt, :], {rotate_k}], dim=2).type_as(v)
        {scaling}
        attn = q @ k.transpose(-2, -1)
        attn = maybe_add_mask(attn, attn_mask)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)
"""

CAT_Q = "apply_rot_embed_cat(q[:, :, npt:, :], rope)"
CAT_K = "apply_rot_embed_cat(k[:, :, npt:, :], rope)"
SIN_COS_Q = "apply_rot_embed(q[:, :, npt:, :], rope[0], rope[1], half=True)"
SIN_COS_K = "apply_rot_embed(k[:, :, npt:, :], rope[0], rope[1], half=True)"


def test_q_rotated_by_timm_apply_rot_embed_cat_and_left_unscaled_is_sc101():
    found = findings_on_lines(EVA_ROPE.format(rotate_q=CAT_Q, rotate_k=CAT_K, scaling="pass"))
    assert found == [("SC101", "attn = q @ k.transpose(-2, -1)")]


def test_q_rotated_by_timm_apply_rot_embed_with_sin_and_cos_and_left_unscaled_is_sc101():
    found = findings_on_lines(EVA_ROPE.format(rotate_q=SIN_COS_Q, rotate_k=SIN_COS_K, scaling="pass"))
    assert found == [("SC101", "attn = q @ k.transpose(-2, -1)")]


def test_q_rotated_by_timm_then_scaled_stays_clean():
    assert findings_on_lines(EVA_ROPE.format(rotate_q=CAT_Q, rotate_k=CAT_K, scaling="q = q * self.scale")) == []
    assert findings_on_lines(EVA_ROPE.format(rotate_q=SIN_COS_Q, rotate_k=SIN_COS_K, scaling="q = q * self.scale")) == []


# ---------------------------------------------------------------------------------------- query pooling
#
# Hiera / SAM2's ``MultiScaleAttention`` pools q with a ``deepcopy`` of the block's ``nn.MaxPool2d``:
# ``copy.deepcopy(layer)`` is that layer (with weights of its own) and a pooling layer computes its
# spatial sizes and scales nothing. Before, both were unknown, and q "maybe scaled".

HIERA = """
from copy import deepcopy
import torch
import torch.nn as nn


class MultiScaleAttention(nn.Module):
    def __init__(self, dim, dim_out, num_heads, q_pool: nn.Module = None):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim_out // num_heads
        self.scale = head_dim ** -0.5
        self.q_pool = q_pool
        self.qkv = nn.Linear(dim, dim_out * 3)
        self.proj = nn.Linear(dim_out, dim_out)

    def forward(self, x):
        B, H, W, _ = x.shape
        qkv = self.qkv(x).reshape(B, H * W, 3, self.num_heads, -1)
        q, k, v = torch.unbind(qkv, 2)
        if self.q_pool is not None:
            q = q.reshape(B, H, W, -1).permute(0, 3, 1, 2)
            q = self.q_pool(q).permute(0, 2, 3, 1)
            H, W = q.shape[1:3]
            q = q.reshape(B, H * W, self.num_heads, -1)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        {scaling}
        attn = q @ k.transpose(-1, -2)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, H, W, -1)
        return self.proj(x)


class MultiScaleBlock(nn.Module):
    def __init__(self, dim, dim_out, num_heads, q_stride=None):
        super().__init__()
        self.pool = None
        if q_stride:
            self.pool = nn.{pool}(kernel_size=q_stride, stride=q_stride, ceil_mode=False)
        self.attn = MultiScaleAttention(dim, dim_out, num_heads=num_heads, q_pool=deepcopy(self.pool))

    def forward(self, x):
        return self.attn(x)


block = MultiScaleBlock(64, 64, 4, q_stride=(2, 2))
y = block(torch.randn(2, 8, 8, 64))
"""


def test_a_pooled_query_left_unscaled_is_sc101():
    for pool in ("MaxPool2d", "AvgPool2d"):
        found = findings_on_lines(HIERA.format(pool=pool, scaling="pass"))
        assert found == [("SC101", "attn = q @ k.transpose(-1, -2)")], pool


def test_a_pooled_query_scaled_stays_clean():
    assert findings_on_lines(HIERA.format(pool="MaxPool2d", scaling="q = q * self.scale")) == []


POOLS = """
import torch
import torch.nn as nn


def pools():
    pool = nn.MaxPool2d(3, stride=2, padding=1)
    y = pool(torch.randn(2, 16, 9, 9))
    avg = nn.AvgPool1d(4)
    z = avg(torch.randn(2, 16, 10))
    rounded = nn.MaxPool2d(2, ceil_mode=True)
    r = rounded(torch.randn(2, 16, 9, 9))
"""


def test_pooling_sizes_follow_torch():
    # torch: MaxPool2d(3, 2, 1) of (2, 16, 9, 9) is (2, 16, 5, 5); AvgPool1d(4) of (2, 16, 10) is
    # (2, 16, 2); MaxPool2d(2, ceil_mode=True) of 9 x 9 is 5 x 5 (not read: unnamed sizes).
    assert standalone_shapes(POOLS, "pools", "y") == ["(2, 16, 5, 5)"]
    assert standalone_shapes(POOLS, "pools", "z") == ["(2, 16, 2)"]
    assert standalone_shapes(POOLS, "pools", "r")[0].startswith("(2, 16, _")


def test_deepcopy_of_a_layer_is_not_the_same_weights():
    # ``self.k = deepcopy(self.q)``: two Linears with weights of their own, not a shared projection.
    source = """
    from copy import deepcopy
    import torch.nn as nn


    class Attention(nn.Module):
        def __init__(self, dim=64, heads=4):
            super().__init__()
            self.heads = heads
            self.q = nn.Linear(dim, dim)
            self.k = deepcopy(self.q)
            self.v = nn.Linear(dim, dim)

        def forward(self, x):
            b, n, d = x.shape
            q = self.q(x).view(b, n, self.heads, -1).transpose(1, 2)
            k = self.k(x).view(b, n, self.heads, -1).transpose(1, 2)
            v = self.v(x).view(b, n, self.heads, -1).transpose(1, 2)
            attn = (q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5).softmax(dim=-1)
            return (attn @ v).transpose(1, 2).reshape(b, n, d)
    """
    assert findings_on_lines(source) == []


# ---------------------------------------------------------------------------------------- a permuted fused qkv
#
# cpubone: a channels-first fused projection ``(N, heads, 3 * d, h * w)`` moved tokens-first by
# ``permute(0, 1, 3, 2)``, then chunked into q, k, v along the features. The pieces are tensors of
# their own layout; ``k.transpose(-2, -1)`` of one is the key transposed for the scores, not the
# permute undone (before, the scores were not recognised at all).

CPUBONE = """
import torch
import torch.nn as nn


class ConvAttention(nn.Module):
    def __init__(self, dim=64, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** {exponent}
        self.qkv = nn.Conv2d(dim, dim * 3, kernel_size=1)
        self.proj = nn.Conv2d(dim, dim, kernel_size=1)

    def forward(self, x):
        N, C, h, w = x.shape
        qkv = self.qkv(x).reshape(N, self.num_heads, 3 * self.head_dim, h * w)
        qkv = qkv.permute(0, 1, 3, 2)
        q, k, v = qkv.{cut}
        {scaling}
        attn = q @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        out = (attn @ v).permute(0, 1, 3, 2).reshape(N, C, h, w)
        return self.proj(out)
"""


def test_a_query_cut_from_a_permuted_fused_projection_left_unscaled_is_sc101():
    for cut in ("chunk(3, dim=3)", "split(self.head_dim, dim=-1)"):
        found = findings_on_lines(CPUBONE.format(exponent="-0.5", cut=cut, scaling="pass"))
        assert found == [("SC101", "attn = q @ k.transpose(-2, -1)")], cut


def test_a_query_cut_from_a_permuted_fused_projection_scaled_by_d_k_is_sc102():
    found = findings_on_lines(CPUBONE.format(exponent="-1", cut="chunk(3, dim=3)", scaling="q = q * self.scale"))
    assert found == [("SC102", "self.scale = self.head_dim ** -1")]


def test_a_query_cut_from_a_permuted_fused_projection_scaled_stays_clean():
    assert findings_on_lines(CPUBONE.format(exponent="-0.5", cut="chunk(3, dim=3)", scaling="q = q * self.scale")) == []


# ---------------------------------------------------------------------------------------- a constant times a wrong power
#
# Zamba2 writes ``self.scaling = (self.head_dim / 2) ** -0.5``: a constant times d_k ** -0.5, right.
# ``(self.head_dim / 2) ** -1`` is 2 / d_k: the power of d_k is wrong whatever the constant, as
# ``d_k ** -1`` alone already was (SC102).

ZAMBA = """
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.attention_head_dim
        self.scaling = {scaling}
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim)
        self.k_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim)
        self.v_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim)

    def forward(self, hidden_states):
        b, t, _ = hidden_states.shape
        shape = (b, t, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        attn = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        attn = attn.softmax(dim=-1)
        return torch.matmul(attn, v).transpose(1, 2).reshape(b, t, -1)
"""


def test_a_constant_times_d_k_to_the_minus_one_is_sc102():
    found = findings_on_lines(ZAMBA.format(scaling="(self.head_dim / 2) ** -1"))
    assert found == [("SC102", "self.scaling = (self.head_dim / 2) ** -1")]
    found = findings_on_lines(ZAMBA.format(scaling="2.0 / self.head_dim"))
    assert found == [("SC102", "self.scaling = 2.0 / self.head_dim")]


def test_a_constant_times_d_k_to_the_minus_half_stays_clean():
    assert findings_on_lines(ZAMBA.format(scaling="(self.head_dim / 2) ** -0.5")) == []
    assert findings_on_lines(ZAMBA.format(scaling="0.5 * self.head_dim ** -0.5")) == []


# ---------------------------------------------------------------------------------------- configuration sums
#
# Kimi / DeepSeek MLA: ``self.qk_head_dim = config.qk_nope_head_dim + config.qk_rope_head_dim`` in a
# constructor is a size (as ``config.a // config.b`` already was), so ``self.qk_head_dim ** -1`` is a
# factor the rule reads. Before, the sum was unknown and so was the factor.

MLA = """
import torch
from torch import nn


class MLAAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.qk_nope_head_dim = config.qk_nope_head_dim
        self.qk_head_dim = config.qk_nope_head_dim + config.qk_rope_head_dim
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.qk_head_dim)
        self.k_proj = nn.Linear(config.hidden_size, self.num_heads * self.qk_head_dim)
        self.v_proj = nn.Linear(config.hidden_size, self.num_heads * self.qk_head_dim)
        self.scaling = self.qk_head_dim ** {exponent}

    def forward(self, hidden_states):
        b, t, _ = hidden_states.shape
        shape = (b, t, -1, self.qk_head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        attn = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        attn = attn.softmax(dim=-1)
        return torch.matmul(attn, v).transpose(1, 2).reshape(b, t, -1)
"""


def test_a_head_dim_summed_from_configuration_fields_judges_its_scale():
    assert findings_on_lines(MLA.format(exponent="-1")) == [("SC102", "self.scaling = self.qk_head_dim ** -1")]


def test_a_head_dim_summed_from_configuration_fields_scaled_right_stays_clean():
    assert findings_on_lines(MLA.format(exponent="-0.5")) == []


# ---------------------------------------------------------------------------------------- rotary tables' own factor
#
# Hugging Face's rotary classes return ``cos = emb.cos() * self.attention_scaling`` (YaRN's mscale,
# 1.0 by default): a table built from positions with a factor the engine cannot read. Applied to q
# and k (``q * cos + rotate_half(q) * sin``), that factor is the table's, not the query's 1/sqrt(d_k):
# a missing scale of the scores is still seen (Cohere2-MoE, pocket-tts). A scale written on the
# query itself still survives the table (tests/test_engine_scale_explicit.py).

HF_ROPE = """
import torch
from torch import nn
from transformers.modeling_rope_utils import rope_attention_factor


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, config):
        super().__init__()
        self.inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.attention_scaling = rope_attention_factor(config)

    def forward(self, x, position_ids):
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos() * self.attention_scaling, emb.sin() * self.attention_scaling


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.head_dim = dim // heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)

    def forward(self, hidden_states, position_embeddings):
        b, t, _ = hidden_states.shape
        shape = (b, t, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        attn = torch.matmul(q, k.transpose(2, 3)){scaling}
        attn = attn.softmax(dim=-1)
        return torch.matmul(attn, v).transpose(1, 2).reshape(b, t, -1)


class Model(nn.Module):
    def __init__(self, config, dim=64, heads=4):
        super().__init__()
        self.rotary_emb = RotaryEmbedding(dim // heads, config)
        self.attn = Attention(dim, heads)

    def forward(self, hidden_states):
        position_ids = torch.arange(hidden_states.shape[1])[None]
        return self.attn(hidden_states, self.rotary_emb(hidden_states, position_ids))
"""


def test_scores_of_q_and_k_rotated_by_a_scaled_table_and_left_unscaled_are_sc101():
    found = findings_on_lines(HF_ROPE.format(scaling=""))
    assert found == [("SC101", "attn = torch.matmul(q, k.transpose(2, 3))")]


def test_scores_of_q_and_k_rotated_by_a_scaled_table_and_scaled_stay_clean():
    assert findings_on_lines(HF_ROPE.format(scaling=" * self.scaling")) == []


# ---------------------------------------------------------------------------------------- softcapping
#
# Gemma 2 / VideoPrism cap the scores: ``cap * tanh(scores * scaling / cap)``. tanh keeps small
# scores as they are, so the scale they carry is still theirs, and ``/ cap`` then ``* cap`` cancel:
# a wrong ``self.scaling`` is judged where it was written (before, the factor read was the cap).

SOFTCAP = """
import torch
from torch import nn


def eager_attention_forward(module, query, key, value, attention_mask, scaling=None, softcap=None, **kwargs):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if softcap is not None:
        attn_weights = attn_weights / softcap
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * softcap
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    return torch.matmul(attn_weights, value).transpose(1, 2).contiguous(), attn_weights


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.head_dim = config.head_dim
        self.scaling = {scaling}
        self.softcap = config.attn_logit_softcapping
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim)
        self.k_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim)
        self.v_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim)

    def forward(self, hidden_states, attention_mask=None):
        b, t, _ = hidden_states.shape
        shape = (b, t, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        out, _ = eager_attention_forward(self, q, k, v, attention_mask, scaling=self.scaling, softcap=self.softcap)
        return out.reshape(b, t, -1)
"""


def test_a_wrong_scale_before_softcapping_is_sc102_where_it_was_written():
    found = findings_on_lines(SOFTCAP.format(scaling="self.head_dim**-1"))
    assert found == [("SC102", "self.scaling = self.head_dim**-1")]


def test_a_right_scale_before_softcapping_stays_clean():
    assert findings_on_lines(SOFTCAP.format(scaling="self.head_dim**-0.5")) == []
