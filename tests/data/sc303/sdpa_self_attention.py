import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, vocab=100, d=32, h=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.h = h

    def forward(self, ids):
        x = self.emb(ids)
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(query=q, key=k, value=v, is_causal=True)


class BlockByPosition(nn.Module):
    def __init__(self, vocab=100, d=32, h=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.h = h

    def forward(self, ids):
        x = self.emb(ids)
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
