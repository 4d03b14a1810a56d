"""SC101 missing-attention-scale: seed 1's multi-head attention with the 1/sqrt(d_k) left out.

Bug: ``scores = Q @ K^T`` goes straight into softmax. With d_k = 64 the raw scores have a standard
deviation of several units instead of about one, so softmax is close to one-hot and its gradient
vanishes. How it shows: run this file; it prints the score spread and how peaked the rows are,
next to what the scaled version would give.
"""

# b batch, t time, d d_model, h heads, k head dim
import torch
import torch.nn as nn
import torch.nn.functional as F


class SimpleMultiHeadAttention(nn.Module):
    def __init__(self, d_model: int = 512, n_heads: int = 8):
        super().__init__()
        assert d_model % n_heads == 0, f"d_model {d_model} must be divisible by n_heads {n_heads}"
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.W_O = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        b, t, d = x.size()
        Q = self.W_Q(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)  # (b, h, t, k)
        K = self.W_K(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        V = self.W_V(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(-2, -1))  # BUG: SC101 (b, h, t, t), never scaled
        attn_weights = F.softmax(scores, dim=-1)
        context = torch.matmul(attn_weights, V).transpose(1, 2).contiguous().view(b, t, d)
        return self.W_O(context), scores, attn_weights


if __name__ == "__main__":
    torch.manual_seed(0)
    attn = SimpleMultiHeadAttention()
    x = torch.randn(2, 16, 512)
    _, scores, weights = attn(x)
    peak = weights.max(dim=-1).values.mean().item()
    scaled_peak = F.softmax(scores / attn.d_k**0.5, dim=-1).max(dim=-1).values.mean().item()
    print(
        f"SC101: unscaled scores have std {scores.std().item():.1f} ({scores.std().item() / attn.d_k**0.5:.2f} "
        f"after / sqrt({attn.d_k})); "
        f"mean top attention weight {peak:.2f} vs {scaled_peak:.2f} when scaled: softmax saturates."
    )
