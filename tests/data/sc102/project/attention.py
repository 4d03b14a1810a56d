import torch
import torch.nn as nn

from consts import HEAD_DIM, SCALE


class Attention(nn.Module):
    def __init__(self, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(n_heads * HEAD_DIM, 3 * n_heads * HEAD_DIM)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, HEAD_DIM).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1) * SCALE).softmax(dim=-1)
        return att @ v
