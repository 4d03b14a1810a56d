"""SC404 layernorm-wrong-dim: rule examples.

Marker (``# <-``): where the wrong normalized shape is written: the ``nn.LayerNorm(...)`` construction
of a module applied to an input whose trailing feature dim it is not (or whose sequence axis it
spans), or the ``F.layer_norm`` call.
"""

INVALID = [
    ("seed 1: nn.LayerNorm(max_len) in an encoder layer", '''\
import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, d_model=64, d_ff=256, max_len=128):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.norm = nn.LayerNorm(max_len)  # <-

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        return self.norm(x + self.ff(x))
'''),
    ("nanoGPT: ln_f = LayerNorm(config.block_size)", '''\
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class GPTConfig:
    vocab_size: int = 100
    block_size: int = 32
    n_embd: int = 48


class GPT(nn.Module):
    def __init__(self, config: GPTConfig = GPTConfig()):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.ln_f = nn.LayerNorm(config.block_size)  # <-
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        x = self.ln_f(x)
        return self.lm_head(x)
'''),
    ("Hugging Face: LayerNorm((max_position_embeddings, hidden_size)) on (b, t, d)", '''\
import torch
from torch import nn


class Embeddings(nn.Module):
    def __init__(self, vocab_size=100, hidden_size=64, max_position_embeddings=512):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size)
        self.LayerNorm = nn.LayerNorm((max_position_embeddings, hidden_size))  # <-

    def forward(self, input_ids):
        batch, seq = input_ids.shape
        embeddings = self.word_embeddings(input_ids)
        return self.LayerNorm(embeddings)


Embeddings()(torch.randint(0, 100, (2, 16)))
'''),
    ("Hugging Face OPT / BART: LayerNorm(config.max_position_embeddings), a positional table with an offset", '''\
import torch
from torch import nn


class LearnedPositionalEmbedding(nn.Embedding):
    """OPT / BART: the first two rows are reserved, positions are looked up 2 rows on."""

    def __init__(self, num_embeddings, embedding_dim):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        return super().forward(positions + self.offset)


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.embed_positions = LearnedPositionalEmbedding(config.max_position_embeddings, config.hidden_size)
        self.layernorm_embedding = nn.LayerNorm(config.max_position_embeddings)  # <-

    def forward(self, input_ids):
        hidden_states = self.embed_tokens(input_ids) + self.embed_positions(input_ids)
        return self.layernorm_embedding(hidden_states)
'''),
    ("functional: F.layer_norm(x, x.shape[1:]) on token states", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, vocab=100, d_model=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)
        self.ff = nn.Linear(d_model, d_model)

    def forward(self, ids):
        B, T = ids.shape
        x = self.emb(ids)
        x = F.layer_norm(x, x.shape[1:])  # <-
        return self.ff(x)
'''),
    ("einsum attention block normalized over the sequence axis", '''\
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim=64, heads=4, seq_len=16):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, 3 * dim)
        self.norm = nn.LayerNorm(seq_len)  # <-

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        sim = torch.einsum("bid,bjd->bij", q, k) * d ** -0.5
        out = torch.einsum("bij,bjd->bid", sim.softmax(dim=-1), v)
        return self.norm(out + x)


Block()(torch.randn(2, 16, 64))
'''),
    ("aliased imports: import torch.nn.functional as fn; fn.layer_norm over [T, D]", '''\
import torch as th
import torch.nn as tnn
import torch.nn.functional as fn


class Mixer(tnn.Module):
    def __init__(self, vocab=100, width=32):
        super().__init__()
        self.tok = tnn.Embedding(vocab, width)
        self.proj = tnn.Linear(width, width)

    def forward(self, ids):
        n, t = ids.shape
        h = self.tok(ids)
        h = fn.layer_norm(h, [t, h.size(-1)])  # <-
        return self.proj(th.relu(h))
'''),
]

VALID = [
    ("seed 1: nn.LayerNorm(d_model)", '''\
import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, d_model=64, d_ff=256, max_len=128):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        return self.norm(x + self.ff(x))
'''),
    ("nanoGPT: ln_f = LayerNorm(config.n_embd)", '''\
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class GPTConfig:
    vocab_size: int = 100
    block_size: int = 32
    n_embd: int = 48


class GPT(nn.Module):
    def __init__(self, config: GPTConfig = GPTConfig()):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.ln_f = nn.LayerNorm(config.n_embd)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        return self.ln_f(self.wte(idx) + self.wpe(pos))
'''),
    ("Hugging Face OPT / BART: LayerNorm(config.hidden_size) beside a positional table with an offset", '''\
import torch
from torch import nn


class LearnedPositionalEmbedding(nn.Embedding):
    """OPT / BART: the first two rows are reserved, positions are looked up 2 rows on."""

    def __init__(self, num_embeddings, embedding_dim):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        return super().forward(positions + self.offset)


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.embed_positions = LearnedPositionalEmbedding(config.max_position_embeddings, config.hidden_size)
        self.layernorm_embedding = nn.LayerNorm(config.hidden_size)

    def forward(self, input_ids):
        hidden_states = self.embed_tokens(input_ids) + self.embed_positions(input_ids)
        return self.layernorm_embedding(hidden_states)
'''),
    ("RMSNorm(hidden_size) (Llama)", '''\
import torch
from torch import nn


class Layer(nn.Module):
    def __init__(self, vocab_size=100, hidden_size=64):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.input_layernorm = nn.RMSNorm(hidden_size, eps=1e-6)

    def forward(self, input_ids):
        b, t = input_ids.shape
        return self.input_layernorm(self.embed_tokens(input_ids))
'''),
    ("channel-first conv features: permute to channels-last, LayerNorm(C), permute back", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNorm2d(nn.LayerNorm):
    pass


class ConvBlock(nn.Module):
    def __init__(self, channels=32):
        super().__init__()
        self.dw = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = nn.LayerNorm(channels)

    def forward(self, x):
        B, C, H, W = x.shape
        y = self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        z = F.layer_norm(x, [C, H, W])
        return y + z
'''),
    ("GroupNorm over channels and LayerNorm over (C, H, W) of an image", '''\
import torch
import torch.nn as nn


class Stem(nn.Module):
    def __init__(self, channels=32, size=8):
        super().__init__()
        self.gn = nn.GroupNorm(8, channels)
        self.ln = nn.LayerNorm([channels, size, size])

    def forward(self, x):
        B, C, H, W = x.shape
        return self.ln(self.gn(x))


Stem()(torch.randn(2, 32, 8, 8))
'''),
    ("functional: F.layer_norm(x, (x.size(-1),)) per token", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, vocab=100, d_model=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)
        self.ff = nn.Linear(d_model, d_model)

    def forward(self, ids):
        B, T = ids.shape
        x = self.emb(ids)
        x = F.layer_norm(x, (x.size(-1),))
        return self.ff(x)
'''),
    ("aliased imports: tnn.LayerNorm(width) after einsum attention", '''\
import torch as th
import torch.nn as tnn


class Block(tnn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.to_qkv = tnn.Linear(width, 3 * width)
        self.norm = tnn.LayerNorm(width)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        sim = th.einsum("bid,bjd->bij", q, k) * d ** -0.5
        return self.norm(th.einsum("bij,bjd->bid", sim.softmax(dim=-1), v) + x)
'''),
]
