import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, n_heads, d_k, head_dim):
        super().__init__()
        self.n_heads = n_heads
        self.d_k = d_k
        self.head_dim = head_dim
        self.qkv = nn.Linear(n_heads * head_dim, 3 * n_heads * head_dim)

    def forward(self, x):
        B, T, C = x.shape
        assert self.head_dim == self.d_k
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1) / self.d_k).softmax(dim=-1)
        return att @ v
