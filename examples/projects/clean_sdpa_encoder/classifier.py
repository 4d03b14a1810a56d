"""An encoder-only classifier (trap: bidirectional attention is right for an encoder)."""

import torch
import torch.nn as nn

from layers import EncoderLayer
from masks import keep_mask
from positional import PositionalEncoding


class TextClassifier(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, n_heads=4, n_classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.positions = PositionalEncoding(d_model)
        self.layer = EncoderLayer(d_model, n_heads)
        self.classify = nn.Linear(d_model, n_classes)

    def forward(self, idx, lengths):
        x = self.positions(self.embed(idx))
        x = self.layer(x, keep_mask(lengths, idx.shape[1]))
        return self.classify(x[:, 0])


if __name__ == "__main__":
    model = TextClassifier()
    idx = torch.randint(0, 100, (2, 10))
    out = model(idx, torch.tensor([10, 6]))
    assert out.shape == (2, 3) and not torch.isnan(out).any()
    # A padded position must not change the result.
    changed = idx.clone()
    changed[1, 8] = (changed[1, 8] + 1) % 100
    assert torch.allclose(model(changed, torch.tensor([10, 6])), out, atol=1e-6)
