"""SC601 missing-train-eval-mode: seed 2's MiniGPT loop with a validation every few steps.

Bug: the validation calls ``model.eval()`` and nothing calls ``model.train()`` again, so every
training step after the first validation runs with dropout switched off. How it shows: run this
file; it prints ``model.training`` at each training step: True before the first validation, False
after it.
"""

# B batch, T time, C d_model, V vocab
import torch
import torch.nn as nn
import torch.nn.functional as F


class MiniGPT(nn.Module):
    def __init__(self, vocab_size: int, d_model: int = 32, max_len: int = 32, dropout: float = 0.1):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.drop = nn.Dropout(dropout)
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        x = self.drop(self.token_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device)))  # (B, T, C)
        return self.head(self.ln_f(x))  # (B, T, V)


if __name__ == "__main__":
    torch.manual_seed(0)
    text = "To be, or not to be, that is the question. " * 20
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    model = MiniGPT(vocab_size=len(chars))
    optim = torch.optim.AdamW(model.parameters(), lr=3e-3)
    modes = []
    for step in range(4):
        ix = torch.randint(0, len(data) - 17, (4,))
        x = torch.stack([data[i : i + 16] for i in ix])
        y = torch.stack([data[i + 1 : i + 17] for i in ix])
        logits = model(x)  # BUG: SC601
        modes.append(model.training)
        loss = F.cross_entropy(logits.view(-1, len(chars)), y.view(-1))
        optim.zero_grad()
        loss.backward()
        optim.step()
        if step % 2 == 0:
            model.eval()
            with torch.no_grad():
                val_loss = F.cross_entropy(model(x).view(-1, len(chars)), y.view(-1))
    print(f"SC601: model.training at each training step: {modes} (dropout off after the first validation)")
