"""SC504 wrong-key-transpose: rule examples.

Marker (``# <-``): the expression that reorders the key (``k.T``, ``k.t()``, ``k.transpose(1, 2)``
of a 4-D key ...) so that ``q @ k'`` does not contract the key's feature axis.
"""

_SEED_BUG = '''\
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        Q = self.W_Q(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(1, 2)) / (self.d_k ** 0.5)  # <-
        return torch.softmax(scores, dim=-1)
'''

_SINGLE_HEAD_BUG = '''\
import math

import torch
import torch.nn as nn


class SingleHead(nn.Module):
    def __init__(self, d_model=64):
        super().__init__()
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, D = x.shape
        q, k = self.W_q(x), self.W_k(x)
        scores = q @ k.T / math.sqrt(D)  # <-
        return scores.softmax(dim=-1)
'''

_ALIASED_BUG = '''\
import torch as th
from torch import nn as tnn


class Attn(tnn.Module):
    def __init__(self, width=96, n_heads=6):
        super().__init__()
        self.n_heads = n_heads
        self.q = tnn.Linear(width, width)
        self.k = tnn.Linear(width, width)

    def forward(self, x):
        bsz, seqlen, width = x.shape
        q = self.q(x).view(bsz, seqlen, self.n_heads, width // self.n_heads).transpose(1, 2)
        k = self.k(x).view(bsz, seqlen, self.n_heads, width // self.n_heads).transpose(1, 2)
        return th.matmul(q, th.transpose(k, 1, 2)).softmax(-1)  # <-
'''

INVALID = [
    ("seed 1: K.transpose(1, 2) of a (b, h, t, d_k) key", _SEED_BUG),
    ("single head: k.T of a batched (B, T, D) key", _SINGLE_HEAD_BUG),
    ("nanoGPT: k.transpose(1, 2) swaps heads and time", '''\
import math

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
        att = (q @ k.transpose(1, 2)) * (1.0 / math.sqrt(k.size(-1)))  # <-
        return F.softmax(att, dim=-1)
'''),
    ("Hugging Face: key_layer.permute(0, 2, 1, 3) instead of transpose(-1, -2)", '''\
import math

import torch
from torch import nn


class BertSelfAttention(nn.Module):
    def __init__(self, hidden_size=64, num_attention_heads=4):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        scores = torch.matmul(query_layer, key_layer.permute(0, 2, 1, 3))  # <-
        return scores / math.sqrt(self.attention_head_size)


BertSelfAttention()(torch.randn(2, 10, 64))
'''),
    ("fused (b * h, t, d) layout: bmm(q, k.transpose(0, 1))", '''\
import math

import torch
import torch.nn as nn


class FusedHeads(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.h, self.d = n_heads, d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, c = x.shape
        q = self.q(x).view(b, t, self.h, self.d).transpose(1, 2).reshape(b * self.h, t, self.d)
        k = self.k(x).view(b, t, self.h, self.d).transpose(1, 2).reshape(b * self.h, t, self.d)
        w = torch.bmm(q, k.transpose(0, 1)) / math.sqrt(self.d)  # <-
        return w.softmax(dim=-1)
'''),
    ("functional: annotated (b, h, t, d) query and key, keys transposed with .T", '''\
import math

import torch
from jaxtyping import Float


def scores(q: Float[torch.Tensor, "b h t d"], k: Float[torch.Tensor, "b h t d"]) -> torch.Tensor:
    return torch.softmax(q @ k.T / math.sqrt(q.size(-1)), dim=-1)  # <-
'''),
    ("aliased imports: import torch as th; th.matmul(q, th.transpose(k, 1, 2))", _ALIASED_BUG),
]

FIXED = {
    "seed 1: K.transpose(1, 2) of a (b, h, t, d_k) key": _SEED_BUG.replace("K.transpose(1, 2))", "K.transpose(-2, -1))"),
    "single head: k.T of a batched (B, T, D) key": _SINGLE_HEAD_BUG.replace("q @ k.T /", "q @ k.transpose(-2, -1) /"),
    "aliased imports: import torch as th; th.matmul(q, th.transpose(k, 1, 2))": _ALIASED_BUG.replace(
        "th.transpose(k, 1, 2)", "th.transpose(k, -2, -1)"
    ),
}

