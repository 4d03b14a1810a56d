"""SC204 missing-causal-mask: rule examples.

Marker (``# <-``): the line where the causal module turns scores into attention with no causal mask:
the softmax call, the ``scaled_dot_product_attention`` call, or the call of the ``nn.MultiheadAttention``
/ ``nn.Transformer*`` module. Each INVALID snippet carries data-flow evidence that the attention must be causal: its output
feeds a generation loop (``torch.multinomial``), a next-token loss on shifted logits / targets, or a
sibling attention path of the same module is masked causally. Names are never evidence.
"""

INVALID = [
    ("seed 2 CausalSelfAttention with the mask left out, trained on shifted targets", """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model=64, n_head=4):
        super().__init__()
        assert d_model % n_head == 0
        self.n_head, self.d_k = n_head, d_model // n_head
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        self.W_O = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_QKV(x).reshape(B, T, 3, self.n_head, self.d_k).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k ** 0.5)
        attn = scores.softmax(dim=-1)  # <-
        out = (attn @ v).transpose(1, 2).reshape(B, T, C)
        return self.W_O(out)


class MiniGPT(nn.Module):
    def __init__(self, vocab=100, d_model=64, block=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(block, d_model)
        self.attn = CausalSelfAttention(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1)))
        return self.head(x + self.attn(x))

    def loss(self, idx):
        logits = self(idx)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), idx[:, 1:].reshape(-1))
"""),
    ("nanoGPT: the flash path lost is_causal=True, the manual path is masked", """\
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    block_size: int = 64
    n_embd: int = 64
    n_head: int = 4


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.flash = hasattr(F, "scaled_dot_product_attention")
        size = config.block_size
        self.register_buffer("bias", torch.tril(torch.ones(size, size)).view(1, 1, size, size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None)  # <-
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
"""),
    ("decoder-only LM on nn.MultiheadAttention without attn_mask, sampled token by token", """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x):
        y, _ = self.self_attn(x, x, x, need_weights=False)  # <-
        x = self.norm1(x + y)
        return self.norm2(x + self.ff(x))


class Generator(nn.Module):
    def __init__(self, vocab=64, d_model=32, block=48):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.position = nn.Parameter(torch.zeros(1, block, d_model))
        self.blocks = nn.ModuleList([Block(d_model) for _ in range(2)])
        self.out = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        h = self.embed(tokens) + self.position[:, : tokens.size(1)]
        for block in self.blocks:
            h = block(h)
        return self.out(h)

    @torch.no_grad()
    def sample(self, tokens, steps: int, temperature: float = 1.0):
        for _ in range(steps):
            logits = self(tokens)[:, -1, :] / temperature
            nxt = torch.multinomial(torch.softmax(logits, dim=-1), num_samples=1)
            tokens = torch.cat((tokens, nxt), dim=1)
        return tokens
"""),
    ("tiny LM with a generate loop; functional attention helper has no mask", """\
import torch
from torch import nn
from torch.nn import functional as G


def attention(q, k, v):
    w = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
    return G.softmax(w, dim=-1) @ v  # <-


class TinyLM(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.lm_head = nn.Linear(d_model, vocab_size)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1), device=idx.device))
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.lm_head(x + attention(q, k, v))

    @torch.no_grad()
    def generate(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            probs = G.softmax(self(idx)[:, -1, :], dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, 1)], dim=1)
        return idx
"""),
    ("nn.TransformerEncoder used as a language-model body, no mask, next-token loss", """\
import torch
from torch import nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4, n_layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.body = nn.TransformerEncoder(layer, n_layers)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx, targets=None):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1), device=idx.device))
        x = self.body(x)  # <-
        logits = self.lm_head(x)
        if targets is None:
            return logits
        shift_logits = logits[..., :-1, :].contiguous()
        shift_labels = targets[..., 1:].contiguous()
        return F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
"""),
    ("seq2seq: nn.TransformerDecoderLayer called without tgt_mask, trained on shifted targets", """\
import torch
from torch import nn
from torch.nn import functional as F


class Seq2Seq(nn.Module):
    def __init__(self, vocab=40, d_model=32, n_heads=4):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d_model)
        self.tgt_embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(64, d_model)
        self.encoder = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.decoder = nn.TransformerDecoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, src, tgt):
        memory = self.encoder(self.src_embed(src) + self.pos(torch.arange(src.size(1))))
        x = self.tgt_embed(tgt) + self.pos(torch.arange(tgt.size(1)))
        out = self.decoder(x, memory)  # <-
        return self.proj(out)

    def training_loss(self, src, tgt):
        logits = self(src, tgt[:, :-1])
        return F.cross_entropy(logits.transpose(1, 2), tgt[:, 1:])
"""),
    ("einsum attention with only a padding mask from the token ids, sampled in a loop", """\
import torch as th
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x, keep):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = th.einsum("bihd,bjhd->bhij", q, k) * self.dim_head ** -0.5
        sim = sim.masked_fill(~keep[:, None, None, :], float("-inf"))
        attn = sim.softmax(dim=-1)  # <-
        return th.einsum("bhij,bjhd->bihd", attn, v).reshape(b, n, d)


class LM(nn.Module):
    def __init__(self, vocab=30, dim=64, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.emb = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(128, dim)
        self.attn = Attention(dim)
        self.to_logits = nn.Linear(dim, vocab)

    def forward(self, ids):
        keep = ids != self.pad_id
        x = self.emb(ids) + self.pos(th.arange(ids.shape[1]))
        return self.to_logits(x + self.attn(x, keep))

    def complete(self, ids, steps=8):
        for _ in range(steps):
            probs = self(ids)[:, -1].softmax(dim=-1)
            ids = th.cat([ids, th.multinomial(probs, 1)], dim=-1)
        return ids


if __name__ == "__main__":
    LM().complete(th.randint(1, 30, (2, 5)))
"""),
]

