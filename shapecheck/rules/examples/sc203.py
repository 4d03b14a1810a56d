"""SC203 mask-polarity: rule examples.

Marker (``# <-``): the call where the mask meets a consumer whose convention it contradicts: the
``masked_fill`` / ``where`` line (True = blocked for ``masked_fill(m, -inf)``), the
``scaled_dot_product_attention`` call (True = attend) or the ``nn.MultiheadAttention`` call
(True = blocked, for ``attn_mask`` and ``key_padding_mask``). The same mask is right for one consumer
and wrong for the other, so the squiggle goes where the two meet, not where the mask is built.
"""

INVALID = [
    ("seed 1 style: tril (the allowed set) given to masked_fill(m, -inf)", '''\
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
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)).bool())

    def forward(self, x):
        T = x.size(1)
        Q, K, V = self.W_Q(x), self.W_K(x), self.W_V(x)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(x.size(-1))
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))  # <-
        return F.softmax(scores, dim=-1) @ V
'''),
    ("nanoGPT: bias == 1 instead of bias == 0", '''\
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
        att = att.masked_fill(self.bias[:, :, :T, :T] == 1, float("-inf"))  # <-
        att = F.softmax(att, dim=-1)
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)
'''),
    ("MHA-convention triu(1) (True = blocked) given to SDPA (True = attend)", '''\
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
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        y = G.scaled_dot_product_attention(q, k, v, attn_mask=future)  # <-
        return y.transpose(1, 2).reshape(B, T, C)
'''),
    ("SDPA-convention tril (True = attend) given to nn.MultiheadAttention", '''\
import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        T = x.size(1)
        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        y, _ = self.self_attn(x, x, x, attn_mask=allowed)  # <-
        return self.norm(x + y)
'''),
    ("keep-mask (ids != pad) given as key_padding_mask (True = padding)", '''\
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, n_heads=4, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(64, d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, ids):
        x = self.embed(ids) + self.pos(torch.arange(ids.size(1), device=ids.device))
        keep = ids != self.pad_id
        y, _ = self.attn(x, x, x, key_padding_mask=keep)  # <-
        return y
'''),
    ("einsum, `import torch as th`, where(causal, -inf, sim) swaps the branches", '''\
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
        causal = th.ones(n, n, dtype=th.bool, device=x.device).tril()
        sim = th.where(causal, float("-inf"), sim)  # <-
        return th.einsum("bhij,bjhd->bihd", sim.softmax(dim=-1), v).reshape(b, n, d)
'''),
    ("functional helper: ~tril (the blocked set) given to SDPA", '''\
import torch
import torch.nn.functional as F
from torch import nn


def causal_attention(q, k, v):
    T = q.size(-2)
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    return F.scaled_dot_product_attention(q, k, v, attn_mask=~causal)  # <-


class Block(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        q, k, v = self.qkv(x).unsqueeze(1).chunk(3, dim=-1)
        return causal_attention(q, k, v).squeeze(1)
'''),
]

VALID = [
    ("seed 2: triu(1).bool() with masked_fill(m, -inf)", '''\
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
    ("nanoGPT: bias[:, :, :T, :T] == 0", '''\
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
    ("SDPA given a bool tril, `from torch.nn import functional as G`", '''\
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
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        y = G.scaled_dot_product_attention(q, k, v, attn_mask=causal)
        return y.transpose(1, 2).reshape(B, T, C)
'''),
    ("nn.MultiheadAttention: triu(1) mask and key_padding_mask = ids == pad", '''\
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, n_heads=4, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(64, d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, ids):
        T = ids.size(1)
        x = self.embed(ids) + self.pos(torch.arange(T, device=ids.device))
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=ids.device), diagonal=1)
        y, _ = self.attn(x, x, x, attn_mask=future, key_padding_mask=ids == self.pad_id)
        return y
'''),
    ("einsum: where(causal, sim, -inf), `import torch as th`", '''\
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
        causal = th.ones(n, n, dtype=th.bool, device=x.device).tril()
        sim = th.where(causal, sim, float("-inf"))
        return th.einsum("bhij,bjhd->bihd", sim.softmax(dim=-1), v).reshape(b, n, d)
'''),
    ("masked_fill(~causal, -inf) with causal = tril bool", '''\
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
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.size(-1))
        scores = scores.masked_fill(~causal, float("-inf"))
        return torch.softmax(scores, dim=-1) @ self.v(x)
'''),
    ("nn.Transformer.generate_square_subsequent_mask for nn.TransformerDecoderLayer", '''\
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)

    def forward(self, tgt, memory):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        return self.layer(tgt, memory, tgt_mask=tgt_mask)
'''),
]

#: INVALID examples the engine cannot see yet, with the reason. They are not run as INVALID;
#: tests/test_rule_examples.py checks that each is still missed (so a fix must move it back).
KNOWN_MISSES = {
    'keep-mask (ids != pad) given as key_padding_mask (True = padding)': 'the engine does not model padding masks built by comparing token ids (`ids != pad_id`) yet',
}
