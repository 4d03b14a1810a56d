"""SC404 layernorm-wrong-dim: a Transformer block whose final LayerNorm is built for max_len.

Bug: ``nn.LayerNorm(max_len)`` on token states of shape (B, T, d_model): the normalized shape
must be the feature dim d_model. How it shows: run this file; the LayerNorm raises
``RuntimeError: Given normalized_shape=[128], expected input with shape [*, 128]``.
"""

# b batch, t time, d d_model
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, vocab_size: int = 100, d_model: int = 64, n_heads: int = 4, max_len: int = 128):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(max_len)  # BUG: SC404

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        b, t = ids.shape
        x = self.tok(ids) + self.pos(torch.arange(t))  # (b, t, d)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        attn_out, _ = self.attn(x, x, x, attn_mask=causal)
        return self.norm(x + attn_out)


if __name__ == "__main__":
    block = Block()
    try:
        block(torch.randint(0, 100, (2, 16)))
        print("SC404: no error (unexpected)")
    except RuntimeError as err:
        print(f"SC404: LayerNorm(max_len) on (B, T, d_model) -> RuntimeError: {err}")
