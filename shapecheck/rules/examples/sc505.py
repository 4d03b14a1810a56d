"""SC505 matmul-shape-mismatch: rule examples.

Marker (``# <-``): the ``@`` / ``matmul`` / ``bmm`` / ``einsum`` / ``F.linear`` / layer call whose
inner dims are known and differ. (A Linear fed straight from another Linear is SC406.)
"""

INVALID = [
    ("seed 1: 512-wide embeddings times a (768, 64) BERT-sized W_Q", '''\
import torch
import torch.nn as nn


class QueryProjection(nn.Module):
    def __init__(self, vocab_size=100, d_embed=512, d_k=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_embed)
        self.W_Q = nn.Parameter(torch.randn(768, d_k) * 0.02)

    def forward(self, ids):
        x = self.embed(ids)  # (B, T, 512)
        Q = x @ self.W_Q  # <-
        return Q
'''),
    ("torch.matmul(x, linear.weight) without the transpose", '''\
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, d_model=64, d_k=16):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_k, bias=False)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        h = self.norm(x)
        return torch.matmul(h, self.W_Q.weight)  # <-
'''),
    ("F.linear with a weight stored (in, out), `from torch.nn import functional as G`", '''\
import torch
from torch import nn
from torch.nn import functional as G


class Projection(nn.Module):
    def __init__(self, d_in=64, d_out=16):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_in, d_out) * d_in ** -0.5)
        self.norm = nn.LayerNorm(d_in)

    def forward(self, x):
        return G.linear(self.norm(x), self.weight)  # <-
'''),
    ("einsum: query heads of 16, key heads of 8", '''\
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4, key_dim=32):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, key_dim)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.to_q(x).view(b, n, self.heads, -1).transpose(1, 2)  # (b, h, n, 16)
        k = self.to_k(x).view(b, n, self.heads, -1).transpose(1, 2)  # (b, h, n, 8)
        sim = torch.einsum("bhid,bhjd->bhij", q, k)  # <-
        return (sim * q.shape[-1] ** -0.5).softmax(dim=-1)
'''),
    ("bmm of query (., 64) and keys projected to 32, `import torch as th`", '''\
import math

import torch as th
from torch import nn


class SingleHead(nn.Module):
    def __init__(self, d_model=48):
        super().__init__()
        self.q = nn.Linear(d_model, 64)
        self.k = nn.Linear(d_model, 32)
        self.v = nn.Linear(d_model, 32)

    def forward(self, x):
        scores = th.bmm(self.q(x), self.k(x).transpose(1, 2)) / math.sqrt(32)  # <-
        return th.bmm(th.softmax(scores, dim=-1), self.v(x))
'''),
    ("single head of d_k fed to a (d_model, d_model) output projection", '''\
import math

import torch
import torch.nn as nn


class SingleHeadAttention(nn.Module):
    def __init__(self, d_model=64, d_k=16):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_k)
        self.W_K = nn.Linear(d_model, d_k)
        self.W_V = nn.Linear(d_model, d_k)
        self.W_O = nn.Linear(d_model, d_model)
        self.d_k = d_k

    def forward(self, x):
        scores = self.W_Q(x) @ self.W_K(x).transpose(-2, -1) / math.sqrt(self.d_k)
        context = torch.softmax(scores, dim=-1) @ self.W_V(x)  # (B, T, d_k)
        return self.W_O(context)  # <-
'''),
    ("tied LM head: h @ wte.weight without .T", '''\
import torch
import torch.nn as nn


class TiedLM(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(max_len, d_model)
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, idx):
        h = self.ln_f(self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device)))
        return h @ self.wte.weight  # <-
'''),
]

VALID = [
    ("seed 1: (., d_model) @ (d_model, d_k)", '''\
import torch
import torch.nn as nn


class QueryProjection(nn.Module):
    def __init__(self, vocab_size=100, d_model=64, d_k=16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.W_Q = nn.Parameter(torch.randn(d_model, d_k) * 0.02)

    def forward(self, ids):
        x = self.embed(ids)
        return x @ self.W_Q
'''),
    ("torch.matmul(x, linear.weight.T)", '''\
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, d_model=64, d_k=16):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_k, bias=False)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        return torch.matmul(self.norm(x), self.W_Q.weight.T)
'''),
    ("tied LM head through F.linear(h, wte.weight)", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class TiedLM(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(max_len, d_model)
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, idx):
        h = self.ln_f(self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device)))
        return F.linear(h, self.wte.weight)
'''),
    ("einsum with matching head dims", '''\
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.to_q(x).view(b, n, self.heads, -1).transpose(1, 2)
        k = self.to_k(x).view(b, n, self.heads, -1).transpose(1, 2)
        sim = torch.einsum("bhid,bhjd->bhij", q, k)
        return (sim * q.shape[-1] ** -0.5).softmax(dim=-1)
'''),
    ("values of another width than queries/keys is fine", '''\
import math

import torch as th
from torch import nn


class SingleHead(nn.Module):
    def __init__(self, d_model=48, d_k=32, d_v=64):
        super().__init__()
        self.q = nn.Linear(d_model, d_k)
        self.k = nn.Linear(d_model, d_k)
        self.v = nn.Linear(d_model, d_v)

    def forward(self, x):
        scores = th.bmm(self.q(x), self.k(x).transpose(1, 2)) / math.sqrt(self.q.out_features)
        return th.bmm(th.softmax(scores, dim=-1), self.v(x))
'''),
    ("helper with unannotated arguments: shapes unknown, nothing to say", '''\
import torch
from torch import nn


def project(x, w):
    return x @ w


class Wrapper(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d_model, d_model))

    def forward(self, x):
        return project(x, self.w)
'''),
    ("(B, h, T, d) @ (d, d) per-head mixing matrix broadcasts", '''\
import torch
from torch import nn


class HeadMixer(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.hd = n_heads, d_model // n_heads
        self.proj = nn.Linear(d_model, d_model)
        self.mix = nn.Parameter(torch.eye(self.hd))

    def forward(self, x):
        B, T, C = x.shape
        h = self.proj(x).view(B, T, self.n_heads, self.hd).transpose(1, 2)
        return (h @ self.mix).transpose(1, 2).reshape(B, T, C)
'''),
]

#: INVALID examples the engine cannot see yet, with the reason. They are not run as INVALID;
#: tests/test_rule_examples.py checks that each is still missed (so a fix must move it back).
KNOWN_MISSES = {
    'bmm of query (., 64) and keys projected to 32, `import torch as th`': 'transpose(1, 2) of an unannotated input of unknown rank cannot be resolved before bmm fixes the rank',
    'single head of d_k fed to a (d_model, d_model) output projection': "the forward input is unannotated and of unknown rank, so the attention output's shape is unknown",
}
