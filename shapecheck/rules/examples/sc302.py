"""SC302 pe-not-sliced: rule examples.

Marker (``# <-``): the ``+`` / ``+=`` line that adds the whole ``max_len`` positional table (or the
embedding of all ``max_len`` positions) to a length-``T`` sequence.
"""

INVALID = [
    ('Hugging Face style: position embedding looked up with the full position_ids buffer', '''\
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
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)))

    def forward(self, input_ids):
        batch_size, seq_length = input_ids.shape
        inputs_embeds = self.word_embeddings(input_ids)
        return inputs_embeds + self.position_embeddings(self.position_ids)  # <-
'''),
    ('jaxtyping-annotated ids, sinusoidal buffer registered at max_len, `import torch as th`', '''\
import math

import torch as th
from jaxtyping import Int
from torch import Tensor, nn


class Embed(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        pos = th.arange(max_len).unsqueeze(1).float()
        div = th.exp(th.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        table = th.zeros(1, max_len, d_model)
        table[0, :, 0::2] = th.sin(pos * div)
        table[0, :, 1::2] = th.cos(pos * div)
        self.register_buffer("table", table)

    def forward(self, ids: Int[Tensor, "b t"]):
        x = self.tok(ids)
        return x + self.table  # <-
'''),
    ('nanoGPT config: learned (1, block_size, n_embd) parameter added whole to (b, t) token embeddings', '''\
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class GPTConfig:
    vocab_size: int = 50
    block_size: int = 16
    n_embd: int = 32


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd))

    def forward(self, idx):
        b, t = idx.size()
        return self.wte(idx) + self.wpe  # <-
'''),
    ('token and sinusoidal embeddings in one module, the whole (max_len, d) buffer added', '''\
import math

import torch
from torch import nn


class SinusoidalEmbedding(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        position = torch.arange(max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, ids):
        B, T = ids.shape
        x = self.tok(ids) * math.sqrt(self.tok.embedding_dim)
        return x + self.pe  # <-
'''),
    ("seed 1 sinusoidal buffer added whole", '''\
import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe  # <-
'''),
    ("seed 1 LearnedPositionalEncoding: the whole Embedding weight added", '''\
import torch.nn as nn


class LearnedPositionalEncoding(nn.Module):
    def __init__(self, max_position=64, d_model=32):
        super().__init__()
        self.pe = nn.Embedding(max_position, d_model)
        self.pe.weight.data.normal_(mean=0.0, std=0.02)

    def forward(self, x):
        x = x + self.pe.weight  # <-
        return x
'''),
    ("learned (1, max_len, d) parameter, `x += table`", '''\
import torch
from torch import nn


class TokenAndPosition(nn.Module):
    def __init__(self, vocab_size=50, dim=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos_embedding = nn.Parameter(torch.randn(1, max_len, dim) * 0.02)

    def forward(self, ids):
        x = self.tok(ids)
        x += self.pos_embedding  # <-
        return x
'''),
    ("Hugging Face: position_ids buffer of max_position_embeddings, not sliced", '''\
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
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)))

    def forward(self, input_ids):
        inputs_embeds = self.word_embeddings(input_ids)
        embeddings = inputs_embeds + self.position_embeddings(self.position_ids)  # <-
        return embeddings
'''),
    ("nanoGPT: positions arange(block_size) instead of arange(t)", '''\
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class GPTConfig:
    vocab_size: int = 50
    block_size: int = 16
    n_embd: int = 32


class GPTEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)

    def forward(self, idx):
        b, t = idx.size()
        assert t <= self.config.block_size, f"sequence of {t} > block size {self.config.block_size}"
        pos = torch.arange(0, self.config.block_size, dtype=torch.long, device=idx.device)
        tok_emb = self.wte(idx)  # (b, t, n_embd)
        return tok_emb + self.wpe(pos)  # <-
'''),
    ("einops rearrange of the whole table, `import torch as th`", '''\
import torch as th
from einops import rearrange
from torch import nn


class AbsolutePositions(nn.Module):
    def __init__(self, dim=32, max_len=64):
        super().__init__()
        self.table = nn.Parameter(th.randn(max_len, dim) * 0.02)

    def forward(self, x):
        pos = rearrange(self.table, "n d -> 1 n d")
        return x + pos  # <-
'''),
]

