"""A causal ALiBi attention written with einsum: scores scaled by head_dim ** -0.5, a per-head
linear distance penalty added to them (no positional table is added to the tokens), and a causal
additive bias of -inf strictly above the diagonal.

Dims: b batch, i query time, j key time, h heads, e head dim, d dim.
"""

import math

import torch
from torch import nn


def alibi_slopes(heads: int) -> torch.Tensor:
    """Geometric slopes 2^(-8/h), 2^(-16/h), ... (heads a power of two)."""
    return torch.tensor([2.0 ** (-8.0 * (i + 1) / heads) for i in range(heads)])


class ALiBiCausalAttention(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4):
        super().__init__()
        assert dim % heads == 0, f"dim {dim} must be divisible by heads {heads}"
        assert math.log2(heads).is_integer(), f"heads {heads} must be a power of two for these slopes"
        self.heads, self.dim_head = heads, dim // heads
        self.scale = self.dim_head**-0.5
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)
        self.register_buffer("slopes", alibi_slopes(heads).view(heads, 1, 1), persistent=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)  # (b, n, h, e)
        sim = torch.einsum("bihe,bjhe->bhij", q, k) * self.scale  # (b, h, i, j)
        pos = torch.arange(n, device=x.device)
        distance = (pos[:, None] - pos[None, :]).clamp(min=0)  # (i, j): how far back key j is
        sim = sim - self.slopes * distance  # ALiBi: penalise distant keys
        causal = torch.full((n, n), float("-inf"), device=x.device).triu(1)  # -inf on the future
        attn = (sim + causal).softmax(dim=-1)
        out = torch.einsum("bhij,bjhe->bihe", attn, v).reshape(b, n, d)  # heads next to e before merging
        return self.to_out(out)


class ALiBiDecoder(nn.Module):
    def __init__(self, vocab_size: int = 100, dim: int = 64, heads: int = 4, depth: int = 2):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, dim)
        self.layers = nn.ModuleList([ALiBiCausalAttention(dim, heads) for _ in range(depth)])
        self.norms = nn.ModuleList([nn.LayerNorm(dim) for _ in range(depth)])
        self.lm_head = nn.Linear(dim, vocab_size)

    def forward(self, idx):
        x = self.tok_emb(idx)  # position enters through the ALiBi bias
        for norm, attn in zip(self.norms, self.layers):
            x = x + attn(norm(x))
        return self.lm_head(x)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = ALiBiDecoder()
    model.eval()
    idx = torch.randint(0, 100, (2, 10))
    with torch.no_grad():
        logits = model(idx)
        idx2 = idx.clone()
        idx2[:, -1] = (idx2[:, -1] + 1) % 100
        causal = torch.allclose(logits[:, :-1], model(idx2)[:, :-1], atol=1e-5)
    print(f"logits {tuple(logits.shape)}; causal: {causal}")
