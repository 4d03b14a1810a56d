"""SC101 missing-attention-scale: rule examples.

Marker (``# <-``): the product that makes the unscaled ``q @ k^T`` scores (the matmul or einsum:
the place the scale goes) of scores that reach a softmax (or the op that turns scores into
probabilities). Each INVALID snippet has exactly one such product and no other rule's bug.
"""

INVALID = [
    ("seed style W_Q/W_K/W_V, matmul then F.softmax", '''\
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
        self.W_O = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        Q = self.W_Q(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        V = self.W_V(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(-2, -1))  # <-
        attn = F.softmax(scores, dim=-1)
        out = torch.matmul(attn, V).transpose(1, 2).reshape(B, T, C)
        return self.W_O(out)
'''),
    ("nanoGPT fused c_attn with config dataclass and tril buffer", '''\
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    block_size: int = 16
    n_embd: int = 64
    n_head: int = 4


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size)).view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = q @ k.transpose(-2, -1)  # (B, nh, T, T)  # <-
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)
'''),
    ("Hugging Face transpose_for_scores with config.hidden_size", '''\
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class BertConfig:
    hidden_size: int = 64
    num_attention_heads: int = 4


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)

    def transpose_for_scores(self, x):
        new_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))  # <-
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        context = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        return context.view(context.size()[:-2] + (self.num_attention_heads * self.attention_head_size,))
'''),
    ("functional attention() helper, `from torch.nn import functional as G`", '''\
import torch
from torch import nn
from torch.nn import functional as G


def attention(q, k, v):
    p = G.softmax(q @ k.transpose(-2, -1), dim=-1)  # <-
    return p @ v


class SingleHeadAttention(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.to_q = nn.Linear(d_model, d_model)
        self.to_k = nn.Linear(d_model, d_model)
        self.to_v = nn.Linear(d_model, d_model)

    def forward(self, x):
        return attention(self.to_q(x), self.to_k(x), self.to_v(x))
'''),
    ("einsum scores, `import torch as th`, Tensor.softmax", '''\
import torch as th
from torch import nn


class EinsumAttention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(b, n, self.heads, self.dim_head)
        k = k.reshape(b, n, self.heads, self.dim_head)
        v = v.reshape(b, n, self.heads, self.dim_head)
        sim = th.einsum("bihd,bjhd->bhij", q, k)  # <-
        attn = sim.softmax(dim=-1)
        out = th.einsum("bhij,bjhd->bihd", attn, v)
        return self.out(out.reshape(b, n, d))
'''),
    ("einops rearrange head split, scale computed but never used", '''\
import torch
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        dots = torch.matmul(q, k.transpose(-1, -2))  # <-
        attn = dots.softmax(dim=-1)
        out = rearrange(torch.matmul(attn, v), "b h n d -> b n (h d)")
        return self.to_out(out)
'''),
    ("names do not decide: `weights = a @ b.T-ish` from query/key projections", '''\
import torch
import torch.nn as nn


class Mixer(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.proj_a = nn.Linear(width, width)
        self.proj_b = nn.Linear(width, width)
        self.proj_c = nn.Linear(width, width)

    def forward(self, x):
        a, b, c = self.proj_a(x), self.proj_b(x), self.proj_c(x)
        weights = a @ b.transpose(-2, -1)  # <-
        weights = torch.softmax(weights, -1)
        return weights @ c
'''),
    ("F.softmax(input=scores, ...) by keyword, head dim 64", '''\
import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


def attend(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h s 64"], v: Float[Tensor, "b h s 64"]):
    scores = torch.matmul(q, k.transpose(-2, -1))  # <-
    weights = F.softmax(input=scores, dim=-1)
    return torch.matmul(weights, v)
'''),
]

