"""SC507 batch-first-mismatch: rule examples.

Marker (``# <-``): the construction of the ``nn.MultiheadAttention`` / ``nn.Transformer*`` layer
(for a stack, of the layer it repeats), built without ``batch_first=True``, that is called on a
provably batch-first ``(b, t, d)`` tensor: where ``batch_first=True`` goes.
"""

INVALID = [
    ("seed 1: MultiheadAttention with a (B, T) key_padding_mask from the token ids", '''\
import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, vocab_size=100, d_model=64, n_heads=4, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(128, d_model)
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=0.1)  # <-
        self.norm = nn.LayerNorm(d_model)

    def forward(self, ids):
        batch_size, seq_len = ids.size()
        x = self.embedding(ids) + self.pos(torch.arange(seq_len))
        padding = ids == self.pad_id
        attn_out, _ = self.self_attn(x, x, x, key_padding_mask=padding)
        return self.norm(x + attn_out)
'''),
    ("nanoGPT-style decoder: TransformerEncoderLayer with a (T, T) causal mask", '''\
import torch
import torch.nn as nn


class GPT(nn.Module):
    def __init__(self, vocab_size=100, n_embd=64, n_head=4, block_size=32):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.block = nn.TransformerEncoderLayer(n_embd, n_head, 4 * n_embd)  # <-
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        causal = nn.Transformer.generate_square_subsequent_mask(t)
        x = self.block(x, src_mask=causal)
        return self.lm_head(x)
'''),
    ("Hugging Face-style: nn.TransformerEncoder stack with src_key_padding_mask = attention_mask == 0", '''\
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab_size=100, hidden_size=64, num_heads=4, num_layers=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden_size)
        self.position_embeddings = nn.Embedding(512, hidden_size)
        layer = nn.TransformerEncoderLayer(hidden_size, num_heads, 4 * hidden_size)  # <-
        self.encoder = nn.TransformerEncoder(layer, num_layers)

    def forward(self, input_ids, attention_mask):
        batch, seq = input_ids.shape
        hidden_states = self.embeddings(input_ids) + self.position_embeddings(torch.arange(seq))
        attention_mask = attention_mask.view(batch, seq)
        return self.encoder(hidden_states, src_key_padding_mask=attention_mask == 0)
'''),
    ("einops projections, then a batch_first=False MHA next to a batch_first=True one", '''\
import torch
import torch.nn as nn
from einops import rearrange


class TwoStage(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.local_attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.global_attn = nn.MultiheadAttention(dim, heads)  # <-

    def forward(self, x):
        b, n, d = x.shape
        y, _ = self.local_attn(x, x, x)
        z, _ = self.global_attn(y, y, y)
        return rearrange(z, "b n d -> b d n")
'''),
    ("functional: nn.Transformer called on (b, s, d) / (b, t, d) with padding masks", '''\
import torch
import torch.nn as nn


def translate(model: nn.Transformer, src: torch.Tensor, tgt: torch.Tensor, src_pad: torch.Tensor):
    return model(src, tgt, src_key_padding_mask=src_pad)


class Seq2Seq(nn.Module):
    def __init__(self, vocab=100, d_model=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)
        self.transformer = nn.Transformer(d_model, nhead=4, num_encoder_layers=2, num_decoder_layers=2)  # <-

    def forward(self, src_ids, tgt_ids):
        b, s = src_ids.shape
        _, t = tgt_ids.shape
        src, tgt = self.emb(src_ids), self.emb(tgt_ids)
        return self.transformer(src, tgt, src_key_padding_mask=src_ids == 0)
'''),
    ("aliased imports: from torch.nn import TransformerDecoderLayer as DecLayer", '''\
import torch as th
from torch import nn as tnn
from torch.nn import TransformerDecoderLayer as DecLayer


class Decoder(tnn.Module):
    def __init__(self, vocab=100, width=64, heads=4):
        super().__init__()
        self.tok = tnn.Embedding(vocab, width)
        self.pos = tnn.Embedding(128, width)
        self.layer = DecLayer(width, heads)  # <-

    def forward(self, ids, memory):
        bsz, seqlen = ids.shape
        h = self.tok(ids) + self.pos(th.arange(seqlen))
        pad = ids.eq(0)
        return self.layer(h, memory, tgt_key_padding_mask=pad)
'''),
    ("nanoGPT-style: token + position embeddings (positions along axis 1) into a seq-first MHA", '''\
import torch
import torch.nn as nn


class TinyLM(nn.Module):
    def __init__(self, vocab_size=100, n_embd=64, n_head=4, block_size=32):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.attn = nn.MultiheadAttention(n_embd, n_head)  # <-
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        b, t = idx.size()
        x = self.wte(idx) + self.wpe(torch.arange(t))
        y, _ = self.attn(x, x, x, need_weights=False)
        return self.lm_head(x + y)
'''),
]

