import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, vocab=100, d=32, h=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)

    def forward(self, ids):
        x = self.emb(ids)
        out, _ = self.attn(query=x, key=x, value=x)
        return out


class EncoderByPosition(nn.Module):
    def __init__(self, vocab=100, d=32, h=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)

    def forward(self, ids):
        x = self.emb(ids)
        out, _ = self.attn(x, x, x)
        return out
