"""SC303 missing-positional-encoding: a sentence classifier whose tokens carry no position.

Bug: token embeddings go straight into self-attention. Self-attention is permutation-equivariant,
so without a positional encoding the model cannot tell "我爱你" from "你爱我" (seed 2, §3.1 and
§7.3). How it shows: run this file; "I love NLP" and "NLP love I" get identical logits.
"""

# b batch, n time, d dim, h heads, c classes
import torch
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def __init__(self, *, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        attn = (q @ k.transpose(-1, -2) * self.scale).softmax(dim=-1)  # (b, h, n, n)
        return self.to_out(rearrange(attn @ v, "b h n d -> b n (h d)"))


class SentenceClassifier(nn.Module):
    def __init__(self, *, vocab_size: int = 100, dim: int = 64, heads: int = 4, n_classes: int = 2):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, dim)
        self.norm = nn.LayerNorm(dim)
        self.attn = Attention(dim=dim, heads=heads)
        self.head = nn.Linear(dim, n_classes)

    def forward(self, ids):
        x = self.tok_emb(ids)  # BUG: SC303
        x = x + self.attn(self.norm(x))
        return self.head(x.mean(dim=1))  # (b, c)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = SentenceClassifier()
    i_love_nlp = torch.tensor([[7, 21, 42]])
    nlp_love_i = torch.tensor([[42, 21, 7]])
    same = torch.allclose(model(i_love_nlp), model(nlp_love_i), atol=1e-6)
    print(f"SC303: no positional encoding; 'I love NLP' and 'NLP love I' give identical logits: {same}.")
