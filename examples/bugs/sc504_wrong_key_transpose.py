"""SC504 wrong-key-transpose: seed-style attention that transposes the keys over heads and time.

Bug: ``K.transpose(1, 2)`` on keys of shape (batch, heads, seq, d_k) gives (batch, seq, heads, d_k),
so ``Q @ K'`` is not ``Q @ K^T``. How it shows: run this file; the matmul raises
``RuntimeError: The size of tensor a (4) must match the size of tensor b (10)`` (when seq == heads
it would silently compute meaningless scores).
"""

# b batch, h heads, t time, d_k head dim
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int = 64, n_heads: int = 4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch_size, seq_len, _ = x.size()
        Q = self.W_Q(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        K_t = K.transpose(1, 2)  # BUG: SC504
        scores = torch.matmul(Q, K_t) / math.sqrt(self.d_k)
        return torch.softmax(scores, dim=-1)


if __name__ == "__main__":
    mha = MultiHeadAttention()
    try:
        mha(torch.randn(2, 10, 64))
        print("SC504: no error (unexpected)")
    except RuntimeError as err:
        print(f"SC504: keys transposed over (heads, seq) -> RuntimeError: {err}")
