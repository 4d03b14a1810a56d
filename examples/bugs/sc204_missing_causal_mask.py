"""SC204 missing-causal-mask: a character-level GPT whose self-attention has no causal mask.

Bug: a next-token LM (``lm_head`` over the vocabulary, a ``generate`` loop) whose einsum attention
lets every position see the whole sequence: training copies the answer from the future, inference
has no future to copy (seed 2, §7.6). How it shows: the logits at position 0 move with the last token.
"""

# b batch, n time, d d_model, h heads, e head dim, v vocab
import torch
from torch import nn
from torch.nn import functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.scale = self.dim_head**-0.5
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).reshape(b, n, 3, self.heads, self.dim_head).unbind(dim=2)  # (b, n, h, e)
        sim = torch.einsum("bihe,bjhe->bhij", q, k) * self.scale  # (b, h, n, n)
        attn = sim.softmax(dim=-1)  # BUG: SC204
        return torch.einsum("bhij,bjhe->bihe", attn, v).reshape(b, n, d)


class TinyGPT(nn.Module):
    def __init__(self, vocab_size: int = 40, dim: int = 64, heads: int = 4, max_len: int = 64):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, dim)
        self.pos_emb = nn.Embedding(max_len, dim)
        self.attn = SelfAttention(dim, heads)
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab_size, bias=False)

    def forward(self, idx):
        b, n = idx.shape
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(n, device=idx.device))
        x = x + self.attn(x)
        return self.lm_head(self.ln_f(x))  # (b, n, v)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens: int):
        for _ in range(max_new_tokens):
            probs = F.softmax(self(idx)[:, -1, :], dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, num_samples=1)], dim=1)
        return idx


if __name__ == "__main__":
    torch.manual_seed(0)
    model = TinyGPT().eval()
    idx = torch.randint(0, 40, (1, 12))
    idx2 = idx.clone()
    idx2[0, -1] = (idx[0, -1] + 1) % 40
    moved = (model(idx)[0, 0] - model(idx2)[0, 0]).abs().max().item()
    print(f"SC204: decoder self-attention without a causal mask; logits at position 0 move by {moved:.3f} when token 11 changes.")
