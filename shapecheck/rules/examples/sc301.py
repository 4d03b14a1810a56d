"""SC301 pe-concatenated: rule examples.

Marker (``# <-``): the ``torch.cat`` / ``concat`` / ``concatenate`` call that joins token embeddings
and a positional encoding along the feature dim (the fix turns it into ``+``). The INVALID snippets
return the widened (B, T, 2 * d_model) tensor instead of feeding it to a d_model layer, so that no
other rule (SC505 on a Linear, SC404 on a LayerNorm) has a second finding to make.
"""

INVALID = [
    ("seed 2 MiniGPT: torch.cat([tok, pos], dim=-1)", '''\
import torch
import torch.nn as nn


class MiniGPTEmbedding(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)

    def forward(self, idx):
        B, T = idx.shape
        tok = self.token_emb(idx)
        pos = self.pos_emb(torch.arange(T, device=idx.device))
        x = torch.cat([tok, pos.expand(B, T, -1)], dim=-1)  # <-
        return x  # (B, T, 2 * d_model): every later d_model layer breaks
'''),
    ("seed 1 sinusoidal buffer concatenated on dim=2", '''\
import math

import torch
from torch import nn


class SinusoidalEmbedding(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, tokens):
        B, T = tokens.shape
        x = self.embed(tokens) * math.sqrt(self.embed.embedding_dim)
        return torch.cat((x, self.pe[:T].expand(B, T, -1)), dim=2)  # <-
'''),
    ("Hugging Face embeddings module with config.hidden_size", '''\
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Config:
    vocab_size: int = 50
    hidden_size: int = 32
    max_position_embeddings: int = 64


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)

    def forward(self, input_ids):
        position_ids = torch.arange(input_ids.size(1), device=input_ids.device).expand_as(input_ids)
        inputs_embeds = self.word_embeddings(input_ids)
        position_embeddings = self.position_embeddings(position_ids)
        embeddings = torch.cat([inputs_embeds, position_embeddings], -1)  # <-
        return embeddings
'''),
    ("`import torch as th`, th.concat of a learned parameter table", '''\
import torch as th
from torch import nn


class TokenAndPosition(nn.Module):
    def __init__(self, vocab_size=50, dim=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Parameter(th.zeros(1, max_len, dim))

    def forward(self, ids):
        b, n = ids.shape
        return th.concat((self.tok(ids), self.pos[:, :n].expand(b, -1, -1)), dim=-1)  # <-
'''),
    ("einops repeat of the positional table, then torch.cat", '''\
import torch
from einops import repeat
from torch import nn


class Embed(nn.Module):
    def __init__(self, vocab_size=50, dim=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_len, dim)

    def forward(self, ids):
        b, n = ids.shape
        pos = repeat(self.pos(torch.arange(n, device=ids.device)), "n d -> b n d", b=b)
        return torch.cat([self.tok(ids), pos], dim=-1)  # <-
'''),
    ("functional embed() helper called from a module", '''\
import torch
import torch.nn.functional as F
from torch import nn


def embed(ids, token_table, pos_table):
    T = ids.size(1)
    tok = F.embedding(ids, token_table)
    pos = F.embedding(torch.arange(T, device=ids.device), pos_table).unsqueeze(0).expand_as(tok)
    return torch.concatenate([tok, pos], dim=-1)  # <-


class Encoder(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.token_table = nn.Parameter(torch.randn(vocab_size, d_model) * 0.02)
        self.pos_table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    def forward(self, ids):
        return embed(ids, self.token_table, self.pos_table)
'''),
    ("audio encoder: conv features and a sinusoid buffer of lower rank joined on the features", '''\
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def sinusoids(length, channels, max_timescale=10000):
    step = np.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-step * torch.arange(channels // 2))
    scaled_time = torch.arange(length)[:, None] * inv_timescales[None, :]
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)


class AudioEncoder(nn.Module):
    def __init__(self, n_mels=80, n_ctx=1500, n_state=384):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, n_state, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(n_ctx, n_state))

    def forward(self, mel):
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x)).permute(0, 2, 1)
        x = torch.cat([x, self.positional_embedding], dim=-1)  # <-
        return x
'''),
    ("blocked vision level: a (1, blocks, len, d) table joined to patch features of unknown shape", '''\
import torch
from torch import nn


class BlockedLevel(nn.Module):
    def __init__(self, num_blocks=4, seq_length=16, embed_dim=64):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.zeros(1, num_blocks, seq_length, embed_dim))
        self.mix = nn.Linear(embed_dim, embed_dim)

    def forward(self, patches):
        patches = torch.cat([patches, self.pos_embed], dim=-1)  # <-
        return self.mix(patches)
'''),
]

