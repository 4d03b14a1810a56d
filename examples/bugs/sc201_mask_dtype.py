"""SC201 mask-dtype: seed 2's CausalSelfAttention with the ``.bool()`` dropped from its mask buffer.

Bug: ``torch.triu(torch.ones(L, L), diagonal=1)`` is a float 0/1 tensor; ``masked_fill`` only
accepts bool masks. How it shows: run this file; the forward pass raises
``RuntimeError: masked_fill_ only supports boolean masks``.
"""

# b batch, t time, c d_model, h heads, k head dim
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, max_len: int = 512):
        super().__init__()
        assert d_model % n_head == 0, f"d_model {d_model} % n_head {n_head} != 0"
        self.n_head = n_head
        self.d_k = d_model // n_head
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        self.W_O = nn.Linear(d_model, d_model)
        mask = torch.triu(torch.ones(max_len, max_len), diagonal=1)  # 1.0 above the diagonal
        self.register_buffer("mask", mask)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.W_QKV(x).reshape(B, T, 3, self.n_head, self.d_k)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, h, T, k)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k**0.5)  # (B, h, T, T)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))  # BUG: SC201
        attn = scores.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, C)
        return self.W_O(out)


if __name__ == "__main__":
    attn = CausalSelfAttention(d_model=64, n_head=4)
    try:
        attn(torch.randn(2, 10, 64))
        print("SC201: no error (unexpected)")
    except RuntimeError as err:
        print(f"SC201: float 0/1 mask given to masked_fill -> RuntimeError: {err}")
