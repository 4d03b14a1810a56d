"""The attention scale in real model code (SC101 / SC102, branch rc101).

- **A helper shared by several callers** (transformers' ``eager_attention_forward``, given each
  class's ``self.scaling``; any ``attend(q, k, v, scale)`` helper two modules call): SC102 reports
  where the factor was written, so its contexts are judged per place the finding lands
  (``in_every_context(..., lands=...)``). One class's right factor no longer clears another
  class's wrong one; the contexts that share one written factor must still all agree.
- **An optional layer chosen by a conditional expression** (``self.q_proj = None if lora else
  nn.Linear(...)``, Kimi / DeepSeek's low-rank query): the code that calls it runs only where it is
  set, so the join of the layer and ``None`` is the layer (``joins.join_values``), as a layer set to
  ``None`` by an ``if`` statement on the other path already was. Before, the call was an unknown
  call, "maybe scaled", and the missing scale of the scores went unseen.

Torch's answers for the shapes these tests rely on (checked in a scratch script):
``(2, 4, 5, 16) @ (2, 4, 5, 16).transpose(-2, -1)`` is ``(2, 4, 5, 5)``; a ``Linear(64, 64)`` of
``(2, 5, 64)`` viewed ``(2, 5, 4, 16)`` and transposed is ``(2, 4, 5, 16)``.
"""

from __future__ import annotations

from engine_snippets import findings_on_lines, standalone_shapes

HF_SHARED_HELPER = """
import torch
from torch import nn


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_output = torch.matmul(attn_weights, value)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


class VisionAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.scale = self.head_dim**{vision}
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.k_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.v_proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states, attention_mask=None):
        b, t, _ = hidden_states.shape
        shape = (b, t, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        out, _ = eager_attention_forward(self, q, k, v, attention_mask, scaling=self.scale)
        return out.reshape(b, t, -1)


class TextAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim**{text}
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, hidden_states, attention_mask=None):
        b, t, _ = hidden_states.shape
        shape = (b, t, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        out, _ = eager_attention_forward(self, q, k, v, attention_mask, self.scaling)
        return out.reshape(b, t, -1)
"""


def test_one_caller_of_a_shared_eager_attention_with_d_k_is_sc102_at_its_factor():
    found = findings_on_lines(HF_SHARED_HELPER.format(vision="-0.5", text="-1"))
    assert ("SC102", "self.scaling = self.head_dim**-1") in found
    assert [code for code, _ in found if code == "SC102"] == ["SC102"]


def test_the_other_caller_of_a_shared_eager_attention_with_d_k_is_sc102_at_its_factor():
    found = findings_on_lines(HF_SHARED_HELPER.format(vision="-1", text="-0.5"))
    assert ("SC102", "self.scale = self.head_dim**-1") in found
    assert [code for code, _ in found if code == "SC102"] == ["SC102"]


def test_both_callers_of_a_shared_eager_attention_right_are_clean():
    assert findings_on_lines(HF_SHARED_HELPER.format(vision="-0.5", text="-0.5")) == []


FUNCTIONAL_SHARED_HELPER = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def attend(q, k, v, scale):
    att = {product} * scale
    att = F.softmax(att, dim=-1)
    return att @ v


class SelfAttention(nn.Module):
    def __init__(self, n_embd=64, n_head=4):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = attend(q, k, v, 1.0 / math.sqrt(k.size(-1)))
        return y.transpose(1, 2).contiguous().view(B, T, C)