VALID = [
    ("seed 2 MiniGPT: tok + pos", '''\
import torch
import torch.nn as nn


class MiniGPTEmbedding(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.ln = nn.LayerNorm(d_model)

    def forward(self, idx):
        B, T = idx.shape
        tok = self.token_emb(idx)
        pos = self.pos_emb(torch.arange(T, device=idx.device))
        return self.ln(tok + pos)
'''),
    ("ViT: cls token concatenated along the sequence dim, then PE added", '''\
import torch
from torch import nn


class PatchEmbed(nn.Module):
    def __init__(self, dim=32, patch=4, image=16):
        super().__init__()
        num_patches = (image // patch) ** 2
        self.proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, dim))

    def forward(self, img):
        x = self.proj(img).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.size(0), -1, -1)
        x = torch.cat((cls, x), dim=1)
        return x + self.pos_embed[:, : x.size(1)]
'''),
    ("heads concatenated on the feature dim", '''\
import math

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, d_model=32, head_size=8):
        super().__init__()
        self.q = nn.Linear(d_model, head_size)
        self.k = nn.Linear(d_model, head_size)
        self.v = nn.Linear(d_model, head_size)

    def forward(self, x):
        w = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(self.q.out_features)
        return torch.softmax(w, dim=-1) @ self.v(x)


class MultiHead(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.heads = nn.ModuleList([Head(d_model, d_model // n_heads) for _ in range(n_heads)])
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.proj(torch.cat([h(x) for h in self.heads], dim=-1))
'''),
    ("KV cache: past keys concatenated along time", '''\
import math

import torch
from torch import nn


class CachedAttention(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)

    def forward(self, x, past):
        k, v = self.kv(x).chunk(2, dim=-1)
        past_k, past_v = self.kv(past).chunk(2, dim=-1)
        k, v = torch.cat([past_k, k], dim=-2), torch.cat([past_v, v], dim=-2)
        scores = self.q(x) @ k.transpose(-2, -1) / math.sqrt(x.size(-1))
        return torch.softmax(scores, dim=-1) @ v
'''),
    ("sinusoidal table built from cat([sin, cos]) halves, then added", '''\
import math

import torch
from torch import nn


class SinusoidalPE(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1).float()
        freqs = torch.exp(torch.arange(0, d_model // 2) * (-math.log(10000.0) / (d_model // 2)))
        self.register_buffer("pe", torch.cat([torch.sin(pos * freqs), torch.cos(pos * freqs)], dim=-1))

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
    ("`from torch import cat`: segment A and segment B joined on dim=1, PE added", '''\
import torch
from torch import cat, nn


class PairEncoder(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)

    def forward(self, ids_a, ids_b):
        ids = cat([ids_a, ids_b], dim=1)
        T = ids.size(1)
        return self.tok(ids) + self.pos(torch.arange(T, device=ids.device))
'''),
    ("prompt tuning: learned prompt vectors prepended along the sequence axis (dim=1)", '''\
import torch
import torch.nn as nn


class PromptTuned(nn.Module):
    """Prompt tuning: n learned prompt vectors prepended to the token embeddings along the sequence."""

    def __init__(self, vocab=100, d_model=32, n_prompt=4, max_len=64):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.prompt = nn.Parameter(torch.randn(1, n_prompt, d_model))
        self.pos_emb = nn.Parameter(torch.zeros(1, max_len, d_model))

    def forward(self, ids):
        B, T = ids.shape
        x = self.tok_emb(ids)
        x = torch.cat([self.prompt.expand(B, -1, -1), x], dim=1)
        return x + self.pos_emb[:, : x.size(1)]
'''),
    ("unbatched (T, d): torch.cat without dim joins along dim 0, the sequence", '''\
import torch
import torch.nn as nn


class UnbatchedPromptEncoder(nn.Module):
    """One sequence at a time, (T, d): learned prompt rows go before the tokens (torch.cat's default dim 0)."""

    def __init__(self, vocab=100, d_model=32, n_prompt=4):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.prompt = nn.Parameter(torch.randn(n_prompt, d_model))

    def forward(self, ids):
        x = self.tok_emb(ids)
        return torch.cat([self.prompt, x])
'''),
    ("coordinate features: a learned table cut to the length and expanded to the batch, then concatenated and projected", '''\
import torch
from torch import nn


class CoordinateFeatures(nn.Module):
    def __init__(self, max_len=128, d_pos=16, d_model=64):
        super().__init__()
        self.coords = nn.Parameter(torch.randn(1, max_len, d_pos))
        self.proj = nn.Linear(d_model + d_pos, d_model)

    def forward(self, feats):
        b, t, _ = feats.shape
        coords = self.coords[:, :t].expand(b, -1, -1)
        return self.proj(torch.cat([feats, coords], dim=-1))
'''),
]

#: The whole example after `shapecheck lint --fix`, for the INVALID examples the rule can fix.
FIXED = {
    'audio encoder: conv features and a sinusoid buffer of lower rank joined on the features': '''\
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def sinusoids(length, channels, max_timescale=10000):
    step = np.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-step * torch.arange(channels // 2))
    scaled_time = torch.arange(length)[:, None] * inv_timescales[None, :]
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)


class AudioEncoder(nn.Module):
    def __init__(self, n_mels=80, n_ctx=1500, n_state=384):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, n_state, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(n_ctx, n_state))

    def forward(self, mel):
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x)).permute(0, 2, 1)
        x = x + self.positional_embedding  # <-
        return x
