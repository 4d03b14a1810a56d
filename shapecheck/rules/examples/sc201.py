"""SC201 mask-dtype: rule examples.

Marker (``# <-``): the call that consumes the 0/1 float or integer mask where a bool mask is
required: the ``masked_fill`` or ``torch.where`` call, or the ``nn.MultiheadAttention`` /
``scaled_dot_product_attention`` call given it as ``attn_mask`` / ``key_padding_mask``.
"""

INVALID = [
    ("seed 2: triu(ones) buffer without .bool(), masked_fill crashes", '''\
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model=64, n_head=4, max_len=32):
        super().__init__()
        self.n_head, self.d_k = n_head, d_model // n_head
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("mask", torch.triu(torch.ones(max_len, max_len), diagonal=1))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_QKV(x).reshape(B, T, 3, self.n_head, self.d_k).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k ** 0.5)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))  # <-
        attn = scores.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
'''),
    ("nanoGPT: float `1 - tril buffer` given to masked_fill", '''\
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
        att = att.masked_fill(1 - self.bias[:, :, :T, :T], float("-inf"))  # <-
        att = F.softmax(att, dim=-1)
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)
'''),
    ("integer tril mask (dtype=torch.long), `1 - mask` to masked_fill", '''\
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
        mask = torch.tril(torch.ones(T, T, dtype=torch.long))
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.size(-1))
        scores = scores.masked_fill(1 - mask, float("-inf"))  # <-
        return torch.softmax(scores, dim=-1) @ self.v(x)
'''),
    ("SDPA given a 0/1 float tril: added to the scores, masks nothing", '''\
import torch
import torch.nn as nn
from torch.nn import functional as G


class CausalAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        allowed = torch.tril(torch.ones(T, T, device=x.device))
        y = G.scaled_dot_product_attention(q, k, v, attn_mask=allowed)  # <-
        return y.transpose(1, 2).reshape(B, T, C)
'''),
    ("nn.MultiheadAttention given a 0/1 float triu as attn_mask", '''\
import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        T = x.size(1)
        future = torch.triu(torch.ones(T, T, device=x.device), diagonal=1)
        y, _ = self.self_attn(x, x, x, attn_mask=future)  # <-
        return self.norm(x + y)
'''),
    ("integer key_padding_mask, `import torch as th`", '''\
import torch as th
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, n_heads=4, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(64, d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, ids):
        x = self.embed(ids) + self.pos(th.arange(ids.size(1), device=ids.device))
        pad = (ids == self.pad_id).long()
        y, _ = self.attn(x, x, x, key_padding_mask=pad)  # <-
        return y
'''),
    ("einsum with a uint8 mask to masked_fill", '''\
import torch
from torch import nn


class EinsumCausalAttention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = torch.einsum("bihd,bjhd->bhij", q, k) * self.dim_head ** -0.5
        future = torch.ones(n, n, dtype=torch.uint8, device=x.device).triu(1)
        sim = sim.masked_fill(future, float("-inf"))  # <-
        return torch.einsum("bhij,bjhd->bihd", sim.softmax(dim=-1), v).reshape(b, n, d)
'''),
    ('functional reference attention: a float 0/1 tril as the condition of torch.where', '''\
import torch


def reference_attention(q, k, v, causal=True):
    b, h, n, d = q.shape
    sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * d ** -0.5
    if causal:
        keep = torch.ones((n, n), device=q.device, dtype=torch.float32).tril()
        sim = torch.where(keep, sim, float("-inf"))  # <-
    return torch.einsum("b h i j, b h j d -> b h i d", sim.softmax(dim=-1), v)
'''),
    ("SDPA given an integer padding mask, .long() (PyTorch rejects it)", '''\
import torch
import torch.nn.functional as F
from torch import nn


class PaddedEncoderLayer(nn.Module):
    def __init__(self, vocab=1000, dim=64, heads=4, pad_id=0):
        super().__init__()
        self.heads, self.pad_id = heads, pad_id
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(128, dim)
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, ids):
        b, n = ids.shape
        x = self.embed(ids) + self.pos(torch.arange(n, device=ids.device))
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        keep = (ids != self.pad_id).long()[:, None, None, :]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)  # <-
        return out.transpose(1, 2).reshape(b, n, -1)
'''),
    ("nn.MultiheadAttention given integer attn_mask and key_padding_mask: one finding per call", '''\
import torch
from torch import nn


class DecoderLayer(nn.Module):
    def __init__(self, d_model=32, n_heads=4, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, ids):
        T = ids.size(1)
        future = torch.ones(T, T, dtype=torch.int64, device=ids.device).triu(1)
        padding = ids.eq(self.pad_id).int()
        y, _ = self.attn(
            x, x, x,
            attn_mask=future,  # <-
            key_padding_mask=padding,
        )
        return self.norm(x + y)
'''),
    ("nn.MultiheadAttention given a float triu(ones) with the default diagonal", '''\
import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x):
        T = x.size(1)
        upper = torch.triu(torch.ones(T, T, device=x.device))
        y, _ = self.self_attn(x, x, x, attn_mask=upper)  # <-
        return x + y
'''),
]

