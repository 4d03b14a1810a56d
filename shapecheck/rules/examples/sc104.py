"""SC104 mask-after-softmax: rule examples.

Marker (``# <-``): the line that applies the mask: to the probabilities after softmax, or to the
scores before softmax with 0 (``masked_fill(m, 0)``, ``scores * mask``, ``where(m, scores, 0)``)
instead of ``-inf`` / a large negative value.
"""

INVALID = [
    ("seed style, masked_fill(mask == 0, 0.0) on the probabilities", '''\
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedSelfAttention(nn.Module):
    def __init__(self, d_model=32, max_len=16):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)))

    def forward(self, x):
        T = x.size(1)
        Q, K, V = self.W_Q(x), self.W_K(x), self.W_V(x)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(x.size(-1))
        attn = F.softmax(scores, dim=-1)
        attn = attn.masked_fill(self.mask[:T, :T] == 0, 0.0)  # <-
        return attn @ V
'''),
    ("nanoGPT: probabilities multiplied by the tril buffer", '''\
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
        att = F.softmax(att, dim=-1)
        att = att * self.bias[:, :, :T, :T]  # <-
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)
'''),
    ("seed 2 style bool buffer, but masked with 0 before softmax", '''\
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model=64, n_head=4, max_len=32):
        super().__init__()
        self.n_head, self.d_k = n_head, d_model // n_head
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("mask", torch.triu(torch.ones(max_len, max_len), diagonal=1).bool())

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_QKV(x).reshape(B, T, 3, self.n_head, self.d_k).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k ** 0.5)
        scores = scores.masked_fill(self.mask[:T, :T], 0)  # <-
        attn = scores.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
'''),
    ("functional helper: scores multiplied by a 0/1 mask before softmax", '''\
import math

import torch
from torch import nn
from torch.nn import functional as G


def attention(q, k, v, keep):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    scores = scores * keep  # <-
    return G.softmax(scores, dim=-1) @ v


class MaskedBlock(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)

    def forward(self, x):
        T = x.size(1)
        keep = torch.tril(torch.ones(T, T, device=x.device))
        return attention(self.q(x), self.k(x), self.v(x), keep)
'''),
    ("einsum, `import torch as th`, where(mask, sim, 0) before softmax", '''\
import torch as th
from torch import nn


class EinsumCausalAttention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.scale = self.dim_head ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = th.einsum("bihd,bjhd->bhij", q, k) * self.scale
        causal = th.ones(n, n, dtype=th.bool, device=x.device).tril()
        sim = th.where(causal, sim, th.zeros_like(sim))  # <-
        attn = sim.softmax(dim=-1)
        return th.einsum("bhij,bjhd->bihd", attn, v).reshape(b, n, d)
'''),
    ("Hugging Face: padding mask applied to attention_probs", '''\
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
        self.head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states, attention_mask):
        B, T, _ = hidden_states.shape
        q = self.query(hidden_states).view(B, T, self.h, self.head_size).permute(0, 2, 1, 3)
        k = self.key(hidden_states).view(B, T, self.h, self.head_size).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        attention_probs = nn.functional.softmax(scores, dim=-1)
        attention_probs = attention_probs.masked_fill(attention_mask[:, None, None, :] == 0, 0.0)  # <-
        return attention_probs
'''),
    ("a small negative fill, -1.0, before softmax", '''\
import math

import torch
from jaxtyping import Bool, Float
from torch import Tensor


def attend(
    q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"], v: Float[Tensor, "b h s d"], pad: Bool[Tensor, "b 1 1 s"]
) -> Float[Tensor, "b h t d"]:
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    scores = scores.masked_fill(pad, -1.0)  # <-
    return scores.softmax(dim=-1) @ v
'''),
    ("bool tril masked with 0 before softmax: a weak fill (SC104), no polarity claim (SC203)", '''\
import math

import torch
from jaxtyping import Float
from torch import Tensor


def attend(q: Float[Tensor, "b t d"], k: Float[Tensor, "b t d"], v: Float[Tensor, "b t d"]) -> Float[Tensor, "b t d"]:
    T = q.size(1)
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=q.device))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    scores = scores.masked_fill(allowed, 0.0)  # <-
    return scores.softmax(dim=-1) @ v
'''),
    ('functional einsum: causal mask before softmax, padding mask filled with -finfo.max after it', '''\
import torch
from einops import rearrange


def local_window_attention(q, k, v, pad_mask, window=8):
    b, h, n, d = q.shape
    sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * d ** -0.5
    fill = -torch.finfo(sim.dtype).max
    causal = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
    sim = sim.masked_fill(causal, fill)
    attn = sim.softmax(dim=-1)
    attn = attn.masked_fill(rearrange(pad_mask, "b j -> b 1 1 j"), fill)  # <-
    return torch.einsum("b h i j, b h j d -> b h i d", attn, v)
'''),
    ("window attention: relative position bias added after the softmax", '''\
import torch
from torch import nn


class WindowAttention(nn.Module):
    def __init__(self, dim, window_size=7, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.bias_table = nn.Parameter(torch.zeros(num_heads, window_size * window_size, window_size * window_size))
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        attn = attn + self.bias_table.unsqueeze(0)  # <-
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))
'''),
    ("functional attention: the caller's additive mask added to the weights", '''\
import math

import torch


def attend(query, key, value, attn_mask=None):
    weights = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    weights = torch.softmax(weights, dim=-1)
    if attn_mask is not None:
        weights = weights + attn_mask  # <-
    return weights @ value
'''),
    ("Hugging Face eager_attention_forward: the mask added after the softmax, the helper run by its module", '''\
from typing import Optional

import torch
from torch import nn


def eager_attention_forward(module, query, key, value, attention_mask: Optional[torch.Tensor], scaling: float):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask  # <-
    return torch.matmul(attn_weights, value)


class XAttention(nn.Module):
    def __init__(self, hidden_size=64, num_heads=4):
        super().__init__()
        self.head_dim = hidden_size // num_heads
        self.scaling = self.head_dim**-0.5
        self.q_proj = nn.Linear(hidden_size, hidden_size)
        self.k_proj = nn.Linear(hidden_size, hidden_size)
        self.v_proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, attention_mask: Optional[torch.Tensor] = None):
        b, t, _ = hidden_states.shape
        shape = (b, t, -1, self.head_dim)
        query = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        key = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        value = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        return eager_attention_forward(self, query, key, value, attention_mask, self.scaling)
'''),
]

