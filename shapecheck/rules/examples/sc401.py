"""SC401 shared-qk-weights: rule examples.

Marker (``# <-``): the line that makes the key projection the same object as the query projection:
the second (re)assignment in ``__init__`` (``self.W_K = self.W_Q``, or a chained
``self.W_Q = self.W_K = ...``), or, when both modules exist but ``forward`` applies the query one
to produce the keys, that line in ``forward``.
"""

INVALID = [
    ("seed 1 anecdote: W_Q = W_K = nn.Parameter(...)", '''\
import math

import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, d_model=32, d_k=16):
        super().__init__()
        self.W_Q = self.W_K = nn.Parameter(torch.randn(d_model, d_k) / math.sqrt(d_model))  # <-
        self.W_V = nn.Parameter(torch.randn(d_model, d_k) / math.sqrt(d_model))
        self.d_k = d_k

    def forward(self, x):
        Q, K, V = x @ self.W_Q, x @ self.W_K, x @ self.W_V
        attn = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1)
        return attn @ V
'''),
    ("`self.W_K = self.W_Q` on its own line", '''\
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, d_model=32, d_k=16):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_k)
        self.W_K = self.W_Q  # <-
        self.W_V = nn.Linear(d_model, d_k)
        self.d_k = d_k

    def forward(self, x):
        Q, K, V = self.W_Q(x), self.W_K(x), self.W_V(x)
        return F.softmax(Q @ K.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1) @ V
'''),
    ("copy-paste in forward: K = self.W_Q(x)", '''\
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
        B, T, C = x.shape
        Q = self.W_Q(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_Q(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # <-
        V = self.W_V(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        attn = torch.softmax(Q @ K.transpose(-2, -1) / self.d_k ** 0.5, dim=-1)
        return (attn @ V).transpose(1, 2).reshape(B, T, C)
'''),
    ("one Linear bound to both q_proj and k_proj", '''\
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        proj = nn.Linear(d_model, d_model, bias=False)
        self.q_proj = proj
        self.k_proj = proj  # <-
        self.v_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.n_heads, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, C)
'''),
    ("Hugging Face: self.key = self.query", '''\
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
        self.key = self.query  # <-
        self.value = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        B, T, C = hidden_states.shape
        q, k, v = (m(hidden_states).view(B, T, self.h, self.head_size).permute(0, 2, 1, 3) for m in (self.query, self.key, self.value))
        probs = nn.functional.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size), dim=-1)
        return torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, C)
'''),
    ("Hugging Face Llama: keys from q_proj, then RoPE with cos / sin passed in", '''\
import torch
from torch import nn


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class LlamaAttention(nn.Module):
    def __init__(self, hidden_size=64, num_heads=4):
        super().__init__()
        self.head_dim = hidden_size // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states, position_embeddings):
        hidden_shape = (*hidden_states.shape[:-1], -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.q_proj(hidden_states)  # <-
        key_states = key_states.view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        weights = weights.softmax(dim=-1)
        return torch.matmul(weights, value_states).transpose(1, 2).reshape(*hidden_states.shape[:-1], -1)
'''),
    ("Phi-3: fused qkv_proj, the keys sliced from the query's range, then RoPE", '''\
import torch
from torch import nn


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Phi3Attention(nn.Module):
    def __init__(self, hidden_size=64, num_heads=4):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, hidden_size // num_heads
        self.qkv_proj = nn.Linear(hidden_size, 3 * hidden_size, bias=False)

    def forward(self, hidden_states, cos, sin):
        b, t, _ = hidden_states.shape
        qkv = self.qkv_proj(hidden_states)
        query_pos = self.num_heads * self.head_dim
        query_states = qkv[..., :query_pos]
        key_states = qkv[..., :query_pos]  # <-
        value_states = qkv[..., 2 * query_pos :]
        query_states = query_states.view(b, t, -1, self.head_dim).transpose(1, 2)
        key_states = key_states.view(b, t, -1, self.head_dim).transpose(1, 2)
        value_states = value_states.view(b, t, -1, self.head_dim).transpose(1, 2)
        query_states = query_states * cos + rotate_half(query_states) * sin
        key_states = key_states * cos + rotate_half(key_states) * sin
        weights = (query_states @ key_states.transpose(-2, -1) * self.head_dim ** -0.5).softmax(dim=-1)
        return (weights @ value_states).transpose(1, 2).reshape(b, t, -1)
'''),
    ("functional F.linear with the query weight for the keys, `from torch.nn import functional as G`", '''\
import math

import torch
from torch import nn
from torch.nn import functional as G


class LowLevelAttention(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.w_q = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.w_k = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.w_v = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))

    def forward(self, x):
        q = G.linear(x, self.w_q)
        k = G.linear(x, self.w_q)  # <-
        v = G.linear(x, self.w_v)
        return G.softmax(q @ k.transpose(-2, -1) / math.sqrt(x.size(-1)), dim=-1) @ v
'''),
    ("einsum projections, `import torch as th`, keys from w_q", '''\
import torch as th
from torch import nn


class EinsumAttention(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.w_q = nn.Parameter(th.randn(dim, heads, dim // heads) * dim ** -0.5)
        self.w_k = nn.Parameter(th.randn(dim, heads, dim // heads) * dim ** -0.5)
        self.w_v = nn.Parameter(th.randn(dim, heads, dim // heads) * dim ** -0.5)

    def forward(self, x):
        q = th.einsum("bnd,dhe->bhne", x, self.w_q)
        k = th.einsum("bnd,dhe->bhne", x, self.w_q)  # <-
        v = th.einsum("bnd,dhe->bhne", x, self.w_v)
        attn = (th.einsum("bhie,bhje->bhij", q, k) * q.shape[-1] ** -0.5).softmax(dim=-1)
        return th.einsum("bhij,bhje->bihe", attn, v).flatten(2)
'''),
]