VALID = [
    ("seed style, divided by math.sqrt(d_k)", '''\
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, d_model=32, d_k=16, d_v=16):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_k)
        self.W_K = nn.Linear(d_model, d_k)
        self.W_V = nn.Linear(d_model, d_v)
        self.d_k = d_k

    def forward(self, x):
        Q, K, V = self.W_Q(x), self.W_K(x), self.W_V(x)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)
        attn = F.softmax(scores, dim=-1)
        return attn @ V
'''),
    ("scale folded into q before the matmul: q = q * self.scale", '''\
import torch
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        q = q * self.scale
        attn = (q @ k.transpose(-1, -2)).softmax(dim=-1)
        return rearrange(attn @ v, "b h n d -> b n (h d)")
'''),
    ("F.scaled_dot_product_attention scales by itself (nanoGPT flash path)", '''\
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
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
'''),
    ("scale passed as an argument to a functional helper", '''\
import torch
import torch.nn as nn


def attention(q, k, v, scale):
    w = (q @ k.transpose(-2, -1)) * scale
    return torch.softmax(w, dim=-1) @ v


class Head(nn.Module):
    def __init__(self, d_model=32, head_dim=16):
        super().__init__()
        self.head_dim = head_dim
        self.q = nn.Linear(d_model, head_dim)
        self.k = nn.Linear(d_model, head_dim)
        self.v = nn.Linear(d_model, head_dim)

    def forward(self, x):
        return attention(self.q(x), self.k(x), self.v(x), scale=self.head_dim ** -0.5)
'''),
    ("einsum with the scale applied inside the equation's operand", '''\
import torch as th
from torch import nn


class EinsumAttention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.scale = self.dim_head ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = th.einsum("bihd,bjhd->bhij", q * self.scale, k)
        attn = sim.softmax(dim=-1)
        return th.einsum("bhij,bjhd->bihd", attn, v).reshape(b, n, d)
'''),
    ("local variable named F (feature size) shadows nothing torch", '''\
import math

import torch
import torch.nn as nn


class TinyAttention(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)

    def forward(self, x):
        q, k = self.query(x), self.key(x)
        F = q.size(-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(F)
        return torch.softmax(scores, dim=-1) @ x
'''),
    ("softmax over classifier logits is not attention", '''\
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, d_model=32, n_classes=5):
        super().__init__()
        self.body = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, x):
        logits = self.head(F.gelu(self.body(x)))
        return F.softmax(logits, dim=-1)
'''),
    ("nn.MultiheadAttention scales internally", '''\
import torch
from torch import nn


class EncoderBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        y, _ = self.attn(x, x, x, need_weights=False)
        return self.norm(x + y)
'''),
    ("HF style divided by math.sqrt(self.attention_head_size)", '''\
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
        self.h = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        B, T, _ = hidden_states.shape
        q = self.query(hidden_states).view(B, T, self.h, self.attention_head_size).permute(0, 2, 1, 3)
        k = self.key(hidden_states).view(B, T, self.h, self.attention_head_size).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        return nn.functional.softmax(scores, dim=-1)
'''),
    ("helper of unknown head dim: its callers (elsewhere) pass q already scaled, it may be 1", '''\
import torch


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Attention over pre-scaled queries: callers multiply q by d_k ** -0.5 first."""
    weights = (q @ k.transpose(-2, -1)).softmax(dim=-1)
    return weights @ v
'''),
    ("a head dim of 1 needs no scale: sqrt(1) = 1", '''\
import torch
from jaxtyping import Float
from torch import Tensor


def gate_scores(q: Float[Tensor, "b t 1"], k: Float[Tensor, "b s 1"]) -> Float[Tensor, "b t s"]:
    scores = q @ k.transpose(-2, -1)
    return scores.softmax(dim=-1)
'''),
    ("local-attention style: q times a scale the engine cannot read, then an xpos table", '''\
import torch
from torch import nn


def default(value, fallback):
    return value if value is not None else fallback


class WindowAttention(nn.Module):
    def __init__(self, dim_head, scale=None):
        super().__init__()
        self.scale = scale

    def forward(self, q, k, v, freqs):
        b, h, n, dim_head = q.shape
        scale = default(self.scale, dim_head ** -0.5)
        q = q * scale
        xpos = torch.ones(1)
        q = q * freqs.cos() * xpos
        sim = torch.einsum("b h i d, b h j d -> b h i j", q, k)
        return sim.softmax(dim=-1) @ v


attn = WindowAttention(64)
out = attn(torch.randn(2, 4, 8, 64), torch.randn(2, 4, 8, 64), torch.randn(2, 4, 8, 64), torch.randn(8, 64))
'''),
]