VALID = [
    ("seed 1: batch_first=True", '''\
import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, vocab_size=100, d_model=64, n_heads=4, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(128, d_model)
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=0.1, batch_first=True)

    def forward(self, ids):
        batch_size, seq_len = ids.size()
        x = self.embedding(ids) + self.pos(torch.arange(seq_len))
        attn_out, _ = self.self_attn(x, x, x, key_padding_mask=ids == self.pad_id)
        return x + attn_out
'''),
    ("seed 1: transposed to (T, B, D) first, padding mask stays (B, T)", '''\
import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, vocab_size=100, d_model=64, n_heads=4, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(128, d_model)
        self.self_attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, ids):
        batch_size, seq_len = ids.size()
        x = (self.embedding(ids) + self.pos(torch.arange(seq_len))).transpose(0, 1)
        attn_out, _ = self.self_attn(x, x, x, key_padding_mask=ids == self.pad_id)
        return (x + attn_out).transpose(0, 1)
'''),
    ("nanoGPT-style: permute(1, 0, 2) before the layer, (T, T) causal mask", '''\
import torch
import torch.nn as nn


class GPT(nn.Module):
    def __init__(self, vocab_size=100, n_embd=64, n_head=4, block_size=32):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.block = nn.TransformerEncoderLayer(n_embd, n_head, 4 * n_embd)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = (self.wte(idx) + self.wpe(pos)).permute(1, 0, 2)
        causal = nn.Transformer.generate_square_subsequent_mask(t)
        return self.block(x, src_mask=causal).permute(1, 0, 2)
'''),
    ("Hugging Face-style: encoder layer built with batch_first=True", '''\
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab_size=100, hidden_size=64, num_heads=4, num_layers=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden_size)
        self.position_embeddings = nn.Embedding(512, hidden_size)
        layer = nn.TransformerEncoderLayer(hidden_size, num_heads, 4 * hidden_size, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers)

    def forward(self, input_ids, attention_mask):
        batch, seq = input_ids.shape
        attention_mask = attention_mask.view(batch, seq)
        return self.encoder(self.embeddings(input_ids) + self.position_embeddings(torch.arange(seq)), src_key_padding_mask=attention_mask == 0)
'''),
    ("einops: rearrange to (n, b, d) for the seq-first layer", '''\
import torch
import torch.nn as nn
from einops import rearrange


class TwoStage(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.local_attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.global_attn = nn.MultiheadAttention(dim, heads)

    def forward(self, x):
        b, n, d = x.shape
        y, _ = self.local_attn(x, x, x)
        y = rearrange(y, "b n d -> n b d")
        z, _ = self.global_attn(y, y, y)
        return rearrange(z, "n b d -> b n d")
'''),
    ("functional: seq-first data from the start (ids are (T, B))", '''\
import torch
import torch.nn as nn


class Seq2Seq(nn.Module):
    def __init__(self, vocab=100, d_model=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)
        self.transformer = nn.Transformer(d_model, nhead=4, num_encoder_layers=2, num_decoder_layers=2)

    def forward(self, src_ids, tgt_ids):
        s, b = src_ids.shape
        src, tgt = self.emb(src_ids), self.emb(tgt_ids)
        return self.transformer(src, tgt, src_key_padding_mask=src_ids.t() == 0)
'''),
    ("aliased imports: DecLayer(width, heads, batch_first=True)", '''\
import torch as th
from torch import nn as tnn
from torch.nn import TransformerDecoderLayer as DecLayer


class Decoder(tnn.Module):
    def __init__(self, vocab=100, width=64, heads=4):
        super().__init__()
        self.tok = tnn.Embedding(vocab, width)
        self.pos = tnn.Embedding(128, width)
        self.layer = DecLayer(width, heads, batch_first=True)

    def forward(self, ids, memory):
        bsz, seqlen = ids.shape
        return self.layer(self.tok(ids) + self.pos(th.arange(seqlen)), memory, tgt_key_padding_mask=ids.eq(0))
'''),
    ("nanoGPT-style: positions added, then transposed to (T, B, D) for the seq-first MHA", '''\
import torch
import torch.nn as nn


class TinyLM(nn.Module):
    def __init__(self, vocab_size=100, n_embd=64, n_head=4, block_size=32):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.attn = nn.MultiheadAttention(n_embd, n_head)

    def forward(self, idx):
        b, t = idx.size()
        x = (self.wte(idx) + self.wpe(torch.arange(t))).transpose(0, 1)
        y, _ = self.attn(x, x, x, need_weights=False)
        return (x + y).transpose(0, 1)
'''),
    ("PyTorch tutorial: seq-first ids (T, B) and a (max_len, 1, d) positional table", '''\
import math

import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model=64, max_len=500):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(0)]


class TransformerModel(nn.Module):
    def __init__(self, ntoken=100, d_model=64, nhead=4):
        super().__init__()
        self.embedding = nn.Embedding(ntoken, d_model)
        self.pos_encoder = PositionalEncoding(d_model)
        self.layer = nn.TransformerEncoderLayer(d_model, nhead, 128)

    def forward(self, src):
        seq_len, batch = src.shape
        x = self.pos_encoder(self.embedding(src) * math.sqrt(64))
        mask = nn.Transformer.generate_square_subsequent_mask(seq_len)
        return self.layer(x, src_mask=mask)
'''),
]
