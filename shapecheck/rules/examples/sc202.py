"""SC202 mask-shape: rule examples.

Marker (``# <-``): the call where the mask meets the scores it cannot broadcast against: the
``masked_fill`` / ``where`` / ``+`` line, or the ``nn.MultiheadAttention`` call given the mask.
A mask buffer of ``max_len`` rows used against ``T`` rows counts as a mismatch (it only works when
``T == max_len``).
"""

INVALID = [
    ("seed 2: (max_len, max_len) bool buffer used without [:T, :T]", '''\
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
        scores = scores.masked_fill(self.mask, float("-inf"))  # <-
        attn = scores.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
'''),
    ("nanoGPT: registered bias compared without the [:, :, :T, :T] slice", '''\
import math
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
        bs = config.block_size
        self.register_buffer("bias", torch.tril(torch.ones(bs, bs)).view(1, 1, bs, bs))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias == 0, float("-inf"))  # <-
        att = F.softmax(att, dim=-1)
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)
'''),
    ("(B, T, T) mask given to nn.MultiheadAttention", '''\
import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        B, T, _ = x.shape
        future = torch.ones(B, T, T, dtype=torch.bool, device=x.device).triu(1)
        y, _ = self.self_attn(x, x, x, attn_mask=future)  # <-
        return self.norm(x + y)
'''),
    ("3-D (B, 1, T) key_padding_mask given to nn.MultiheadAttention", '''\
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
        pad = (ids == self.pad_id)[:, None, :]
        y, _ = self.attn(x, x, x, key_padding_mask=pad)  # <-
        return y
'''),
    ("Hugging Face-style 4-D (B, 1, 1, T) extended mask given to nn.MultiheadAttention", '''\
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Config:
    vocab_size: int = 100
    hidden_size: int = 32
    num_attention_heads: int = 4
    max_position_embeddings: int = 64


class Encoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.attention = nn.MultiheadAttention(config.hidden_size, config.num_attention_heads, batch_first=True)

    def forward(self, input_ids, attention_mask):
        T = input_ids.size(1)
        x = self.word_embeddings(input_ids) + self.position_embeddings(torch.arange(T, device=input_ids.device))
        padding = (attention_mask == 0)[:, None, None, :]
        return self.attention(x, x, x, attn_mask=padding)[0]  # <-
'''),
    ("einsum, `import torch as th`, block_size causal buffer in where()", '''\
import torch as th
from torch import nn


class EinsumCausalAttention(nn.Module):
    def __init__(self, dim=64, heads=4, block_size=32):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.register_buffer("causal", th.ones(block_size, block_size, dtype=th.bool).tril())

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = th.einsum("bihd,bjhd->bhij", q, k) * self.dim_head ** -0.5
        sim = th.where(self.causal, sim, float("-inf"))  # <-
        return th.einsum("bhij,bjhd->bihd", sim.softmax(dim=-1), v).reshape(b, n, d)
'''),
]

VALID = [
    ("seed 2: buffer sliced to [:T, :T]", '''\
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
    ("nn.MultiheadAttention with a (B * n_heads, T, T) mask", '''\
import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x):
        B, T, _ = x.shape
        future = torch.ones(B, T, T, dtype=torch.bool, device=x.device).triu(1)
        future = future.repeat_interleave(self.n_heads, dim=0)
        y, _ = self.self_attn(x, x, x, attn_mask=future)
        return y
'''),
    ("(B, T) key_padding_mask and (T, T) attn_mask to nn.MultiheadAttention", '''\
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
        causal = torch.ones(T, T, dtype=torch.bool, device=ids.device).triu(1)
        y, _ = self.attn(x, x, x, attn_mask=causal, key_padding_mask=ids == self.pad_id)
        return y
'''),
    ("Hugging Face: attention_mask[:, None, None, :] broadcasts to (B, h, T, T)", '''\
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
        bias = (1.0 - attention_mask[:, None, None, :].to(scores.dtype)) * torch.finfo(scores.dtype).min
        return nn.functional.softmax(scores + bias, dim=-1)
'''),
    ("SDPA with a (B, 1, T, T) bool mask", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x, keep):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        mask = causal[None, None, :, :] & keep[:, None, None, :]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return y.transpose(1, 2).reshape(B, T, C)
'''),
    ("einsum, block_size buffer sliced with [:n, :n], `import torch as th`", '''\
import torch as th
from torch import nn


class EinsumCausalAttention(nn.Module):
    def __init__(self, dim=64, heads=4, block_size=32):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.register_buffer("causal", th.ones(block_size, block_size, dtype=th.bool).tril())

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = th.einsum("bihd,bjhd->bhij", q, k) * self.dim_head ** -0.5
        sim = th.where(self.causal[:n, :n], sim, float("-inf"))
        return th.einsum("bhij,bjhd->bihd", sim.softmax(dim=-1), v).reshape(b, n, d)
'''),
    ("(1, 1, L, L) buffer sliced with [..., :T, :T]", '''\
import math

import torch
from torch import nn
from torch.nn import functional as G


class MaskedAttention(nn.Module):
    def __init__(self, d_model=32, max_len=16):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("blocked", torch.ones(1, 1, max_len, max_len, dtype=torch.bool).triu(1))

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.qkv(x).unsqueeze(1).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(self.blocked[..., :T, :T], float("-inf"))
        return (G.softmax(scores, dim=-1) @ v).squeeze(1)
'''),
    ("fixed-length input of unknown shape: the full buffer may be the right size, not judged", '''\
import math

import torch
import torch.nn as nn


class FixedLengthAttention(nn.Module):
    """Always sees exactly n_patches tokens (a fixed image grid), so the full mask is the right size."""

    def __init__(self, d_model=32, n_patches=16):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("mask", torch.tril(torch.ones(n_patches, n_patches)))

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(self.mask == 0, float("-inf"))
        return scores.softmax(dim=-1) @ v
'''),
    ("functional style: a mask built in forward at x.size(1) of an input of unknown shape fits it", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange


class CausalSelfAttention(nn.Module):
    def __init__(self, width=48, heads=6):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, h):
        n = h.size(1)
        q, k, v = self.qkv(h).split(h.size(-1), dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
        att = att.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        return rearrange(F.softmax(att, dim=-1) @ v, "b h n d -> b n (h d)")


class Decoder(nn.Module):
    def __init__(self, vocab=100, width=48):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(64, width)
        self.attn = CausalSelfAttention(width)

    def forward(self, ids):
        h = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        return self.attn(h)
'''),
]

#: INVALID examples the engine cannot see yet, with the reason. They are not run as INVALID;
#: tests/test_rule_examples.py checks that each is still missed (so a fix must move it back).
KNOWN_MISSES = {
    '3-D (B, 1, T) key_padding_mask given to nn.MultiheadAttention': "the mask is indexed from an unannotated forward input whose rank the engine does not know, so the mask's rank is unknown",
    'Hugging Face-style 4-D (B, 1, 1, T) extended mask given to nn.MultiheadAttention': 'the mask is built from an unannotated forward input of unknown rank',
}
