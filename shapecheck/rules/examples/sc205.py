"""SC205 causal-mask-diagonal: rule examples.

Marker (``# <-``): the ``triu`` / ``tril`` call that builds the mask (where ``diagonal=`` is written or
missing), since that is where the fix ``diagonal=1`` goes. The blocked set includes the diagonal, so
the first query row is fully masked: softmax of all ``-inf`` is NaN.
"""

INVALID = [
    ("seed 2: triu(ones, diagonal=0) as the blocked set", '''\
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model=64, n_head=4, max_len=32):
        super().__init__()
        self.n_head, self.d_k = n_head, d_model // n_head
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        mask = torch.triu(torch.ones(max_len, max_len), diagonal=0).bool()  # <-
        self.register_buffer("mask", mask)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_QKV(x).reshape(B, T, 3, self.n_head, self.d_k).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k ** 0.5)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        attn = scores.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
'''),
    ("nn.MultiheadAttention given triu with the default diagonal", '''\
import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        T = x.size(1)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device))  # <-
        y, _ = self.self_attn(x, x, x, attn_mask=future)
        return self.norm(x + y)
'''),
    ("Tensor.triu() method form on a registered buffer", '''\
import math

import torch
from torch import nn
from torch.nn import functional as G


class MaskedAttention(nn.Module):
    def __init__(self, d_model=32, max_len=16):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("blocked", torch.ones(max_len, max_len).triu().bool())  # <-

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(self.blocked[:T, :T], float("-inf"))
        return G.softmax(scores, dim=-1) @ v
'''),
    ("keep-mask tril(diagonal=-1) with masked_fill(mask == 0, -inf)", '''\
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
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len), diagonal=-1))  # <-

    def forward(self, x):
        T = x.size(1)
        Q, K, V = self.W_Q(x), self.W_K(x), self.W_V(x)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(x.size(-1))
        scores = scores.masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        return F.softmax(scores, dim=-1) @ V
'''),
    ("einsum, `import torch as th`, where(blocked, -inf, sim) with triu(.., 0)", '''\
import torch as th
from torch import nn


class EinsumCausalAttention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = th.einsum("bihd,bjhd->bhij", q, k) * self.dim_head ** -0.5
        blocked = th.triu(th.ones(n, n, dtype=th.bool, device=x.device), 0)  # <-
        sim = th.where(blocked, float("-inf"), sim)
        return th.einsum("bhij,bjhd->bihd", sim.softmax(dim=-1), v).reshape(b, n, d)
'''),
    ("additive float mask: full(-inf).triu() keeps -inf on the diagonal", '''\
import math

import torch
from torch import nn


class CausalHead(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)

    def forward(self, x):
        T = x.size(1)
        bias = torch.full((T, T), float("-inf"), device=x.device).triu()  # <-
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.size(-1)) + bias
        return torch.softmax(scores, dim=-1) @ self.v(x)
'''),
    ("SDPA allowed set tril(-1): the diagonal is not allowed", '''\
import torch
import torch.nn.functional as F
from torch import nn


class FlashCausalAttention(nn.Module):
    def __init__(self, dim=64, heads=8):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        allowed = torch.ones(n, n, dtype=torch.bool, device=x.device).tril(-1)  # <-
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        return out.transpose(1, 2).reshape(b, n, d)
'''),
    ("SDPA given ~triu(ones): the negated blocked set still blocks the diagonal", '''\
import torch
from torch import nn


class CausalSdpa(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device))  # <-
        y = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=~future)
        return y.transpose(1, 2).reshape(B, T, C)
'''),
]

