"""SC303 missing-positional-encoding: rule examples.

Marker (``# <-``): the line where the token embeddings are produced (the ``nn.Embedding`` call or
``F.embedding``) in a model whose attention then sees them without any positional information: no
added / concatenated PE, no rotary embedding, no ALiBi or relative-position bias.
"""

INVALID = [
    ("seed 2 MiniGPT with the pos_emb line left out", '''\
import torch
import torch.nn as nn


class MiniGPT(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_head=4, n_layer=2):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_head, 4 * d_model, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layer)
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        x = self.token_emb(idx)  # <-
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=idx.device)
        x = self.blocks(x, mask=mask, is_causal=True)
        return self.head(self.ln_f(x))
'''),
    ("encoder classifier: embedding straight into nn.TransformerEncoder", '''\
from torch import nn


class SentimentClassifier(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4, n_classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, tokens):
        x = self.embed(tokens)  # <-
        return self.head(self.encoder(x).mean(dim=1))
'''),
    ("Hugging Face embeddings: word + token_type, no position embeddings", '''\
from dataclasses import dataclass

from torch import nn


@dataclass
class Config:
    vocab_size: int = 50
    hidden_size: int = 32
    type_vocab_size: int = 2
    num_attention_heads: int = 4


class Encoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size)
        self.attention = nn.MultiheadAttention(config.hidden_size, config.num_attention_heads, batch_first=True)

    def forward(self, input_ids, token_type_ids):
        embeddings = self.word_embeddings(input_ids)  # <-
        embeddings = self.LayerNorm(embeddings + self.token_type_embeddings(token_type_ids))
        return self.attention(embeddings, embeddings, embeddings)[0]
'''),
    ("positional table defined in __init__ but never used in forward", '''\
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4, max_len=64):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, idx):
        x = self.tok_emb(idx)  # <-
        y, _ = self.attn(x, x, x)
        return self.norm(x + y)
'''),
    ("einsum attention block, `import torch as th`", '''\
import torch as th
from torch import nn


class SetEncoder(nn.Module):
    def __init__(self, vocab_size=50, dim=32, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.to_tokens = nn.Embedding(vocab_size, dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, ids):
        x = self.to_tokens(ids)  # <-
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = th.einsum("bihd,bjhd->bhij", q, k) * self.dim_head ** -0.5
        return th.einsum("bhij,bjhd->bihd", sim.softmax(dim=-1), v).reshape(b, n, d)
'''),
    ("functional F.embedding of a parameter table, then SDPA", '''\
import torch
import torch.nn.functional as F
from torch import nn


class TinyEncoder(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.wte = nn.Parameter(torch.randn(vocab_size, d_model) * 0.02)
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, ids):
        x = F.embedding(ids, self.wte)  # <-
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return y.transpose(1, 2).reshape(B, T, C)
'''),
    ("classifier: arange used only to pool the last real token, no positions anywhere", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class LastTokenClassifier(nn.Module):
    def __init__(self, n_chars=65, width=64, n_head=4, n_classes=3):
        super().__init__()
        self.n_head = n_head
        self.embed = nn.Embedding(n_chars, width)
        self.qkv = nn.Linear(width, 3 * width)
        self.head = nn.Linear(width, n_classes)

    def forward(self, chars, lengths):
        x = self.embed(chars)  # <-
        bsz, seqlen, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=2)
        q = q.view(bsz, seqlen, self.n_head, -1).transpose(1, 2)
        k = k.view(bsz, seqlen, self.n_head, -1).transpose(1, 2)
        v = v.view(bsz, seqlen, self.n_head, -1).transpose(1, 2)
        att = F.softmax((q @ k.transpose(-2, -1)) / (width // self.n_head) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(bsz, seqlen, width)
        last = y[torch.arange(bsz), lengths - 1]
        return self.head(last)
'''),
    ("HF-style embeddings: position embeddings looked up, then never added", '''\
import torch
from torch import nn


class CharEncoder(nn.Module):
    def __init__(self, n_chars=80, width=48, n_head=4, context=128):
        super().__init__()
        self.chars = nn.Embedding(n_chars, width)
        self.where = nn.Embedding(context, width)
        self.register_buffer("slots", torch.arange(context).expand((1, -1)))
        self.norm = nn.LayerNorm(width)
        self.mix = nn.MultiheadAttention(width, n_head, batch_first=True)

    def forward(self, ids):
        slots = self.slots[:, : ids.size(1)]
        h = self.chars(ids)
        where = self.where(slots)  # <-
        h = self.norm(h)
        return self.mix(h, h, h, need_weights=False)[0]
'''),
    ("timm-style ViT: patches embedded by a strided conv, the pos_embed add left out", '''\
import torch
from torch import nn


class PatchEmbed(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=192):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)  # <-


class Attention(nn.Module):
    def __init__(self, dim, num_heads=3):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        x = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class VisionTransformer(nn.Module):
    def __init__(self, embed_dim=192, depth=2):
        super().__init__()
        self.patch_embed = PatchEmbed(embed_dim=embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.blocks = nn.ModuleList([Attention(embed_dim) for _ in range(depth)])

    def forward(self, images):
        x = self.patch_embed(images)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        for blk in self.blocks:
            x = x + blk(x)
        return x[:, 0]
'''),
    ("functional ViT: Conv2d patchify with a tuple kernel, SDPA, no positions anywhere", '''\
import torch
import torch.nn.functional as F
from torch import nn


class TinyViT(nn.Module):
    def __init__(self, width=96, heads=4, patch=8, classes=10):
        super().__init__()
        self.heads = heads
        self.to_patches = nn.Conv2d(3, width, (patch, patch), (patch, patch), padding=0)
        self.to_qkv = nn.Linear(width, 3 * width, bias=False)
        self.out = nn.Linear(width, classes)

    def forward(self, pixels):
        tokens = self.to_patches(pixels)  # <-
        tokens = tokens.flatten(2).transpose(1, 2)
        b, n, c = tokens.shape
        q, k, v = self.to_qkv(tokens).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.heads, c // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(b, n, c).mean(1))
'''),
]

VALID = [    ("HF-style embeddings: position embeddings looked up and added in place", '''\
import torch
from torch import nn


class CharEncoder(nn.Module):
    def __init__(self, n_chars=80, width=48, n_head=4, context=128):
        super().__init__()
        self.chars = nn.Embedding(n_chars, width)
        self.where = nn.Embedding(context, width)
        self.register_buffer("slots", torch.arange(context).expand((1, -1)))
        self.norm = nn.LayerNorm(width)
        self.mix = nn.MultiheadAttention(width, n_head, batch_first=True)

    def forward(self, ids):
        slots = self.slots[:, : ids.size(1)]
        h = self.chars(ids)
        where = self.where(slots)
        h += where
        h = self.norm(h)
        return self.mix(h, h, h, need_weights=False)[0]
'''),
    ("seed 2 MiniGPT: token_emb + pos_emb(arange(T))", '''\
import torch
import torch.nn as nn


class MiniGPT(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_head=4, n_layer=2, max_len=64):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_head, 4 * d_model, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layer)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        x = self.token_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=idx.device)
        return self.head(self.blocks(x, mask=mask, is_causal=True))
'''),
    ("RoPE: rotary embedding on q and k, no added PE", '''\
import torch
import torch.nn.functional as F
from torch import nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEncoder(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4, max_len=64):
        super().__init__()
        self.h, self.hd = n_heads, d_model // n_heads
        self.tok = nn.Embedding(vocab_size, d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        freqs = torch.outer(torch.arange(max_len).float(), inv_freq)
        self.register_buffer("cos", torch.cat((freqs, freqs), dim=-1).cos())
        self.register_buffer("sin", torch.cat((freqs, freqs), dim=-1).sin())

    def forward(self, idx):
        B, T = idx.shape
        q, k, v = self.qkv(self.tok(idx)).view(B, T, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        cos, sin = self.cos[:T], self.sin[:T]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, -1)
'''),
    ("ALiBi: distance bias on the scores, no added PE", '''\
import torch
import torch.nn.functional as F
from torch import nn


class ALiBiEncoder(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4):
        super().__init__()
        self.h = n_heads
        self.tok = nn.Embedding(vocab_size, d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("slopes", 2.0 ** (-8.0 * torch.arange(1, n_heads + 1) / n_heads))

    def forward(self, idx):
        B, T = idx.shape
        q, k, v = self.qkv(self.tok(idx)).view(B, T, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T, device=idx.device)
        bias = -self.slopes[:, None, None] * (pos[None, :] - pos[:, None]).abs()
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return y.transpose(1, 2).reshape(B, T, -1)
'''),
    ("T5-style relative position bias table, no added PE", '''\
import torch
from torch import nn


class RelativeBiasEncoder(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4, max_distance=16):
        super().__init__()
        self.h, self.hd, self.max_distance = n_heads, d_model // n_heads, max_distance
        self.tok = nn.Embedding(vocab_size, d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.rel_bias = nn.Embedding(2 * max_distance + 1, n_heads)

    def forward(self, idx):
        B, T = idx.shape
        q, k, v = self.qkv(self.tok(idx)).view(B, T, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T, device=idx.device)
        rel = (pos[None, :] - pos[:, None]).clamp(-self.max_distance, self.max_distance) + self.max_distance
        scores = q @ k.transpose(-2, -1) * self.hd ** -0.5 + self.rel_bias(rel).permute(2, 0, 1)
        return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, -1)
'''),
    ("sinusoidal PositionalEncoding module wrapped around the embedding", '''\
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
        return x + self.pe[: x.size(1)]


class Encoder(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos_enc = PositionalEncoding(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, tokens):
        x = self.pos_enc(self.embed(tokens) * math.sqrt(self.embed.embedding_dim))
        return self.attn(x, x, x)[0]
'''),
    ("embedding into a GRU: no attention, order is built in", '''\
from torch import nn


class GRUTagger(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_tags=5):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.rnn = nn.GRU(d_model, d_model, batch_first=True)
        self.head = nn.Linear(d_model, n_tags)

    def forward(self, tokens):
        h, _ = self.rnn(self.embed(tokens))
        return self.head(h)
'''),
    ("rotary cos / sin passed in by the caller and applied to q and k", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaishAttention(nn.Module):
    def __init__(self, vocab=1000, hidden=64, heads=4):
        super().__init__()
        self.heads = heads
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, hidden, bias=False)
        self.v_proj = nn.Linear(hidden, hidden, bias=False)

    def forward(self, input_ids, cos, sin):
        h = self.embed_tokens(input_ids)
        b, t, _ = h.shape
        q = self.q_proj(h).view(b, t, self.heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.heads, -1).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
'''),
    ("Shaw-style relative keys: an einsum of the queries with a table passed in", '''\
import math

import torch
import torch.nn as nn


class RelativeEncoder(nn.Module):
    def __init__(self, n_tokens=500, d=32):
        super().__init__()
        self.emb = nn.Embedding(n_tokens, d)
        self.wq = nn.Linear(d, d)
        self.wk = nn.Linear(d, d)
        self.wv = nn.Linear(d, d)

    def forward(self, tokens, rel_keys):
        x = self.emb(tokens)
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        content = torch.einsum("bid,bjd->bij", q, k)
        relative = torch.einsum("bid,ijd->bij", q, rel_keys)
        scores = (content + relative) / math.sqrt(q.size(-1))
        return torch.softmax(scores, dim=-1) @ v
'''),
    ("learned (1, block_size, d) parameter sliced to t: positions without arange", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyGPT(nn.Module):
    def __init__(self, vocab_size=65, block_size=32, n_embd=64, n_head=4):
        super().__init__()
        self.n_head = n_head
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Parameter(torch.zeros(1, block_size, n_embd))
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        x = self.wte(idx) + self.wpe[:, :t]
        q, k, v = self.qkv(x).view(b, t, 3, self.n_head, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.lm_head(y.transpose(1, 2).reshape(b, t, -1))
'''),
    ("CPVT / Twins style: a zero-padded depthwise conv gives positions after the first block", '''\
import torch
from torch import nn


class PosConv(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim)

    def forward(self, x, size):
        B, N, C = x.shape
        feat = x.transpose(1, 2).view(B, C, *size)
        return (self.proj(feat) + feat).flatten(2).transpose(1, 2)


class Block(nn.Module):
    def __init__(self, dim, heads=2):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        return x + self.attn(x, x, x, need_weights=False)[0]


class CPVT(nn.Module):
    def __init__(self, dim=64, patch=4, depth=3):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.pos_block = PosConv(dim)

    def forward(self, images):
        x = self.patch_embed(images)
        size = x.shape[2:]
        x = x.flatten(2).transpose(1, 2)
        for i, blk in enumerate(self.blocks):
            x = blk(x)
            if i == 0:
                x = self.pos_block(x, size)
        return x.mean(1)
'''),
    ("SegFormer style: overlapping zero-padded patch embedding, no explicit positions (by design)", '''\
import torch
import torch.nn.functional as F
from torch import nn


class OverlapPatchEmbed(nn.Module):
    def __init__(self, patch_size=7, stride=4, in_chans=3, embed_dim=64):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=stride, padding=patch_size // 2)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        x = self.proj(x)
        _, _, H, W = x.shape
        return self.norm(x.flatten(2).transpose(1, 2)), H, W


class Stage(nn.Module):
    def __init__(self, dim=64, heads=1):
        super().__init__()
        self.embed = OverlapPatchEmbed(embed_dim=dim)
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, images):
        x, H, W = self.embed(images)
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, N, C)
'''),
    ("timm-style ViT: patch tokens with a learned pos_embed added before the blocks", '''\
import torch
from torch import nn


class ViT(nn.Module):
    def __init__(self, img_size=32, patch_size=4, embed_dim=64, heads=4):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, embed_dim, kernel_size=patch_size, stride=patch_size)
        num_patches = (img_size // patch_size) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * 0.02)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(embed_dim, heads, batch_first=True), 2)

    def forward(self, images):
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.size(0), -1, -1), x], dim=1)
        x = x + self.pos_embed
        return self.encoder(x)[:, 0]