VALID = [
    ("seed 2 CausalSelfAttention with the mask left out", '''\
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model=64, n_head=4):
        super().__init__()
        assert d_model % n_head == 0
        self.n_head, self.d_k = n_head, d_model // n_head
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        self.W_O = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_QKV(x).reshape(B, T, 3, self.n_head, self.d_k).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k ** 0.5)
        attn = scores.softmax(dim=-1)  # <-
        out = (attn @ v).transpose(1, 2).reshape(B, T, C)
        return self.W_O(out)
'''),
    ("nanoGPT flash path without is_causal=True", '''\
from dataclasses import dataclass

import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    n_embd: int = 64
    n_head: int = 4


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v)  # <-
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
'''),
    ("decoder layer: nn.MultiheadAttention self-attention without attn_mask", '''\
import torch
from torch import nn


class DecoderLayer(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x):
        y, _ = self.self_attn(x, x, x, need_weights=False)  # <-
        x = self.norm1(x + y)
        return self.norm2(x + self.ff(x))
'''),
    ("tiny LM with a generate loop; functional attention helper has no mask", '''\
import torch
from torch import nn
from torch.nn import functional as G


def attention(q, k, v):
    w = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
    return G.softmax(w, dim=-1) @ v  # <-


class TinyLM(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.lm_head = nn.Linear(d_model, vocab_size)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1), device=idx.device))
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.lm_head(x + attention(q, k, v))

    @torch.no_grad()
    def generate(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            probs = G.softmax(self(idx)[:, -1, :], dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, 1)], dim=1)
        return idx
'''),
    ("nn.TransformerEncoder used as a GPT body, no mask", '''\
import torch
from torch import nn


class GPT(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4, n_layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.body = nn.TransformerEncoder(layer, n_layers)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1), device=idx.device))
        x = self.body(x)  # <-
        return self.lm_head(x)
'''),
    ("nn.TransformerDecoderLayer called without tgt_mask", '''\
import torch
from torch import nn


class Seq2SeqDecoder(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, tgt, memory):
        return self.norm(self.layer(tgt, memory))  # <-
'''),
    ("einsum, documented as decoder-only, only a padding mask", '''\
import torch as th
from torch import nn


class DecoderOnlyAttention(nn.Module):
    """Self-attention of a decoder-only language model."""

    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x, keep):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = th.einsum("bihd,bjhd->bhij", q, k) * self.dim_head ** -0.5
        sim = sim.masked_fill(~keep[:, None, None, :], float("-inf"))
        attn = sim.softmax(dim=-1)  # <-
        return th.einsum("bhij,bjhd->bihd", attn, v).reshape(b, n, d)
'''),
]

