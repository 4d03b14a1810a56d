import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossByKeyword(nn.Module):
    def __init__(self, vocab=100, d=32, h=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.memory_emb = nn.Embedding(vocab, d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)

    def forward(self, ids, memory_ids):
        x = self.emb(ids)
        memory = self.memory_emb(memory_ids)
        out, _ = self.attn(query=x, key=memory, value=memory)
        return out


class CrossByPosition(CrossByKeyword):
    def forward(self, ids, memory_ids):
        x = self.emb(ids)
        memory = self.memory_emb(memory_ids)
        out, _ = self.attn(x, memory, memory)
        return out


class SdpaCross(nn.Module):
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
        by_keyword = F.scaled_dot_product_attention(query=q, key=kv, value=kv)
        by_position = F.scaled_dot_product_attention(q, kv, kv)
        return by_keyword + by_position
