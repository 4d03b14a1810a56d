"""SC602 cross-entropy-shape: a nanoGPT-style bigram model whose loss skips the flattening.

Bug: ``F.cross_entropy(logits, targets)`` with logits (B, T, V) and targets (B, T). cross_entropy
reads dim 1 as the classes, so it takes T for the vocabulary. How it shows: run this file;
``cross_entropy`` raises ``RuntimeError: Expected target size [4, 65], got [4, 8]`` (and when T
happens to equal V it runs and learns nothing).
"""

# B batch, T time (block_size), C n_embd, V vocab_size
import torch
import torch.nn as nn
from torch.nn import functional as F

vocab_size, n_embd, block_size = 65, 32, 8


class BigramLanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets=None):
        logits = self.lm_head(self.token_embedding_table(idx))  # (B, T, V)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits, targets)  # BUG: SC602
        return logits, loss


if __name__ == "__main__":
    torch.manual_seed(0)
    model = BigramLanguageModel()
    xb = torch.randint(vocab_size, (4, block_size))
    yb = torch.randint(vocab_size, (4, block_size))
    try:
        model(xb, yb)
        print("SC602: no error (unexpected)")
    except (RuntimeError, ValueError) as err:
        print(f"SC602: (B, T, V) logits with (B, T) targets -> {type(err).__name__}: {err}")
