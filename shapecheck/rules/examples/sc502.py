"""SC502 heads-merged-without-transpose: rule examples.

Marker (``# <-``): the ``view`` / ``reshape`` that turns ``(b, h, t, d_k)`` heads straight into
``(b, t, h * d_k)`` without moving the head axis next to ``d_k`` first.
"""

INVALID = [
    ("seed 1: out.contiguous().view(batch, seq, d_model) with no transpose", '''\
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.W_O = nn.Linear(d_model, d_model)

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        Q = self.W_Q(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        V = self.W_V(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / (self.d_k ** 0.5)
        out = torch.matmul(torch.softmax(scores, dim=-1), V)
        out = out.contiguous().view(batch_size, seq_len, d_model)  # <-
        return self.W_O(out)
'''),
    ("nanoGPT: y.reshape(B, T, C) straight after SDPA", '''\
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=64, n_head=4):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.reshape(B, T, C)  # <-
        return self.c_proj(y)
'''),
    ("Hugging Face: context_layer.view(batch, seq, all_head_size), permute forgotten", '''\
import math

import torch
from torch import nn


class BertSelfAttention(nn.Module):
    def __init__(self, hidden_size=64, num_attention_heads=4):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = hidden_size
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        batch, seq, _ = hidden_states.size()
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(query_layer, key_layer.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        context_layer = torch.matmul(nn.functional.softmax(scores, dim=-1), value_layer).contiguous()
        return context_layer.view(batch, seq, self.all_head_size)  # <-
'''),
    ("einsum attention output reshaped to (b, t, h * d)", '''\
import torch
import torch.nn as nn


class EinsumAttention(nn.Module):
    def __init__(self, dim=64, heads=8):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, self.dim_head).transpose(1, 2)
        k = k.view(b, t, self.heads, self.dim_head).transpose(1, 2)
        v = v.view(b, t, self.heads, self.dim_head).transpose(1, 2)
        sim = torch.einsum("bhid,bhjd->bhij", q, k) * self.dim_head ** -0.5
        out = torch.einsum("bhij,bhjd->bhid", sim.softmax(dim=-1), v)
        return out.reshape(b, t, self.heads * self.dim_head)  # <-
'''),
    ("functional: attention helper on (b, h, t, d_k) returns a straight reshape", '''\
import math

import torch
import torch.nn.functional as F
from jaxtyping import Float


def attention(
    q: Float[torch.Tensor, "b h t d"], k: Float[torch.Tensor, "b h s d"], v: Float[torch.Tensor, "b h s d"]
) -> torch.Tensor:
    b, h, t, d_k = q.shape
    weights = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
    return (weights @ v).reshape(b, t, h * d_k)  # <-
'''),
    ("aliased imports: from torch.nn import functional as fn; merged with .view", '''\
import torch as th
from torch import nn
from torch.nn import functional as fn


class Attn(nn.Module):
    def __init__(self, width=96, n_heads=6):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, x):
        bsz, seqlen, width = x.shape
        qkv = self.qkv(x).view(bsz, seqlen, 3, self.n_heads, width // self.n_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        y = fn.scaled_dot_product_attention(q, k, v)
        return y.contiguous().view(bsz, seqlen, width)  # <-


Attn()(th.randn(2, 10, 96))
'''),
]

VALID = [
    ("seed 1: out.transpose(1, 2).contiguous().view(batch, seq, d_model)", '''\
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        Q = self.W_Q(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        V = self.W_V(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / (self.d_k ** 0.5)
        out = torch.matmul(torch.softmax(scores, dim=-1), V)
        return out.transpose(1, 2).contiguous().view(batch_size, seq_len, d_model)
'''),
    ("nanoGPT: transpose then reshape", '''\
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
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
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, T, C)
'''),
    ("Hugging Face: permute(0, 2, 1, 3).contiguous() then view(new_shape)", '''\
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden_size=64, heads=4):
        super().__init__()
        self.heads, self.head_dim, self.all_head_size = heads, hidden_size // heads, hidden_size
        self.query = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states):
        b, t, _ = hidden_states.size()
        q = self.query(hidden_states).view(b, t, self.heads, self.head_dim).permute(0, 2, 1, 3)
        context = q * q.softmax(-1)
        context = context.permute(0, 2, 1, 3).contiguous()
        new_shape = context.size()[:-2] + (self.all_head_size,)
        return context.view(new_shape)
'''),
    ("einops: rearrange(out, 'b h n d -> b n (h d)')", '''\
import torch
import torch.nn as nn
from einops import rearrange


class EinopsAttention(nn.Module):
    def __init__(self, dim=64, heads=8):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in self.to_qkv(x).chunk(3, dim=-1))
        sim = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
        out = torch.einsum("bhij,bhjd->bhid", sim.softmax(dim=-1), v)
        return rearrange(out, "b h n d -> b n (h d)")
'''),
    ("functional: flatten(2) after the transpose", '''\
import math

import torch
import torch.nn.functional as F
from jaxtyping import Float


def attention(
    q: Float[torch.Tensor, "b h t d"], k: Float[torch.Tensor, "b h s d"], v: Float[torch.Tensor, "b h s d"]
) -> torch.Tensor:
    b, h, t, d_k = q.shape
    weights = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
    return (weights @ v).transpose(1, 2).flatten(2)
'''),
    ("fused (b * h, t, d) layout: bmm, then view back to (b, h, t, d) and transpose", '''\
import math

import torch
import torch.nn as nn


class FusedHeads(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.h, self.d = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q = q.view(b, t, self.h, self.d).transpose(1, 2).reshape(b * self.h, t, self.d)
        k = k.view(b, t, self.h, self.d).transpose(1, 2).reshape(b * self.h, t, self.d)
        v = v.view(b, t, self.h, self.d).transpose(1, 2).reshape(b * self.h, t, self.d)
        w = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.d), dim=-1)
        out = torch.bmm(w, v).view(b, self.h, t, self.d)
        return out.transpose(1, 2).reshape(b, t, c)
'''),
    ("aliased imports: heads kept (b, t, h, d) throughout, merged with a plain reshape", '''\
import torch as th
from torch import nn


class HeadsLast(nn.Module):
    def __init__(self, width=96, n_heads=6):
        super().__init__()
        self.n_heads = n_heads
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        bsz, seqlen, width = x.shape
        heads = self.proj(x).view(bsz, seqlen, self.n_heads, width // self.n_heads)
        heads = th.tanh(heads)
        return heads.reshape(bsz, seqlen, width)
'''),
]
