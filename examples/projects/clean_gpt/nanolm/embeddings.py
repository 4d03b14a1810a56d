"""Token embeddings; the model ties its output head to this weight."""

import torch.nn as nn


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, n_embd):
        super().__init__()
        self.weight_table = nn.Embedding(vocab_size, n_embd)

    def forward(self, idx):
        return self.weight_table(idx)