VALID = [
    ("seed 1: three independent Linears", '''\
import math

import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, d_model=32, d_k=16):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_k)
        self.W_K = nn.Linear(d_model, d_k)
        self.W_V = nn.Linear(d_model, d_k)
        self.d_k = d_k

    def forward(self, x):
        Q, K, V = self.W_Q(x), self.W_K(x), self.W_V(x)
        return F.softmax(Q @ K.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1) @ V
'''),
    ("Hugging Face Llama: q_proj and k_proj, then RoPE with cos / sin passed in", '''\
import torch
from torch import nn


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class LlamaAttention(nn.Module):
    def __init__(self, hidden_size=64, num_heads=4):
        super().__init__()
        self.head_dim = hidden_size // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states, position_embeddings):
        hidden_shape = (*hidden_states.shape[:-1], -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        weights = weights.softmax(dim=-1)
        return torch.matmul(weights, value_states).transpose(1, 2).reshape(*hidden_states.shape[:-1], -1)
'''),
    ("Phi-3: fused qkv_proj sliced along its features into q, k, v, then RoPE", '''\
import torch
from torch import nn


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Phi3Attention(nn.Module):
    def __init__(self, hidden_size=64, num_heads=4):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, hidden_size // num_heads
        self.qkv_proj = nn.Linear(hidden_size, 3 * hidden_size, bias=False)

    def forward(self, hidden_states, cos, sin):
        b, t, _ = hidden_states.shape
        qkv = self.qkv_proj(hidden_states)
        query_pos = self.num_heads * self.head_dim
        query_states = qkv[..., :query_pos]
        key_states = qkv[..., query_pos : 2 * query_pos]
        value_states = qkv[..., 2 * query_pos :]
        query_states = query_states.view(b, t, -1, self.head_dim).transpose(1, 2)
        key_states = key_states.view(b, t, -1, self.head_dim).transpose(1, 2)
        value_states = value_states.view(b, t, -1, self.head_dim).transpose(1, 2)
        query_states = query_states * cos + rotate_half(query_states) * sin
        key_states = key_states * cos + rotate_half(key_states) * sin
        weights = (query_states @ key_states.transpose(-2, -1) * self.head_dim ** -0.5).softmax(dim=-1)
        return (weights @ value_states).transpose(1, 2).reshape(b, t, -1)
'''),
    ("nanoGPT fused c_attn split into q, k, v", '''\
import torch.nn as nn
import torch.nn.functional as F


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
        y = F.scaled_dot_product_attention(q, k, v)
        return y.transpose(1, 2).contiguous().view(B, T, C)
'''),
    ("tied input and output embeddings are intended weight sharing", '''\
import torch
import torch.nn as nn


class TiedLM(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(max_len, d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        return self.lm_head(x)
'''),
    ("key initialised as a deep copy of the query projection", '''\
import copy
import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = copy.deepcopy(self.W_Q)
        self.W_V = nn.Linear(d_model, d_model)

    def forward(self, x):
        scores = self.W_Q(x) @ self.W_K(x).transpose(-2, -1) / math.sqrt(x.size(-1))
        return torch.softmax(scores, dim=-1) @ self.W_V(x)
'''),
    ("one attention block reused across layers (ALBERT-style sharing)", '''\
from torch import nn


class SharedEncoder(nn.Module):
    def __init__(self, d_model=32, n_heads=4, n_layers=3):
        super().__init__()
        self.block = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.n_layers = n_layers

    def forward(self, x):
        for _ in range(self.n_layers):
            x = self.block(x)
        return x
'''),
    ("multi-query attention: one shared key/value head, separate query heads", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.kv_proj = nn.Linear(d_model, 2 * self.head_dim)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k, v = self.kv_proj(x).unsqueeze(1).split(self.head_dim, dim=-1)
        y = F.scaled_dot_product_attention(q, k.expand_as(q), v.expand_as(q))
        return y.transpose(1, 2).reshape(B, T, C)
'''),
    ("same encoder applied to both inputs of a siamese model", '''\
import torch.nn.functional as F
from torch import nn


class Siamese(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d_model, d_model), nn.ReLU(), nn.Linear(d_model, d_model))

    def forward(self, a, b):
        return F.cosine_similarity(self.encoder(a), self.encoder(b), dim=-1)
'''),
]
