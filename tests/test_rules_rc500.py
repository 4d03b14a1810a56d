"""Head layouts and layer norms on real model code (issue 10 recall, SC404 / SC501 / SC502 / SC503).

- SC503: a width ``e`` split into ``(h, X, e // h)`` with a third axis between the two factors
  (``key.view(batch_size, attn.heads, -1, head_dim)``), whatever the rank before the width (a
  projection by a layer the engine cannot see, known only by the width read off it)
  (``facts.layouts._width_split_apart``).
- SC502: ``(b, h, t, d)`` reshaped to ``(b, t, W)`` where ``W`` is read off the input (``B, N, C =
  x.shape``): the reshape ran, so ``W`` is ``h * d``; only a width provably different holds it off.
  ``x.shape[1]`` read twice off one tensor of unknown shape is one size (``ops.base.read_trailing_size``).
- SC501: a window reverse ``x.permute(0, 1, 3, 2, 4, 5).view(B, H, W, -1)`` whose channels the
  engine does not know: a last size unknown on both sides is the same count when the other axes
  group exactly.

Torch's answers (scratch script, torch 2.13 CPU): ``torch.randn(2, 5, 8).view(2, 2, -1, 4)`` runs,
gives ``(2, 2, 5, 4)`` and differs from ``view(2, 5, 2, 4).transpose(1, 2)``;
``(attn @ v)`` of ``(2, 2, 5, 4)`` reshaped to ``(2, 5, 8)`` runs and differs from
``transpose(1, 2).reshape(2, 5, 8)``; ``torch.randn(2, 2, 3, 2, 3, 4).permute(0, 1, 3, 2, 4, 5)
.view(2, 6, 6, -1)`` raises (view size is not compatible with input tensor's size and stride) and
runs after ``.contiguous()``.
"""

from __future__ import annotations

from engine_snippets import findings_on_lines, standalone_shapes

# ------------------------------------------------------------------------------------------ SC503

DIFFUSERS = """
import torch
import torch.nn.functional as F
from ..attention_processor import Attention


class AttnProcessor:
    def __call__(self, attn: Attention, hidden_states: torch.Tensor):
        batch_size = hidden_states.shape[0]
        query = attn.to_q(hidden_states)
        key = attn.to_k(hidden_states)
        value = attn.to_v(hidden_states)
        inner_dim = key.shape[-1]
        head_dim = inner_dim // attn.heads
        query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        key = {key_split}
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        out = F.scaled_dot_product_attention(query, key, value)
        return out.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
"""


def test_a_processor_key_split_heads_first_is_sc503():
    found = findings_on_lines(DIFFUSERS.format(key_split="key.view(batch_size, attn.heads, -1, head_dim)"))
    assert ("SC503", "key = key.view(batch_size, attn.heads, -1, head_dim)") in found


def test_a_processor_key_split_then_transposed_is_clean():
    split = "key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)"
    assert findings_on_lines(DIFFUSERS.format(key_split=split)) == []


HF = """
import torch
from torch import nn


class BartAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, hidden_states, key_value_states):
        bsz = hidden_states.shape[0]
        q = self.q_proj(hidden_states).view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        k = {key_split}
        v = self.v_proj(key_value_states).view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        attn = torch.softmax(q @ k.transpose(-1, -2) * self.scaling, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(bsz, -1, self.num_heads * self.head_dim)
        return self.out_proj(out)
"""


def test_a_cross_attention_key_of_unknown_rank_split_heads_first_is_sc503():
    split = "self.k_proj(key_value_states).view(bsz, self.num_heads, -1, self.head_dim)"
    found = findings_on_lines(HF.format(key_split=split))
    assert ("SC503", f"k = {split}") in found


def test_a_cross_attention_key_split_then_transposed_is_clean():
    split = "self.k_proj(key_value_states).view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)"
    assert findings_on_lines(HF.format(key_split=split)) == []


