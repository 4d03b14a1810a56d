"""SC603 lm-targets-not-shifted: seed 2's character model trained on unshifted targets.

Bug: ``y`` is cut from the same window as ``x`` (``data[i : i + 16]``) instead of the next
characters (``data[i + 1 : i + 17]``): the model learns to copy its input. How it shows: run this
file; the loss falls towards zero within a few dozen steps, far below what predicting the next
character allows, and greedy generation just repeats the prompt's last character.
"""

# B batch, T time, C d_model, V vocab
import torch
import torch.nn as nn
import torch.nn.functional as F


class CharModel(nn.Module):
    def __init__(self, vocab_size: int, d_model: int = 32):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, idx):
        return self.head(self.token_emb(idx))  # (B, T, V)


if __name__ == "__main__":
    torch.manual_seed(0)
    text = "To be, or not to be, that is the question. " * 20
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    model = CharModel(len(chars))
    optim = torch.optim.AdamW(model.parameters(), lr=3e-2)
    for step in range(40):
        ix = torch.randint(0, len(data) - 17, (8,))
        x = torch.stack([data[i : i + 16] for i in ix])
        y = torch.stack([data[i : i + 16] for i in ix])  # BUG: SC603
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, len(chars)), y.view(-1))
        optim.zero_grad()
        loss.backward()
        optim.step()
    print(f"SC603: loss {loss.item():.3f} after 40 steps: the model copies its input instead of predicting")
