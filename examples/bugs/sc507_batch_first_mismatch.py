"""SC507 batch-first-mismatch: an encoder that feeds (batch, seq, d) to nn.MultiheadAttention
built without batch_first=True.

Bug: the layer reads (seq, batch, d), so it attends across the examples of the batch. The shapes
only fit by accident: the key padding mask is (batch, seq) as documented, and the layer checks it
against (key.shape[1], key.shape[0]). How it shows: run this file; the layer raises
``AssertionError: expecting key_padding_mask shape of (16, 2), but got torch.Size([2, 16])``
(with batch == seq it would run and mix the examples of the batch).
"""

# b batch, t time, d d_model
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, vocab_size: int = 100, d_model: int = 64, n_heads: int = 4, max_len: int = 64, pad_id: int = 0):
        super().__init__()
        self.pad_id = pad_id
        self.tok = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.pos = nn.Embedding(max_len, d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads)  # BUG: SC507 (no batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        b, t = ids.shape
        x = self.tok(ids) + self.pos(torch.arange(t))  # (b, t, d)
        padding = ids == self.pad_id  # (b, t): True at padding
        attn_out, _ = self.attn(x, x, x, key_padding_mask=padding)  # (batch, seq, d) given here
        return self.norm(x + attn_out)


if __name__ == "__main__":
    encoder = Encoder()
    ids = torch.randint(1, 100, (2, 16))
    try:
        encoder(ids)
        print("SC507: no error (unexpected)")
    except (AssertionError, RuntimeError) as err:
        print(f"SC507: (batch, seq, d) given to a seq-first layer -> {type(err).__name__}: {err}")