VALID = [
    ("seed 1: K.transpose(-2, -1)", _SEED_BUG.replace("K.transpose(1, 2)) / (self.d_k ** 0.5)  # <-", "K.transpose(-2, -1)) / (self.d_k ** 0.5)")),
    ("single unbatched head: k.T of a (T, D) key is right", '''\
import math

import torch
import torch.nn as nn


class TinyHead(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)

    def forward(self, x):
        T, D = x.shape
        return torch.softmax(self.q(x) @ self.k(x).T / math.sqrt(D), dim=-1)
'''),
    ("batched single head: k.transpose(1, 2) of a (B, T, D) key swaps the last two", '''\
import math

import torch
import torch.nn as nn


class SingleHead(nn.Module):
    def __init__(self, d_model=64):
        super().__init__()
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, D = x.shape
        q, k = self.W_q(x), self.W_k(x)
        return torch.bmm(q, k.transpose(1, 2)).div(math.sqrt(D)).softmax(dim=-1)
'''),
    ("Hugging Face: keys kept (b, t, h, d) and permuted once to (b, h, d, t)", '''\
import math

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, hidden_size=64, heads=4):
        super().__init__()
        self.heads, self.head_dim = heads, hidden_size // heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states):
        b, t, _ = hidden_states.size()
        q = self.query(hidden_states).view(b, t, self.heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.key(hidden_states).view(b, t, self.heads, self.head_dim).permute(0, 2, 3, 1)
        return torch.matmul(q, k) / math.sqrt(self.head_dim)
'''),
    ("einsum: no transpose written at all", '''\
import torch
import torch.nn as nn


class EinsumAttention(nn.Module):
    def __init__(self, dim=64, heads=8):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q = self.to_q(x).view(b, n, self.heads, d // self.heads).transpose(1, 2)
        k = self.to_k(x).view(b, n, self.heads, d // self.heads).transpose(1, 2)
        return (torch.einsum("bhid,bhjd->bhij", q, k) * (d // self.heads) ** -0.5).softmax(dim=-1)
'''),
    ("probabilities times values transposed elsewhere (not a key)", '''\
import torch
import torch.nn.functional as F


def mix(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    b, h, t, d = q.shape
    w = F.softmax(q @ k.transpose(-2, -1) / d ** 0.5, dim=-1)
    return (w @ v).transpose(1, 2)
'''),
    ("aliased imports: th.matmul(q, k.mT)", '''\
import torch as th
from torch import nn as tnn


class Attn(tnn.Module):
    def __init__(self, width=96, n_heads=6):
        super().__init__()
        self.n_heads = n_heads
        self.q = tnn.Linear(width, width)
        self.k = tnn.Linear(width, width)

    def forward(self, x):
        bsz, seqlen, width = x.shape
        q = self.q(x).view(bsz, seqlen, self.n_heads, width // self.n_heads).transpose(1, 2)
        k = self.k(x).view(bsz, seqlen, self.n_heads, width // self.n_heads).transpose(1, 2)
        return (th.matmul(q, k.mT) * (width // self.n_heads) ** -0.5).softmax(-1)
'''),
    ("sigmoid attention weights (not softmax) times split-and-transposed values, seq len == head dim", '''\
import torch
import torch.nn as nn
from jaxtyping import Float


class SigmoidAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.h = n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)

    def forward(self, x: Float[torch.Tensor, "2 16 64"]):
        q = self.q(x).view(2, 16, self.h, 16).transpose(1, 2)
        k = self.k(x).view(2, 16, self.h, 16).transpose(1, 2)
        v = self.v(x).view(2, 16, self.h, 16).transpose(1, 2)
        weights = torch.sigmoid(q @ k.transpose(-2, -1) * 0.25)
        return weights @ v
'''),
]