VALID = [
    ("seed 2: triu(ones, diagonal=1).bool()", '''\
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model=64, n_head=4, max_len=32):
        super().__init__()
        self.n_head, self.d_k = n_head, d_model // n_head
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        mask = torch.triu(torch.ones(max_len, max_len), diagonal=1).bool()
        self.register_buffer("mask", mask)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_QKV(x).reshape(B, T, 3, self.n_head, self.d_k).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k ** 0.5)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        attn = scores.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
'''),
    ("keep-mask tril() (diagonal kept) with masked_fill(mask == 0, -inf)", '''\
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
        return F.softmax(scores, dim=-1) @ V
'''),
    ("nn.MultiheadAttention with triu(.., diagonal=1)", '''\
import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x):
        T = x.size(1)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        y, _ = self.self_attn(x, x, x, attn_mask=future)
        return y
'''),
    ("additive float mask: full(-inf).triu(1)", '''\
import math

import torch
from torch import nn


class CausalHead(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)

    def forward(self, x):
        T = x.size(1)
        bias = torch.full((T, T), float("-inf"), device=x.device).triu(1)
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.size(-1)) + bias
        return torch.softmax(scores, dim=-1) @ self.v(x)
'''),
    ("KV cache: (T, S) mask with diagonal=S - T + 1", '''\
import math

import torch
from torch import nn


class CachedAttention(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)

    def forward(self, x, past):
        T, S = x.size(1), past.size(1) + x.size(1)
        k, v = self.kv(torch.cat([past, x], dim=1)).chunk(2, dim=-1)
        blocked = torch.triu(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=S - T + 1)
        scores = self.q(x) @ k.transpose(-2, -1) / math.sqrt(x.size(-1))
        return torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1) @ v
'''),
    ("tril(ones) as an averaging matrix, not a mask", '''\
import torch
from torch import nn


class PrefixMean(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        T = x.size(1)
        wei = torch.tril(torch.ones(T, T, device=x.device))
        wei = wei / wei.sum(dim=1, keepdim=True)
        return wei @ self.proj(x)
'''),
    ("`from torch import triu as upper` with diagonal=1", '''\
import math

import torch
from torch import nn, triu as upper


class CausalHead(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        blocked = upper(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(blocked, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v
'''),
    ("most similar earlier token (argmax, no softmax): the diagonal is excluded on purpose", '''\
import torch
from torch import nn


class PreviousTokenMatcher(nn.Module):
    """For each token, the most similar earlier token (itself excluded): a copy pointer, not attention."""

    def __init__(self, d_model=32):
        super().__init__()
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)

    def forward(self, x):
        T = x.size(1)
        sim = self.query(x) @ self.key(x).transpose(-2, -1)
        not_earlier = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device))
        return sim.masked_fill(not_earlier, float("-inf")).argmax(dim=-1)
'''),
]

#: The whole example after `shapecheck lint --fix`, for the INVALID examples the rule can fix.
FIXED = {
    'seed 2: triu(ones, diagonal=0) as the blocked set': '''\
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model=64, n_head=4, max_len=32):
        super().__init__()
        self.n_head, self.d_k = n_head, d_model // n_head
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        mask = torch.triu(torch.ones(max_len, max_len), diagonal=1).bool()  # <-
        self.register_buffer("mask", mask)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_QKV(x).reshape(B, T, 3, self.n_head, self.d_k).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k ** 0.5)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        attn = scores.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
''',
    'nn.MultiheadAttention given triu with the default diagonal': '''\
import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        T = x.size(1)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)  # <-
        y, _ = self.self_attn(x, x, x, attn_mask=future)
        return self.norm(x + y)
''',
    'Tensor.triu() method form on a registered buffer': '''\
import math

import torch
from torch import nn
from torch.nn import functional as G


class MaskedAttention(nn.Module):
    def __init__(self, d_model=32, max_len=16):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("blocked", torch.ones(max_len, max_len).triu(diagonal=1).bool())  # <-

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(self.blocked[:T, :T], float("-inf"))
        return G.softmax(scores, dim=-1) @ v
''',
    'einsum, `import torch as th`, where(blocked, -inf, sim) with triu(.., 0)': '''\
import torch as th
from torch import nn


class EinsumCausalAttention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = th.einsum("bihd,bjhd->bhij", q, k) * self.dim_head ** -0.5
        blocked = th.triu(th.ones(n, n, dtype=th.bool, device=x.device), 1)  # <-
        sim = th.where(blocked, float("-inf"), sim)
        return th.einsum("bhij,bjhd->bihd", sim.softmax(dim=-1), v).reshape(b, n, d)
''',
    'additive float mask: full(-inf).triu() keeps -inf on the diagonal': '''\
import math

import torch
from torch import nn


class CausalHead(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)

    def forward(self, x):
        T = x.size(1)
        bias = torch.full((T, T), float("-inf"), device=x.device).triu(diagonal=1)  # <-
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.size(-1)) + bias
        return torch.softmax(scores, dim=-1) @ self.v(x)
''',
}
