"""Seed 2's character-level MiniGPT, repaired: causal self-attention, pre-norm blocks, learned
positions, and a training loop that switches between model.train() and model.eval() and trains on
next-token targets (y is x shifted by one).

Dims: B batch, T time, C d_model, h n_head, k d_k = d_model // n_head, V vocab.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, max_len: int = 512, dropout: float = 0.1):
        super().__init__()
        assert d_model % n_head == 0, f"d_model {d_model} must be divisible by n_head {n_head}"
        self.n_head = n_head
        self.d_k = d_model // n_head
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        self.W_O = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)
        # True above the diagonal = the future, which masked_fill blocks.
        mask = torch.triu(torch.ones(max_len, max_len), diagonal=1).bool()
        self.register_buffer("mask", mask)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.W_QKV(x).reshape(B, T, 3, self.n_head, self.d_k)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, h, T, k)
        scores = (q @ k.transpose(-2, -1)) / (self.d_k**0.5)  # (B, h, T, T)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        attn = self.attn_drop(scores.softmax(dim=-1))
        out = (attn @ v).transpose(1, 2).reshape(B, T, C)  # (B, h, T, k) -> (B, T, h, k) -> (B, T, C)
        return self.W_O(out)


class GPTBlock(nn.Module):
    def __init__(self, d_model: int, n_head: int, max_len: int, dropout: float = 0.1):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, max_len, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.GELU(),
            nn.Linear(4 * d_model, d_model),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.ffn(self.ln2(x))
        return x


class MiniGPT(nn.Module):
    def __init__(self, vocab_size: int, d_model: int = 128, n_head: int = 4, n_layer: int = 4, max_len: int = 256):
        super().__init__()
        self.max_len = max_len
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList([GPTBlock(d_model, n_head, max_len) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        assert T <= self.max_len, f"sequence of {T} tokens > max_len {self.max_len}"
        x = self.token_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))  # (B, T, V)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens: int):
        for _ in range(max_new_tokens):
            logits = self(idx[:, -self.max_len :])[:, -1, :]  # (B, V)
            idx = torch.cat([idx, torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)], dim=1)
        return idx


def get_batch(data: torch.Tensor, block_size: int, batch_size: int):
    """Random windows x and their next-token targets y = x shifted left by one."""
    ix = torch.randint(0, len(data) - block_size - 1, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix])
    return x, y


if __name__ == "__main__":
    torch.manual_seed(0)
    text = "To be, or not to be, that is the question. " * 100
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    split = int(0.9 * len(data))
    train_data, val_data = data[:split], data[split:]

    model = MiniGPT(vocab_size=len(chars), d_model=64, n_head=4, n_layer=2, max_len=64)
    optim = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(61):
        model.train()
        x, y = get_batch(train_data, block_size=16, batch_size=16)
        logits = model(x)  # (B, T, V)
        loss = F.cross_entropy(logits.view(-1, len(chars)), y.view(-1))
        optim.zero_grad()
        loss.backward()
        optim.step()
        if step % 30 == 0:
            model.eval()
            with torch.no_grad():
                vx, vy = get_batch(val_data, block_size=16, batch_size=16)
                val_loss = F.cross_entropy(model(vx).view(-1, len(chars)), vy.view(-1))
            print(f"step {step:3d}  train loss {loss.item():.3f}  val loss {val_loss.item():.3f}")
    model.eval()
    sample = model.generate(torch.tensor([[stoi["T"]]]), max_new_tokens=30)[0]
    print("sample:", "".join(chars[i] for i in sample.tolist()))
