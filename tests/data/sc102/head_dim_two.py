import torch
import torch.nn as nn


class TinyHeads(nn.Module):
    def __init__(self, d_model=8, n_heads=4):
        super().__init__()
        self.h = n_heads
        self.d_k = d_model // n_heads
        self.qk = nn.Linear(d_model, 2 * d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k = self.qk(x).chunk(2, dim=-1)
        q = q.view(b, t, self.h, self.d_k).transpose(1, 2)
        k = k.view(b, t, self.h, self.d_k).transpose(1, 2)
        by_dk = torch.softmax(q @ k.transpose(-2, -1) / 2, dim=-1)
        times_sqrt = torch.softmax(q @ k.transpose(-2, -1) * 2 ** 0.5, dim=-1)
        tempered = torch.softmax(q @ k.transpose(-2, -1) * 1.5, dim=-1)
        return by_dk, times_sqrt, tempered