class CrossAttention(nn.Module):
    def __init__(self, n_embd=64, n_head=4):
        super().__init__()
        self.n_head = n_head
        self.q = nn.Linear(n_embd, n_embd)
        self.kv = nn.Linear(n_embd, 2 * n_embd)
        self.scale = {cross}

    def forward(self, x, memory):
        B, T, C = x.size()
        S = memory.size(1)
        k, v = self.kv(memory).split(C, dim=2)
        q = self.q(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, S, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, S, self.n_head, C // self.n_head).transpose(1, 2)
        y = attend(q, k, v, self.scale)
        return y.transpose(1, 2).contiguous().view(B, T, C)


if __name__ == "__main__":
    x = torch.randn(2, 5, 64)
    m = torch.randn(2, 7, 64)
    y = SelfAttention()(x) + CrossAttention()(x, m)
"""


def test_a_module_giving_a_shared_helper_one_over_d_k_is_sc102_at_its_factor():
    source = FUNCTIONAL_SHARED_HELPER.format(product="q @ k.transpose(-2, -1)", cross="1.0 / (64 // 4)")
    found = findings_on_lines(source)
    assert [(code, line) for code, line in found if code == "SC102"] == [("SC102", "self.scale = 1.0 / (64 // 4)")]


def test_a_module_giving_an_einsum_helper_one_over_d_k_is_sc102_at_its_factor():
    source = FUNCTIONAL_SHARED_HELPER.format(product="torch.einsum('bhid,bhjd->bhij', q, k)", cross="1.0 / (64 // 4)")
    found = findings_on_lines(source)
    assert [(code, line) for code, line in found if code == "SC102"] == [("SC102", "self.scale = 1.0 / (64 // 4)")]


def test_modules_giving_a_shared_helper_their_right_scales_are_clean():
    for product in ("q @ k.transpose(-2, -1)", "torch.einsum('bhid,bhjd->bhij', q, k)"):
        source = FUNCTIONAL_SHARED_HELPER.format(product=product, cross="(64 // 4) ** -0.5")
        assert [f for f in findings_on_lines(source) if f[0] in ("SC101", "SC102")] == []


OPTIONAL_LOW_RANK_QUERY = """
import torch
from torch import nn


def eager_attention_forward(module, query, key, value, attention_mask, scaling, **kwargs):
    attn_weights = torch.matmul(query, key.transpose(2, 3)){scaled}
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    return torch.matmul(attn_weights, value).transpose(1, 2), attn_weights


class LatentAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.q_lora_rank = config.q_lora_rank
        self.num_heads = config.num_attention_heads
        self.head_dim = config.head_dim
        self.q_proj = (
            None
            if self.q_lora_rank is not None
            else nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)
        )
        self.q_a_proj = nn.Linear(config.hidden_size, self.q_lora_rank) if self.q_lora_rank is not None else None
        self.q_b_proj = (
            nn.Linear(self.q_lora_rank, self.num_heads * self.head_dim, bias=False)
            if self.q_lora_rank is not None
            else None
        )
        self.k_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.scaling = self.head_dim ** -0.5

    def forward(self, hidden_states, attention_mask=None):
        batch_size, seq_length = hidden_states.shape[:-1]
        query_shape = (batch_size, seq_length, -1, self.head_dim)
        if self.q_lora_rank is None:
            q_states = self.q_proj(hidden_states)
        else:
            q_states = self.q_b_proj(self.q_a_proj(hidden_states))
        query_states = q_states.view(query_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(query_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(query_shape).transpose(1, 2)
        out, _ = eager_attention_forward(self, query_states, key_states, value_states, attention_mask, scaling=self.scaling)
        return out.reshape(batch_size, seq_length, -1)
"""


def test_scores_of_an_optional_low_rank_query_without_the_scale_are_sc101():
    found = findings_on_lines(OPTIONAL_LOW_RANK_QUERY.format(scaled=""))
    assert ("SC101", "attn_weights = torch.matmul(query, key.transpose(2, 3))") in found


def test_scores_of_an_optional_low_rank_query_with_the_scale_are_clean():
    assert findings_on_lines(OPTIONAL_LOW_RANK_QUERY.format(scaled=" * scaling")) == []


def test_a_layer_or_none_chosen_by_a_conditional_expression_is_the_layer():
    source = OPTIONAL_LOW_RANK_QUERY.format(scaled=" * scaling").replace(
        "        query_states = q_states.view", "        probe = self.q_proj(hidden_states)\n        query_states = q_states.view"
    )
    assert standalone_shapes(source, "LatentAttention.forward", "probe") == [
        "(batch_size, seq_length, config.head_dim*config.num_attention_heads)"
    ]


TIMM_EAGER = """
import torch
import torch.nn as nn
from timm.layers import maybe_add_mask


class Attention(nn.Module):
    def __init__(self, dim=64, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** {exponent}
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, attn_mask=None):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = {query}
        attn = q @ k.transpose(-2, -1)
        attn = maybe_add_mask(attn, attn_mask)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)
"""


def test_timm_scores_through_maybe_add_mask_scaled_by_one_over_d_k_are_sc102():
    found = findings_on_lines(TIMM_EAGER.format(exponent="-1", query="q * self.scale"))
    assert ("SC102", "self.scale = head_dim ** -1") in found


def test_timm_scores_through_maybe_add_mask_unscaled_are_sc101():
    found = findings_on_lines(TIMM_EAGER.format(exponent="-0.5", query="q"))
    assert ("SC101", "attn = q @ k.transpose(-2, -1)") in found


def test_timm_scores_through_maybe_add_mask_scaled_right_are_clean():
    assert findings_on_lines(TIMM_EAGER.format(exponent="-0.5", query="q * self.scale")) == []
    source = TIMM_EAGER.format(exponent="-0.5", query="q * self.scale").replace("maybe_add_mask(attn, attn_mask)", "maybe_add_mask(attn)")
    assert findings_on_lines(source) == []
