"""SC103 softmax-wrong-dim: rule examples.

Marker (``# <-``): the line where the softmax is applied to the attention scores (for an
``nn.Softmax(dim=...)`` module, the line that calls it, not its constructor).
"""

INVALID = [
    ("seed style, F.softmax(scores, dim=-2)", '''\
import math

import torch
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
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)
        attn = F.softmax(scores, dim=-2)  # <-
        return attn @ V
'''),
    ("(B, h, T, T) scores, Tensor.softmax(dim=1) normalises over heads", '''\
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_QKV = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_QKV(x).reshape(B, T, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k ** 0.5)
        attn = scores.softmax(dim=1)  # <-
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
'''),
    ("nn.Softmax(dim=2) module applied to (B, h, T, T) scores", '''\
import math

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.softmax = nn.Softmax(dim=2)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.to_q(x).view(b, n, self.heads, self.dim_head).transpose(1, 2)
        k = self.to_k(x).view(b, n, self.heads, self.dim_head).transpose(1, 2)
        dots = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dim_head)
        return self.softmax(dots)  # <-
'''),
    ("einsum, `import torch as th`, positional dim 2", '''\
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
        sim = th.einsum("bihd,bjhd->bhij", q, k) * self.scale
        attn = th.softmax(sim, 2)  # <-
        return th.einsum("bhij,bjhd->bihd", attn, v).reshape(b, n, d)
'''),
    ("einsum with keys first (bhji), softmax(dim=-1) runs over queries", '''\
import torch
from torch import nn


class KeyMajorAttention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = torch.einsum("bjhd,bihd->bhji", k, q) * self.dim_head ** -0.5
        attn = sim.softmax(dim=-1)  # <-
        return torch.einsum("bhji,bjhd->bihd", attn, v).reshape(b, n, d)
'''),
    ("Hugging Face, softmax(attention_scores, dim=0) over the batch", '''\
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

    def forward(self, hidden_states):
        B, T, _ = hidden_states.shape
        q = self.query(hidden_states).view(B, T, self.h, self.head_size).permute(0, 2, 1, 3)
        k = self.key(hidden_states).view(B, T, self.h, self.head_size).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        return nn.functional.softmax(scores, dim=0)  # <-
'''),
    ("F.softmax with no dim on 4-D scores (implicit dim=1, the heads)", '''\
import torch
import torch.nn as nn
from torch.nn import functional as G


class MHA(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.q(x).reshape(B, T, self.n_heads, self.d_k).transpose(1, 2)
        k = self.k(x).reshape(B, T, self.n_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) * self.d_k ** -0.5
        return G.softmax(scores)  # <-
'''),
    ("3-D keys-first scores (B, S, T), F.softmax with no dim (implicit dim 0, the batch)", '''\
import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


def attend(q: Float[Tensor, "b t d"], k: Float[Tensor, "b s d"], v: Float[Tensor, "b s e"]) -> Float[Tensor, "b t e"]:
    scores = torch.einsum("bsd,btd->bst", k, q) / q.shape[-1] ** 0.5
    attn = F.softmax(scores)  # <-
    return torch.einsum("bst,bse->bte", attn, v)
'''),
]

VALID = [
    ("seed 2 SelfAttention, scores.softmax(dim=-1)", '''\
import math

import torch.nn as nn


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
        attn = scores.softmax(dim=-1)
        return attn @ V, attn
'''),
    ("4-D scores, softmax(dim=3) is the key dim", '''\
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_QKV = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_QKV(x).reshape(B, T, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k ** 0.5)
        attn = torch.softmax(scores, dim=3)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
'''),
    ("einsum with keys first (bhji), softmax over dim=-2 is the key dim", '''\
import torch
from torch import nn


class KeyMajorAttention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = torch.einsum("bjhd,bihd->bhji", k, q) * self.dim_head ** -0.5
        attn = sim.softmax(dim=-2)
        return torch.einsum("bhji,bjhd->bihd", attn, v).reshape(b, n, d)
'''),
    ("nn.Softmax(dim=-1) module; a local named `softmax` that is that module", '''\
import math

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.norm_scores = nn.Softmax(dim=-1)

    def forward(self, x):
        softmax = self.norm_scores
        dots = torch.matmul(self.to_q(x), self.to_k(x).transpose(-1, -2)) / math.sqrt(x.size(-1))
        return softmax(dots)
'''),
    ("classifier probabilities over dim=1 of (B, C) logits", '''\
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, d_model=32, n_classes=5):
        super().__init__()
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, x):
        pooled = x.mean(dim=1)
        return F.softmax(self.head(pooled), dim=1)
'''),
    ("attention pooling: softmax over time of (B, T, 1) scores", '''\
import torch
from torch import nn


class AttentionPooling(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.score = nn.Linear(d_model, 1)

    def forward(self, x):
        w = torch.softmax(self.score(x), dim=1)
        return (w * x).sum(dim=1)
'''),
    ("3-D single-head scores (B, T, S), softmax(dim=2)", '''\
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model=32, d_mem=48):
        super().__init__()
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_mem, d_model)
        self.v = nn.Linear(d_mem, d_model)

    def forward(self, x, memory):
        scores = torch.bmm(self.q(x), self.k(memory).transpose(1, 2)) / math.sqrt(x.size(-1))
        return torch.bmm(torch.softmax(scores, dim=2), self.v(memory))
'''),
]