VALID = [
    ("seed 2: triu(ones, diagonal=1).bool() buffer", '''\
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
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        attn = scores.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
'''),
    ("nanoGPT: float buffer compared with == 0 gives a bool mask", '''\
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
    ("nn.MultiheadAttention with a (T, T) bool mask", '''\
import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        T = x.size(1)
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        y, _ = self.self_attn(x, x, x, attn_mask=future)
        return self.norm(x + y)
'''),
    ("nn.MultiheadAttention with an additive float -inf mask", '''\
import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x):
        T = x.size(1)
        future = torch.full((T, T), float("-inf"), device=x.device).triu(1)
        y, _ = self.self_attn(x, x, x, attn_mask=future)
        return y
'''),
    ("SDPA given a bool tril (True = attend)", '''\
import torch
import torch.nn as nn
from torch.nn import functional as G


class CausalAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        allowed = torch.tril(torch.ones(T, T, device=x.device)).bool()
        y = G.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        return y.transpose(1, 2).reshape(B, T, C)
'''),
    ("Hugging Face: 0/1 attention_mask turned into an additive finfo.min bias", '''\
import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden_size=32):
        super().__init__()
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, attention_mask):
        q, k = self.query(hidden_states), self.key(hidden_states)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
        dtype = scores.dtype
        extended = (1.0 - attention_mask[:, None, :].to(dtype)) * torch.finfo(dtype).min
        return nn.functional.softmax(scores + extended, dim=-1)
'''),
    ("bool key_padding_mask from a comparison, `import torch as th`", '''\
import torch as th
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, n_heads=4, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(64, d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, ids):
        x = self.embed(ids) + self.pos(th.arange(ids.size(1), device=ids.device))
        y, _ = self.attn(x, x, x, key_padding_mask=ids == self.pad_id)
        return y
'''),
    ('functional reference attention: a bool tril as the condition of torch.where', '''\
import torch


def reference_attention(q, k, v, causal=True):
    b, h, n, d = q.shape
    sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * d ** -0.5
    if causal:
        keep = torch.ones((n, n), device=q.device, dtype=torch.bool).tril()
        sim = torch.where(keep, sim, float("-inf"))
    return torch.einsum("b h i j, b h j d -> b h i d", sim.softmax(dim=-1), v)
'''),
    ("SDPA given an additive float padding bias (no triangle): float masks are added on purpose", '''\
import torch
from torch import nn
from torch.nn import functional as F


class BertSdpaSelfAttention(nn.Module):
    def __init__(self, hidden=64, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)

    def forward(self, hidden_states, attention_mask):
        b, t, c = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        bias = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(hidden_states.dtype).min
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return out.transpose(1, 2).reshape(b, t, c)
'''),
    ('LongT5 style: the method form x.where(cond, y) of an integer tensor, and a converted triangle', '''\
import torch


def block_ids_for(attention_mask, block_len=4):
    """Hugging Face LongT5 style: ``x.where(cond, other)`` takes an integer receiver, a bool condition."""
    block_ends = (torch.arange(attention_mask.shape[1]) % block_len) == block_len - 1
    block_ids = torch.cumsum(block_ends.long(), dim=-1) - 1
    block_ids = block_ids.where(block_ids >= 0, torch.zeros_like(block_ids))
    causal = torch.ones(block_len, block_len).tril()
    return block_ids, torch.where(causal.bool(), 0.0, float("-inf"))
'''),
]

#: The whole example after `shapecheck lint --fix`, for the INVALID examples the rule can fix.
FIXED = {
    'functional reference attention: a float 0/1 tril as the condition of torch.where': '''\
import torch


def reference_attention(q, k, v, causal=True):
    b, h, n, d = q.shape
    sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * d ** -0.5
    if causal:
        keep = torch.ones((n, n), device=q.device, dtype=torch.float32).tril()
        sim = torch.where(keep.bool(), sim, float("-inf"))  # <-
    return torch.einsum("b h i j, b h j d -> b h i d", sim.softmax(dim=-1), v)
''',
    'seed 2: triu(ones) buffer without .bool(), masked_fill crashes': '''\
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model=64, n_head=4, max_len=32):
        super().__init__()
        self.n_head, self.d_k = n_head, d_model // n_head
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("mask", torch.triu(torch.ones(max_len, max_len), diagonal=1))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_QKV(x).reshape(B, T, 3, self.n_head, self.d_k).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k ** 0.5)
        scores = scores.masked_fill(self.mask[:T, :T].bool(), float("-inf"))  # <-
        attn = scores.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
''',
    'nanoGPT: float `1 - tril buffer` given to masked_fill': '''\
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
        att = att.masked_fill((1 - self.bias[:, :, :T, :T]).bool(), float("-inf"))  # <-
        att = F.softmax(att, dim=-1)
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)
''',
    'integer tril mask (dtype=torch.long), `1 - mask` to masked_fill': '''\
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
        mask = torch.tril(torch.ones(T, T, dtype=torch.long))
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.size(-1))
        scores = scores.masked_fill((1 - mask).bool(), float("-inf"))  # <-
        return torch.softmax(scores, dim=-1) @ self.v(x)
''',
    'einsum with a uint8 mask to masked_fill': '''\
import torch
from torch import nn


class EinsumCausalAttention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = torch.einsum("bihd,bjhd->bhij", q, k) * self.dim_head ** -0.5
        future = torch.ones(n, n, dtype=torch.uint8, device=x.device).triu(1)
        sim = sim.masked_fill(future.bool(), float("-inf"))  # <-
        return torch.einsum("bhij,bjhd->bihd", sim.softmax(dim=-1), v).reshape(b, n, d)
''',
}
