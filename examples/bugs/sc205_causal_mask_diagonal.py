"""SC205 causal-mask-diagonal: a decoder block whose causal mask also blocks the diagonal.

Bug: ``torch.triu(ones)`` with the default ``diagonal=0`` blocks the future *and* the token itself.
Row 0 then has every key masked: softmax over all ``-inf`` is NaN, and the NaN spreads through
every later layer (the fused SDPA path of recent PyTorch returns zeros for such a row instead, so
token 0 silently attends to nothing). How it shows: run this file; the first position is NaN.
"""

# b batch, t time, d d_model
import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model: int = 32, n_heads: int = 4):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        T = x.size(1)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device))  # BUG: SC205
        h = self.ln1(x)
        y, _ = self.self_attn(h, h, h, attn_mask=future)
        x = x + y
        return x + self.ffn(self.ln2(x))


if __name__ == "__main__":
    torch.manual_seed(0)
    out = DecoderBlock().train()(torch.randn(2, 5, 32))
    nan_rows = torch.isnan(out).any(dim=-1)[0].tolist()
    print(f"SC205: triu(..., diagonal=0) blocks the diagonal; NaN at positions {[i for i, bad in enumerate(nan_rows) if bad]}.")
