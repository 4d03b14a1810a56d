import torch
import torch.nn as nn


def attend(q, k, v):
    batch, heads, length, dim = q.shape
    scores = q @ k.transpose(-2, -1) * 0.125
    return scores.softmax(dim=-1) @ v


class Attention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        return attend(q, k, v)