VALID = [
    ("seed 1 style, masked_fill(mask == 0, -inf) before softmax", '''\
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedSelfAttention(nn.Module):
    def __init__(self, d_model=32, max_len=16):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)))

    def forward(self, x):
        T = x.size(1)
        Q, K, V = self.W_Q(x), self.W_K(x), self.W_V(x)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(x.size(-1))
        scores = scores.masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        return attn @ V
'''),
    ("large negative -1e9 instead of -inf", '''\
import math

import torch
from torch import nn


class CausalHead(nn.Module):
    def __init__(self, d_model=32, head_size=16):
        super().__init__()
        self.key = nn.Linear(d_model, head_size, bias=False)
        self.query = nn.Linear(d_model, head_size, bias=False)
        self.value = nn.Linear(d_model, head_size, bias=False)

    def forward(self, x):
        T = x.size(1)
        k, q, v = self.key(x), self.query(x), self.value(x)
        wei = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
        wei = wei.masked_fill(torch.tril(torch.ones(T, T)) == 0, -1e9)
        return torch.softmax(wei, dim=-1) @ v
'''),
    ("Hugging Face additive mask with torch.finfo(dtype).min", '''\
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
        self.head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states, attention_mask):
        B, T, _ = hidden_states.shape
        q = self.query(hidden_states).view(B, T, self.h, self.head_size).permute(0, 2, 1, 3)
        k = self.key(hidden_states).view(B, T, self.h, self.head_size).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        extended = (1.0 - attention_mask[:, None, None, :].to(scores.dtype)) * torch.finfo(scores.dtype).min
        return nn.functional.softmax(scores + extended, dim=-1)
'''),
    ("einsum, where(causal, sim, -inf)", '''\
import torch as th
from torch import nn


class EinsumCausalAttention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.scale = self.dim_head ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = th.einsum("bihd,bjhd->bhij", q, k) * self.scale
        causal = th.ones(n, n, dtype=th.bool, device=x.device).tril()
        sim = th.where(causal, sim, float("-inf"))
        attn = sim.softmax(dim=-1)
        return th.einsum("bhij,bjhd->bihd", attn, v).reshape(b, n, d)
'''),
    ("padded query rows zeroed in the output, after attention", '''\
import math

import torch
import torch.nn as nn


class PaddedAttention(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)

    def forward(self, x, keep):
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.size(-1))
        scores = scores.masked_fill(~keep[:, None, :], float("-inf"))
        out = torch.softmax(scores, dim=-1) @ self.v(x)
        return out * keep[:, :, None]
'''),
    ("dropout on the probabilities is not a mask", '''\
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d_model=32, p=0.1):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.attn_drop = nn.Dropout(p)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attn = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)
        attn = self.attn_drop(attn)
        return attn @ v
'''),
    ("additive -inf mask built with masked_fill on zeros, then added", '''\
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.d_model = d_model
        self.qk = nn.Linear(d_model, 2 * d_model)

    def forward(self, x):
        T = x.size(1)
        q, k = self.qk(x).chunk(2, dim=-1)
        blocked = torch.ones(T, T, dtype=torch.bool).triu(1)
        bias = torch.zeros(T, T).masked_fill(blocked, float("-inf"))
        scores = q @ k.transpose(-2, -1) * self.d_model ** -0.5 + bias
        return scores.softmax(dim=-1)
'''),
    ("NaN guard: scores masked with -inf, then rows with no key zeroed after softmax", '''\
import math

import torch
from jaxtyping import Bool, Float
from torch import Tensor


def attend(
    q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"], v: Float[Tensor, "b h s d"], pad: Bool[Tensor, "b 1 1 s"]
) -> Float[Tensor, "b h t d"]:
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    scores = scores.masked_fill(pad, float("-inf"))
    attn = scores.softmax(dim=-1)
    attn = attn.masked_fill(pad.all(dim=-1, keepdim=True), 0.0)  # rows with no key at all: NaN -> 0
    return attn @ v
'''),
    ("padding: probabilities of masked scores multiplied by the keep mask", '''\
import math

import torch
from jaxtyping import Bool, Float
from torch import Tensor


def attend(
    q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"], v: Float[Tensor, "b h s d"], keep: Bool[Tensor, "b 1 1 s"]
) -> Float[Tensor, "b h t d"]:
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    attn = scores.masked_fill(~keep, float("-inf")).softmax(dim=-1) * keep
    return attn @ v
'''),
    ("fill value passed by the caller: unknown, not judged", '''\
import math

import torch
from jaxtyping import Bool, Float
from torch import Tensor


def attend(
    q: Float[Tensor, "b h t d"],
    k: Float[Tensor, "b h s d"],
    v: Float[Tensor, "b h s d"],
    pad: Bool[Tensor, "b 1 1 s"],
    fill: float,
) -> Float[Tensor, "b h t d"]:
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    scores = scores.masked_fill(pad, fill)  # the caller passes the fill (finfo.min, -inf, ...)
    return scores.softmax(dim=-1) @ v
'''),
    ("scores multiplied by a learned per-head gain, not a mask", '''\
import math

import torch
from jaxtyping import Float
from torch import Tensor


def attend(
    q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"], v: Float[Tensor, "b h s d"], gain: Float[Tensor, "h 1 1"]
) -> Float[Tensor, "b h t d"]:
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    scores = scores * gain  # a learned per-head temperature, not a mask
    return scores.softmax(dim=-1) @ v
'''),
    ("gated positional attention: content and positional attention mixed after their softmaxes", '''\
import torch
from torch import nn


class GatedAttention(nn.Module):
    def __init__(self, dim, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qk = nn.Linear(dim, dim * 2)
        self.v = nn.Linear(dim, dim)
        self.pos_proj = nn.Linear(3, num_heads)
        self.gating = nn.Parameter(torch.ones(num_heads))

    def forward(self, x, rel_indices):
        B, N, C = x.shape
        q, k = self.qk(x).reshape(B, N, 2, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        content = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        positional = self.pos_proj(rel_indices).permute(0, 3, 1, 2).softmax(dim=-1)
        gate = torch.sigmoid(self.gating.view(1, -1, 1, 1))
        attn = (1.0 - gate) * content + gate * positional
        v = self.v(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        return (attn @ v).transpose(1, 2).reshape(B, N, C)
'''),
    ("a small number added to the weights before a log", '''\
import math

import torch


def attend(query, key, value):
    weights = torch.softmax(query @ key.transpose(-2, -1) / math.sqrt(query.size(-1)), dim=-1)
    entropy = -(weights * torch.log(weights + 1e-9)).sum(-1)
    return weights @ value, entropy
'''),
    ("straight-through hard attention: one-hot weights minus the detached probabilities, plus them", '''\
import torch
from torch import nn


class HardAttention(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.scale = dim**-0.5
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        soft = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
        index = soft.argmax(dim=-1, keepdim=True)
        hard = torch.zeros_like(soft).scatter_(-1, index, 1.0)
        weights = hard - soft.detach() + soft
        return weights @ v
'''),
]
