"""SC505 matmul-shape-mismatch: 512-wide embeddings multiplied by a BERT-sized (768, 64) W_Q.

Bug: seed 1's worked example mixes d_model = 512 (its code) with 768 (BERT-base): the query weight
was sized for 768 inputs while the embeddings are 512 wide, so ``x @ W_Q`` has inner dims
512 vs 768. How it shows: run this file; it raises seed 1's
"RuntimeError: mat1 and mat2 shapes cannot be multiplied (5x512 and 768x64)".
"""

# b batch, t time, d d_model, k head dim, v vocab
import math

import torch
import torch.nn as nn


class SingleHeadAttention(nn.Module):
    def __init__(self, vocab_size: int = 30522, d_model: int = 512, d_k: int = 64, bert_hidden: int = 768):
        super().__init__()
        self.d_k = d_k
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(512, d_model)
        self.W_Q = nn.Parameter(torch.randn(bert_hidden, d_k) / math.sqrt(bert_hidden))
        self.W_K = nn.Parameter(torch.randn(d_model, d_k) / math.sqrt(d_model))
        self.W_V = nn.Parameter(torch.randn(d_model, d_k) / math.sqrt(d_model))

    def forward(self, ids):
        T = ids.size(-1)
        x = self.embed(ids) + self.pos(torch.arange(T, device=ids.device))  # (t, d)
        Q = x @ self.W_Q  # BUG: SC505
        K, V = x @ self.W_K, x @ self.W_V  # (t, k)
        return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1) @ V


if __name__ == "__main__":
    ids = torch.tensor([101, 1045, 2293, 17953, 102])  # [CLS] I love NLP [SEP]
    try:
        SingleHeadAttention()(ids)
        print("SC505: no error (unexpected)")
    except RuntimeError as err:
        print(f"SC505: (5, 512) embeddings @ (768, 64) W_Q -> RuntimeError: {err}")