'''),
    ("PVT / SegFormer efficient attention: keys and values from a strided conv over the tokens", '''\
import torch
from torch import nn


class EfficientSelfAttention(nn.Module):
    def __init__(self, hidden_size=64, num_heads=2, sr_ratio=4):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key_value = nn.Linear(hidden_size, 2 * hidden_size)
        self.sr = nn.Conv2d(hidden_size, hidden_size, kernel_size=sr_ratio, stride=sr_ratio)
        self.norm = nn.LayerNorm(hidden_size)

    def forward(self, hidden_states, height, width):
        b, n, c = hidden_states.shape
        q = self.query(hidden_states).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        grid = hidden_states.transpose(1, 2).reshape(b, c, height, width)
        reduced = self.norm(self.sr(grid).flatten(2).transpose(1, 2))
        k, v = self.key_value(reduced).chunk(2, dim=-1)
        k = k.view(b, -1, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(b, -1, self.num_heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
        out = scores.softmax(dim=-1) @ v
        return out.transpose(1, 2).reshape(b, n, c)
'''),
    ("Mllama style: rotary self-attention layers with cross-attention layers to the image between them", '''\
import torch
import torch.nn.functional as F
from torch import nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class SelfLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x, image, cos, sin):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in self.qkv(x).chunk(3, dim=-1))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + y.transpose(1, 2).reshape(b, t, d)


class CrossLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)

    def forward(self, x, image, cos, sin):
        b, t, d = x.shape
        q = self.q(x).view(b, t, self.heads, -1).transpose(1, 2)
        k, v = (z.view(b, -1, self.heads, d // self.heads).transpose(1, 2) for z in self.kv(image).chunk(2, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v)
        return x + y.transpose(1, 2).reshape(b, t, d)


class TextModel(nn.Module):
    def __init__(self, vocab=1000, d=64, heads=4, depth=8, head_dim=16):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        layers = []
        for i in range(depth):
            layers.append(CrossLayer(d, heads) if i % 4 == 3 else SelfLayer(d, heads))
        self.layers = nn.ModuleList(layers)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim)))

    def forward(self, input_ids, image_states):
        x = self.embed_tokens(input_ids)
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).float()
        freqs = torch.outer(positions, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        for layer in self.layers:
            x = layer(x, image_states, cos, sin)
        return x
'''),
]
