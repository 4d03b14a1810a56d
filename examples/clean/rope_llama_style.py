"""A LLaMA-style causal block with rotary position embeddings (RoPE): no positional table is added
to the tokens, position enters through rotating q and k. The 1/sqrt(head_dim) scale is folded into
q before the matmul (``q = q * self.scale`` with ``self.scale = head_dim ** -0.5``).

Dims (x-transformers legend): b batch, n time, d dim, h heads, e head dim, v vocab.
"""

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, max_len: int = 256, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))  # (e/2,)
        freqs = torch.outer(torch.arange(max_len).float(), inv_freq)  # (max_len, e/2)
        emb = torch.cat((freqs, freqs), dim=-1)  # (max_len, e)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, q, k):
        n = q.size(-2)
        cos, sin = self.cos_cached[:n], self.sin_cached[:n]  # (n, e)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)


class CausalRotaryAttention(nn.Module):
    def __init__(self, *, dim: int, heads: int):
        super().__init__()
        assert dim % heads == 0, f"dim {dim} must be divisible by heads {heads}"
        self.heads = heads
        head_dim = dim // heads
        self.scale = head_dim**-0.5
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim, bias=False)
        self.rotary = RotaryEmbedding(head_dim)

    def forward(self, x):
        n = x.size(1)
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h e) -> b h n e", h=self.heads) for t in (q, k, v))
        q, k = self.rotary(q, k)
        q = q * self.scale
        sim = q @ k.transpose(-2, -1)  # (b, h, n, n)
        blocked = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        attn = sim.masked_fill(blocked, float("-inf")).softmax(dim=-1)
        return self.to_out(rearrange(attn @ v, "b h n e -> b n (h e)"))


class RotaryLM(nn.Module):
    def __init__(self, *, vocab_size: int = 100, dim: int = 64, heads: int = 4, depth: int = 2):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, dim)
        self.attn_norms = nn.ModuleList([RMSNorm(dim) for _ in range(depth)])
        self.attns = nn.ModuleList([CausalRotaryAttention(dim=dim, heads=heads) for _ in range(depth)])
        self.ff_norms = nn.ModuleList([RMSNorm(dim) for _ in range(depth)])
        self.ffs = nn.ModuleList([nn.Sequential(nn.Linear(dim, 4 * dim), nn.SiLU(), nn.Linear(4 * dim, dim)) for _ in range(depth)])
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab_size, bias=False)

    def forward(self, idx):
        x = self.tok_emb(idx)  # position comes from RoPE inside attention
        for attn_norm, attn, ff_norm, ff in zip(self.attn_norms, self.attns, self.ff_norms, self.ffs):
            x = x + attn(attn_norm(x))
            x = x + ff(ff_norm(x))
        return self.lm_head(self.norm(x))  # (b, n, v)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = RotaryLM()
    model.eval()
    idx = torch.randint(0, 100, (2, 12))
    with torch.no_grad():
        logits = model(idx)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, 100), idx[:, 1:].reshape(-1))
        swapped = idx.flip(dims=[1])
        order_matters = not torch.allclose(model(swapped)[:, -1], logits[:, -1], atol=1e-4)
    print(f"logits {tuple(logits.shape)}, next-token loss {loss.item():.2f}; token order matters: {order_matters}")
