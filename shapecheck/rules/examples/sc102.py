"""SC102 wrong-attention-scale: rule examples.

Marker (``# <-``): the line where the wrong factor is written when one number applied once makes
it (``self.scale = (dim // heads) ** 0.5`` in ``__init__``: the line to edit); otherwise the line
where the scale is applied to the scores or to q/k (the ``/``, the ``*`` or the ``scale=`` argument).
"""

INVALID = [
    ("seed style, divided by d_k instead of sqrt(d_k)", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        Q = self.W_Q(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        V = self.W_V(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / self.d_k  # <-
        attn = F.softmax(scores, dim=-1)
        return torch.matmul(attn, V).transpose(1, 2).reshape(B, T, C)
'''),
    ("multiplied by sqrt(head_dim) instead of divided", '''\
import math

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, d_model=32, head_dim=16):
        super().__init__()
        self.head_dim = head_dim
        self.q = nn.Linear(d_model, head_dim)
        self.k = nn.Linear(d_model, head_dim)
        self.v = nn.Linear(d_model, head_dim)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        w = (q @ k.transpose(-2, -1)) * math.sqrt(self.head_dim)  # <-
        return torch.softmax(w, dim=-1) @ v
'''),
    ("nanoGPT: 1/sqrt(C) with C = n_embd in multi-head attention", '''\
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=64, n_head=4, block_size=16):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C))  # <-
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)
'''),
    ("Hugging Face: sqrt(config.hidden_size) in multi-head attention", '''\
import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Config:
    hidden_size: int = 64
    num_attention_heads: int = 4


class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.h = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        B, T, _ = hidden_states.shape
        q = self.query(hidden_states).view(B, T, self.h, self.head_size).permute(0, 2, 1, 3)
        k = self.key(hidden_states).view(B, T, self.h, self.head_size).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(self.config.hidden_size)  # <-
        return nn.functional.softmax(scores, dim=-1)
'''),
    ("einops: self.scale = dim_head ** 0.5 (sign of the exponent) applied to q", '''\
import torch
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** 0.5  # <-
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        q = q * self.scale
        attn = (q @ k.transpose(-1, -2)).softmax(dim=-1)
        return rearrange(attn @ v, "b h n d -> b n (h d)")
'''),
    ("einsum, `import torch as th`, divided by head dim read from the tensor", '''\
import torch as th
from torch import nn


class EinsumAttention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        d_k = q.shape[-1]
        sim = th.einsum("bihd,bjhd->bhij", q, k) / d_k  # <-
        attn = sim.softmax(dim=-1)
        return th.einsum("bhij,bjhd->bihd", attn, v).reshape(b, n, d)
'''),
    ("SDPA given scale=1/head_dim", '''\
import torch.nn as nn
from torch.nn import functional as G


class Attention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        y = G.scaled_dot_product_attention(q, k, v, scale=1.0 / self.head_dim)  # <-
        return y.transpose(1, 2).reshape(B, T, C)
'''),
    ("Whisper style: the quarter scale meant for both q and k applied to q only", '''\
import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, n_state: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_state, n_state)
        self.key = nn.Linear(n_state, n_state, bias=False)
        self.value = nn.Linear(n_state, n_state)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        n_batch, n_ctx, n_state = q.shape
        scale = (n_state // self.n_head) ** -0.25  # <-
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        w = ((q * scale) @ k.transpose(-1, -2)).float().softmax(dim=-1)
        return (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2)
'''),
]

VALID = [
    ("seed style, divided by d_k ** 0.5", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        Q = self.W_Q(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        V = self.W_V(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / (self.d_k ** 0.5)
        attn = F.softmax(scores, dim=-1)
        return torch.matmul(attn, V).transpose(1, 2).reshape(B, T, C)
'''),
    ("single head: sqrt(d_model) is sqrt(d_k) here", '''\
import math

import torch
import torch.nn as nn


class SingleHeadSelfAttention(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.d_model = d_model
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)
        return torch.softmax(scores, dim=-1) @ v
'''),
    ("nanoGPT: 1/sqrt(k.size(-1)) after the head split", '''\
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=64, n_head=4, block_size=16):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)
'''),
    ("temperature = d_k ** 0.5, q divided by it before the matmul", '''\
import torch
import torch.nn as nn


class ScaledDotProductAttention(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, q, k, v):
        attn = torch.matmul(q / self.temperature, k.transpose(2, 3))
        return torch.matmul(torch.softmax(attn, dim=-1), v)


class MultiHead(nn.Module):
    def __init__(self, d_model=64, n_head=4):
        super().__init__()
        self.n_head, self.d_k = n_head, d_model // n_head
        self.w_qs = nn.Linear(d_model, d_model, bias=False)
        self.w_ks = nn.Linear(d_model, d_model, bias=False)
        self.w_vs = nn.Linear(d_model, d_model, bias=False)
        self.attention = ScaledDotProductAttention(temperature=self.d_k ** 0.5)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.w_qs(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)
        k = self.w_ks(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)
        v = self.w_vs(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)
        return self.attention(q, k, v)
'''),
    ("SDPA with scale=head_dim ** -0.5", '''\
import torch.nn as nn
from torch.nn import functional as G


class Attention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        y = G.scaled_dot_product_attention(q, k, v, scale=self.head_dim ** -0.5)
        return y.transpose(1, 2).reshape(B, T, C)
'''),
    ("sqrt of d_model // n_heads, `from math import sqrt`", '''\
from math import sqrt

import torch
from torch import nn


class MHA(nn.Module):
    def __init__(self, d_model=64, n_heads=8):
        super().__init__()
        self.d_model, self.n_heads = d_model, n_heads
        self.qk = nn.Linear(d_model, 2 * d_model)

    def forward(self, x):
        B, T, _ = x.shape
        q, k = self.qk(x).view(B, T, 2, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / sqrt(self.d_model // self.n_heads)
        return scores.softmax(dim=-1)
'''),
    ("temperature on sampling logits is not an attention scale", '''\
import torch
import torch.nn as nn


class LMHead(nn.Module):
    def __init__(self, d_model=32, vocab_size=50, temperature=0.7):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab_size)
        self.temperature = temperature

    def forward(self, h):
        logits = self.proj(h[:, -1, :]) / self.temperature
        return torch.softmax(logits, dim=-1)
'''),
    ("Whisper style: d_k ** -0.25 on both q and k makes 1/sqrt(d_k)", '''\
import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, n_state=384, n_head=6):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_state, n_state)
        self.key = nn.Linear(n_state, n_state, bias=False)
        self.value = nn.Linear(n_state, n_state)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        n_batch, n_ctx, n_state = q.shape
        scale = (n_state // self.n_head) ** -0.25
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        w = ((q * scale) @ (k * scale).transpose(-1, -2)).float().softmax(dim=-1)
        return (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2)
'''),
]