VALID = [
    ("seed 2 CausalSelfAttention with its triu(1) buffer", '''\
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
    ("nanoGPT flash path with is_causal=True", '''\
from dataclasses import dataclass

import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    n_embd: int = 64
    n_head: int = 4


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).contiguous().view(B, T, C)
'''),
    ("BERT-style encoder: bidirectional, no causal mask needed", '''\
import math

import torch
from torch import nn


class BertSelfAttention(nn.Module):
    def __init__(self, hidden_size=64, num_heads=4):
        super().__init__()
        self.h, self.d = num_heads, hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states):
        B, T, C = hidden_states.shape
        q, k, v = (m(hidden_states).view(B, T, self.h, self.d).transpose(1, 2) for m in (self.query, self.key, self.value))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.d), dim=-1)
        return (probs @ v).transpose(1, 2).reshape(B, T, C)
'''),
    ("decoder layer: causal self-attention, cross-attention without a causal mask", '''\
import torch
from torch import nn


class DecoderLayer(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, memory):
        T = x.size(1)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        x = self.norm1(x + self.self_attn(x, x, x, attn_mask=future)[0])
        return self.norm2(x + self.cross_attn(x, memory, memory)[0])
'''),
    ("decoder layer takes the mask from its caller, which builds it", '''\
import math

import torch
from torch import nn


class DecoderLayer(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


class Decoder(nn.Module):
    def __init__(self, d_model=32, n_layers=2):
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer(d_model) for _ in range(n_layers)])

    def forward(self, x):
        T = x.size(1)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        for layer in self.layers:
            x = x + layer(x, mask)
        return x
'''),
    ("nn.TransformerEncoder as a GPT body with a square subsequent mask", '''\
import torch
from torch import nn


class GPT(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4, n_layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.body = nn.TransformerEncoder(layer, n_layers)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        T = idx.size(1)
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=idx.device)
        x = self.body(x, mask=mask, is_causal=True)
        return self.lm_head(x)
'''),
    ("sentence classifier: nn.TransformerEncoder without mask, softmax over classes", '''\
import torch
from torch import nn
import torch.nn.functional as F


class SentenceClassifier(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4, n_classes=3, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1), device=idx.device))
        return F.softmax(self.head(self.encoder(x).mean(dim=1)), dim=-1)