''',
    'seed 2 MiniGPT: torch.cat([tok, pos], dim=-1)': '''\
import torch
import torch.nn as nn


class MiniGPTEmbedding(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)

    def forward(self, idx):
        B, T = idx.shape
        tok = self.token_emb(idx)
        pos = self.pos_emb(torch.arange(T, device=idx.device))
        x = tok + pos.expand(B, T, -1)  # <-
        return x  # (B, T, 2 * d_model): every later d_model layer breaks
''',
    'seed 1 sinusoidal buffer concatenated on dim=2': '''\
import math

import torch
from torch import nn


class SinusoidalEmbedding(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, tokens):
        B, T = tokens.shape
        x = self.embed(tokens) * math.sqrt(self.embed.embedding_dim)
        return x + self.pe[:T].expand(B, T, -1)  # <-
''',
    'Hugging Face embeddings module with config.hidden_size': '''\
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Config:
    vocab_size: int = 50
    hidden_size: int = 32
    max_position_embeddings: int = 64


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)

    def forward(self, input_ids):
        position_ids = torch.arange(input_ids.size(1), device=input_ids.device).expand_as(input_ids)
        inputs_embeds = self.word_embeddings(input_ids)
        position_embeddings = self.position_embeddings(position_ids)
        embeddings = inputs_embeds + position_embeddings  # <-
        return embeddings
''',
    '`import torch as th`, th.concat of a learned parameter table': '''\
import torch as th
from torch import nn


class TokenAndPosition(nn.Module):
    def __init__(self, vocab_size=50, dim=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Parameter(th.zeros(1, max_len, dim))

    def forward(self, ids):
        b, n = ids.shape
        return self.tok(ids) + self.pos[:, :n].expand(b, -1, -1)  # <-
''',
    'einops repeat of the positional table, then torch.cat': '''\
import torch
from einops import repeat
from torch import nn


class Embed(nn.Module):
    def __init__(self, vocab_size=50, dim=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_len, dim)

    def forward(self, ids):
        b, n = ids.shape
        pos = repeat(self.pos(torch.arange(n, device=ids.device)), "n d -> b n d", b=b)
        return self.tok(ids) + pos  # <-
''',
    'functional embed() helper called from a module': '''\
import torch
import torch.nn.functional as F
from torch import nn


def embed(ids, token_table, pos_table):
    T = ids.size(1)
    tok = F.embedding(ids, token_table)
    pos = F.embedding(torch.arange(T, device=ids.device), pos_table).unsqueeze(0).expand_as(tok)
    return tok + pos  # <-


class Encoder(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.token_table = nn.Parameter(torch.randn(vocab_size, d_model) * 0.02)
        self.pos_table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    def forward(self, ids):
        return embed(ids, self.token_table, self.pos_table)
''',
}