NANOGPT = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int = 64, n_head: int = 4):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = {key_split}
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)
"""


def test_a_nanogpt_key_split_with_a_minus_one_between_heads_and_head_dim_is_sc503():
    split = "k.view(B, self.n_head, -1, C // self.n_head)"
    assert ("SC503", f"k = {split}") in findings_on_lines(NANOGPT.format(key_split=split))


def test_a_nanogpt_key_split_with_a_minus_one_then_transposed_is_clean():
    split = "k.view(B, -1, self.n_head, C // self.n_head).transpose(1, 2)"
    assert findings_on_lines(NANOGPT.format(key_split=split)) == []


def test_one_query_token_split_heads_first_is_clean():
    # (b, h, 1, d) of one token's features: nothing sits between the heads and the head dim.
    source = HF.format(key_split="self.k_proj(key_value_states).view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)")
    source = source.replace(
        "q = self.q_proj(hidden_states).view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)",
        "q = self.q_proj(hidden_states[:, 0]).view(bsz, self.num_heads, 1, self.head_dim)",
    )
    assert [f for f in findings_on_lines(source) if f[0] == "SC503"] == []


# ------------------------------------------------------------------------------------------ SC502

TIMM = """
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim: int, num_heads: int = 8):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = {merge}
        return self.proj(x)
"""


def test_a_timm_merge_to_the_width_read_off_the_input_without_transpose_is_sc502():
    found = findings_on_lines(TIMM.format(merge="(attn @ v).reshape(B, N, C)"))
    assert ("SC502", "x = (attn @ v).reshape(B, N, C)") in found


def test_a_timm_merge_after_the_transpose_is_clean():
    assert findings_on_lines(TIMM.format(merge="(attn @ v).transpose(1, 2).reshape(B, N, C)")) == []


PROMPT = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, embed_dims: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.embed_dims = embed_dims
        self.head_dims = embed_dims // num_heads
        self.q = nn.Linear(embed_dims, embed_dims)
        self.kv = nn.Linear(embed_dims, embed_dims * 2)
        self.proj = nn.Linear(embed_dims, embed_dims)

    def forward(self, x, context):
        B = context.shape[0]
        q = self.q(x).reshape(B, x.shape[1], self.num_heads, self.head_dims).permute(0, 2, 1, 3)
        kv = self.kv(context).reshape(B, context.shape[1], 2, self.num_heads, self.head_dims).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        attn = F.scaled_dot_product_attention(q, k, v)
        x = {merge}
        return self.proj(x)
"""


def test_a_size_read_twice_off_one_tensor_of_unknown_shape_is_one_size():
    source = PROMPT.format(merge="attn.transpose(1, 2).reshape(B, x.shape[1], self.embed_dims)")
    source = source.replace("        B = context.shape[0]\n", "        B = context.shape[0]\n        t1 = x.shape[1]\n        t2 = x.shape[1]\n        probe = torch.zeros(t1, t2)\n")
    (shape,) = standalone_shapes(source, "CrossAttention.forward", "probe")
    first, second = shape.strip("()").split(", ")
    assert first == second


def test_an_sdpa_output_merged_with_the_query_length_read_again_is_sc502():
    found = findings_on_lines(PROMPT.format(merge="attn.reshape(B, x.shape[1], self.embed_dims)"))
    assert ("SC502", "x = attn.reshape(B, x.shape[1], self.embed_dims)") in found


def test_an_sdpa_output_merged_after_the_transpose_is_clean():
    assert findings_on_lines(PROMPT.format(merge="attn.transpose(1, 2).reshape(B, x.shape[1], self.embed_dims)")) == []


# ------------------------------------------------------------------------------------------ SC501

WINDOWS = """
import torch
import torch.nn as nn


class WindowBlock(nn.Module):
    @staticmethod
    def window_reverse(windows, H, W, window_size):
        B = int(windows.shape[0] / (H * W / window_size / window_size))
        x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
        x = {reverse}
        return x
"""


def test_a_window_reverse_of_unknown_channels_viewed_after_permute_is_sc501():
    found = findings_on_lines(WINDOWS.format(reverse="x.permute(0, 1, 3, 2, 4, 5).view(B, H, W, -1)"))
    assert ("SC501", "x = x.permute(0, 1, 3, 2, 4, 5).view(B, H, W, -1)") in found


def test_a_window_reverse_made_contiguous_is_clean():
    assert findings_on_lines(WINDOWS.format(reverse="x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)")) == []


def test_a_window_reverse_by_reshape_is_clean():
    assert findings_on_lines(WINDOWS.format(reverse="x.permute(0, 1, 3, 2, 4, 5).reshape(B, H, W, -1)")) == []
