import torch
import torch.nn as nn
import torch.nn.functional as F


class SdpaAttention(nn.Module):
    def __init__(self, n_heads, d_k, head_dim):
        super().__init__()
        self.n_heads = n_heads
        self.d_k = d_k
        self.head_dim = head_dim
        self.qkv = nn.Linear(n_heads * d_k, 3 * n_heads * d_k)

    def forward(self, x):
        B, T, C = x.shape
        assert self.head_dim == self.d_k
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, scale=1 / self.head_dim)