VALID = [
    ("seed 1 sinusoidal buffer sliced to x.size(1)", '''\
import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]
'''),
    ("seed 1 LearnedPositionalEncoding: Embedding of arange(seq_len)", '''\
import torch
import torch.nn as nn


class LearnedPositionalEncoding(nn.Module):
    def __init__(self, max_position=64, d_model=32):
        super().__init__()
        self.pe = nn.Embedding(max_position, d_model)

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        position_ids = torch.arange(seq_len, dtype=torch.long, device=x.device)
        position_ids = position_ids.unsqueeze(0).expand(batch_size, -1)
        return x + self.pe(position_ids)
'''),
    ("Hugging Face: position_ids[:, :seq_length]", '''\
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
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)))

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        return self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
'''),
    ("nanoGPT: wpe(arange(0, t))", '''\
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class GPTConfig:
    vocab_size: int = 50
    block_size: int = 16
    n_embd: int = 32


class GPTEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)  # shape (t)
        return self.wte(idx) + self.wpe(pos)
'''),
    ("table sliced first, added on a later line, `x += pe`", '''\
import torch as th
from torch import nn


class TokenAndPosition(nn.Module):
    def __init__(self, vocab_size=50, dim=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos_embedding = nn.Parameter(th.randn(1, max_len, dim) * 0.02)

    def forward(self, ids):
        n = ids.shape[1]
        x = self.tok(ids)
        pe = self.pos_embedding[:, :n]
        x += pe
        return x
'''),
    ("ViT: table sized num_patches + 1, the sequence length is fixed by the image size", '''\
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
        x = torch.cat((self.cls_token.expand(x.size(0), -1, -1), x), dim=1)
        return x + self.pos_embed
'''),
    ("slot queries: a (1, 1, d) content vector broadcast over a sinusoidal table of the slots", '''\
import math

import torch
from torch import nn


class SlotQueries(nn.Module):
    """Decoder queries: one learned content vector broadcast over a sinusoidal table of the slots."""

    def __init__(self, num_slots=20, d_model=32):
        super().__init__()
        slot = torch.arange(num_slots).unsqueeze(1).float()
        div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        table = torch.zeros(1, num_slots, d_model)
        table[0, :, 0::2] = torch.sin(slot * div)
        table[0, :, 1::2] = torch.cos(slot * div)
        self.register_buffer("slots", table)
        self.content = nn.Parameter(torch.zeros(1, 1, d_model))

    def forward(self, memory):
        queries = self.content + self.slots
        return queries.expand(memory.size(0), -1, -1)
'''),
    ("video ViT: a table as long as a helper says, added to the tubelet tokens of a fixed-size input", '''\
import torch
from torch import nn

from .utils import count_tubelets


class TubeletEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = nn.Conv2d(3, config.hidden_size, kernel_size=config.tubelet_size, stride=config.tubelet_size)
        self.position_embeddings = nn.Parameter(torch.zeros(1, count_tubelets(config), config.hidden_size))

    def forward(self, pixel_values: torch.Tensor):
        batch, channels, height, width = pixel_values.shape
        tokens = self.proj(pixel_values).flatten(2).transpose(1, 2)
        return tokens + self.position_embeddings
'''),
]

#: INVALID examples the engine cannot see yet, with the reason. They are not run as INVALID;
#: tests/test_rule_examples.py checks that each is still missed (so a fix must move it back).
KNOWN_MISSES = {
    'seed 1 sinusoidal buffer added whole': "the module's input is unannotated and no caller in the file passes it, so its length is unknown: the table might match it",
    'seed 1 LearnedPositionalEncoding: the whole Embedding weight added': 'the input length is unknown and a learned table may legitimately match a fixed length (ViT); the engine needs the token sequence length',
    'learned (1, max_len, d) parameter, `x += table`': "the token ids are an unannotated input of unknown rank, so the embeddings' sequence length is unknown",
    'Hugging Face: position_ids buffer of max_position_embeddings, not sliced': "the token ids are an unannotated input of unknown rank, so the embeddings' sequence length is unknown",
    'einops rearrange of the whole table, `import torch as th`': "the table's length is not compared with a known sequence length (the input is unannotated)",
}

#: The whole example after `shapecheck lint --fix`, for the INVALID examples the rule can fix.
FIXED = {
    'jaxtyping-annotated ids, sinusoidal buffer registered at max_len, `import torch as th`': '''\
import math

import torch as th
from jaxtyping import Int
from torch import Tensor, nn


class Embed(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        pos = th.arange(max_len).unsqueeze(1).float()
        div = th.exp(th.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        table = th.zeros(1, max_len, d_model)
        table[0, :, 0::2] = th.sin(pos * div)
        table[0, :, 1::2] = th.cos(pos * div)
        self.register_buffer("table", table)

    def forward(self, ids: Int[Tensor, "b t"]):
        x = self.tok(ids)
        return x + self.table[:, :x.size(-2)]  # <-
''',
    'token and sinusoidal embeddings in one module, the whole (max_len, d) buffer added': '''\
import math

import torch
from torch import nn


class SinusoidalEmbedding(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        position = torch.arange(max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, ids):
        B, T = ids.shape
        x = self.tok(ids) * math.sqrt(self.tok.embedding_dim)
        return x + self.pe[:x.size(-2)]  # <-
''',
    'seed 1 sinusoidal buffer added whole': '''\
import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[:x.size(-2)]  # <-
''',
}
