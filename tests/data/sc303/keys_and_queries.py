import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


class SdpaCrossValueByKeyword(nn.Module):
    """Cross-attention with the value given by keyword: the key is SDPA's argument 1."""

    def __init__(self, vocab=100, d=32, h=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.memory_emb = nn.Embedding(vocab, d)
        self.h = h

    def split(self, x):
        b, t, d = x.shape
        return x.view(b, t, self.h, d // self.h).transpose(1, 2)

    def forward(self, ids, memory_ids):
        q = self.split(self.emb(ids))
        kv = self.split(self.memory_emb(memory_ids))
        return F.scaled_dot_product_attention(q, kv, value=kv)


class MultiheadCrossValueByKeyword(nn.Module):
    """The same with nn.MultiheadAttention: the key is argument 2 after the module."""

    def __init__(self, vocab=100, d=32, h=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.memory_emb = nn.Embedding(vocab, d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)

    def forward(self, ids, memory_ids):
        memory = self.memory_emb(memory_ids)
        return self.attn(self.emb(ids), memory, value=memory, need_weights=False)[0]


class CrossToEncoderStates(nn.Module):
    """Keys of a known shape that carry nothing else (annotated encoder states): cross-attention."""

    def __init__(self, vocab=100, d=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.q = nn.Linear(d, d)

    def forward(self, ids, memory: Float[Tensor, "b s 32"]):
        return F.scaled_dot_product_attention(self.q(self.tok(ids)), memory, memory)


class RetrievalCrossAttention(nn.Module):
    """Keys from other tokens whose shape is unknown (retrieved neighbours, concatenated)."""

    def __init__(self, vocab=100, d=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.neighbour_emb = nn.Embedding(vocab, d)
        self.q = nn.Linear(d, d)

    def forward(self, ids, neighbours):
        memory = torch.cat([self.neighbour_emb(neighbours[:, i]) for i in range(neighbours.size(1))], dim=1)
        return F.scaled_dot_product_attention(self.q(self.tok(ids)), memory, memory)


class BagAttentionPool(nn.Module):
    """Attention pooling of bare token embeddings with a query the caller passes (a decoder state)."""

    def __init__(self, vocab=100, d=32):
        super().__init__()
        self.src_emb = nn.Embedding(vocab, d)
        self.attn = nn.Linear(d, d)

    def forward(self, src_ids, hidden):
        enc = self.src_emb(src_ids)
        q = hidden[-1].unsqueeze(1)
        weights = torch.softmax(q @ self.attn(enc).transpose(-2, -1) / math.sqrt(32), dim=-1)
        return weights @ enc


class GruAttentionPool(BagAttentionPool):
    """The same over a GRU's states: the recurrence orders the tokens."""

    def __init__(self, vocab=100, d=32):
        super().__init__(vocab, d)
        self.encoder = nn.GRU(d, d, batch_first=True)

    def forward(self, src_ids, hidden):
        enc, _ = self.encoder(self.src_emb(src_ids))
        q = hidden[-1].unsqueeze(1)
        weights = torch.softmax(q @ self.attn(enc).transpose(-2, -1) / math.sqrt(32), dim=-1)
        return weights @ enc


if __name__ == "__main__":
    ids, other = torch.randint(0, 100, (2, 7)), torch.randint(0, 100, (2, 5))
    assert SdpaCrossValueByKeyword()(ids, other).shape == (2, 4, 7, 8)
    assert MultiheadCrossValueByKeyword()(ids, other).shape == (2, 7, 32)
    assert CrossToEncoderStates()(ids, torch.randn(2, 5, 32)).shape == (2, 7, 32)
    assert RetrievalCrossAttention()(ids, torch.randint(0, 100, (2, 3, 4))).shape == (2, 7, 32)
    hidden = torch.randn(1, 2, 32)
    assert BagAttentionPool()(ids, hidden).shape == (2, 1, 32)
    assert GruAttentionPool()(ids, hidden).shape == (2, 1, 32)
    print("ok")