'''),
    ("encoder-decoder trained on shifted targets: the decoder is masked, the encoder needs no mask", """\
import torch
from torch import nn
from torch.nn import functional as F


class Translator(nn.Module):
    def __init__(self, vocab=40, d_model=32, n_heads=4):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d_model)
        self.tgt_embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(64, d_model)
        self.encoder = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.decoder = nn.TransformerDecoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, src, tgt):
        memory = self.encoder(self.src_embed(src) + self.pos(torch.arange(src.size(1))))
        causal = torch.triu(torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool), diagonal=1)
        x = self.tgt_embed(tgt) + self.pos(torch.arange(tgt.size(1)))
        return self.proj(self.decoder(x, memory, tgt_mask=causal))

    def training_loss(self, src, tgt):
        logits = self(src, tgt[:, :-1])
        return F.cross_entropy(logits.transpose(1, 2), tgt[:, 1:])
"""),
    ("named like a decoder, but nothing in the data flow is causal (names are not evidence)", """\
import torch
from torch import nn


class GPTDecoderBlock(nn.Module):
    \"\"\"A causal decoder block.\"\"\"

    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x):
        y, _ = self.attn(x, x, x, need_weights=False)
        return x + y
"""),
    ("masked-LM encoder trained with cross-entropy on unshifted labels, predictions by argmax", """\
import torch
from torch import nn
import torch.nn.functional as F


class MaskedLM(nn.Module):
    def __init__(self, vocab=50, d_model=32, n_heads=4, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=64, batch_first=True)
        self.body = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, ids, labels=None):
        x = self.tok(ids) + self.pos(torch.arange(ids.size(1)))
        logits = self.head(self.body(x))
        if labels is None:
            return logits.argmax(dim=-1)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), ignore_index=-100)
"""),
    ("LM sampled token by token with a padding mask and a causal mask", """\
import torch as th
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x, keep):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)
        sim = th.einsum("bihd,bjhd->bhij", q, k) * self.dim_head ** -0.5
        sim = sim.masked_fill(~keep[:, None, None, :], float("-inf"))
        future = th.ones(n, n, dtype=th.bool).triu(1)
        sim = sim.masked_fill(future, float("-inf"))
        return th.einsum("bhij,bjhd->bihd", sim.softmax(dim=-1), v).reshape(b, n, d)


class LM(nn.Module):
    def __init__(self, vocab=30, dim=64, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.emb = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(128, dim)
        self.attn = Attention(dim)
        self.to_logits = nn.Linear(dim, vocab)

    def forward(self, ids):
        x = self.emb(ids) + self.pos(th.arange(ids.shape[1]))
        return self.to_logits(x + self.attn(x, ids != self.pad_id))

    def complete(self, ids, steps=8):
        for _ in range(steps):
            probs = self(ids)[:, -1].softmax(dim=-1)
            ids = th.cat([ids, th.multinomial(probs, 1)], dim=-1)
        return ids


if __name__ == "__main__":
    LM().complete(th.randint(1, 30, (2, 5)))
"""),
    ("BertForMaskedLM: a masked LM is bidirectional (no next-token loss, no sampling)", '''\
import math

import torch
from torch import nn


class BertForMaskedLM(nn.Module):
    """A masked language model sees both sides of each token: no causal mask."""

    def __init__(self, vocab_size=100, hidden_size=64, num_heads=4):
        super().__init__()
        self.h, self.d = num_heads, hidden_size // num_heads
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.pos = nn.Embedding(128, hidden_size)
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)

    def forward(self, ids):
        B, T = ids.shape
        x = self.embed(ids) + self.pos(torch.arange(T, device=ids.device))
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.d).permute(2, 0, 3, 1, 4)
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.d), dim=-1)
        return (probs @ v).transpose(1, 2).reshape(B, T, -1)
'''),
    ("a block documented as an encoder, no causal evidence in the data flow", '''\
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    """Encoder block of an encoder-decoder model: bidirectional self-attention over the source."""

    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return y.transpose(1, 2).reshape(B, T, C)
'''),
    ("classifier trained with cross-entropy on unshifted labels", '''\
import torch
import torch.nn.functional as F
from torch import nn


class TextClassifier(nn.Module):
    def __init__(self, vocab_size=1000, d_model=64, n_heads=4, n_classes=5, max_len=128):
        super().__init__()
        self.n_heads = n_heads
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, ids):
        B, T = ids.shape
        x = self.embed(ids) + self.pos(torch.arange(T, device=ids.device))
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, -1)
        return self.head(y.mean(dim=1))


def train_step(model, ids, labels, optimizer):
    loss = F.cross_entropy(model(ids), labels)
    loss.backward()
    optimizer.step()
    return loss
'''),
    ("vocabulary head but no next-token loss or sampling in the file", '''\
import torch
import torch.nn.functional as F
from torch import nn


class Denoiser(nn.Module):
    """Reconstructs corrupted tokens from both sides: logits over the vocabulary, no training here."""

    def __init__(self, vocab_size=1000, d_model=64, n_heads=4, max_len=128):
        super().__init__()
        self.n_heads = n_heads
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.to_logits = nn.Linear(d_model, vocab_size)

    def forward(self, ids):
        B, T = ids.shape
        x = self.embed(ids) + self.pos(torch.arange(T, device=ids.device))
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, -1)
        return self.to_logits(y)
'''),
]

#: INVALID examples the engine cannot see yet, with the reason. They are not run as INVALID;
#: tests/test_rule_examples.py checks that each is still missed (so a fix must move it back).
KNOWN_MISSES: dict[str, str] = {}
