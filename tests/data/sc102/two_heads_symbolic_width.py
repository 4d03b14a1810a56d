import math
import torch
import torch.nn as nn


class TwoHeads(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        assert d_model % 2 == 0
        self.n_heads = 2
        self.d_model = d_model
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.d_model // self.n_heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1) / math.sqrt(self.d_model)).softmax(dim=-1)
        return att @ v
