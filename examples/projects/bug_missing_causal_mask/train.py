"""Next-token training; the check that position 0 ignores the last token fails."""

import torch
import torch.nn.functional as F

from model import GPT


def main():
    torch.manual_seed(0)
    model = GPT()
    idx = torch.randint(0, 64, (2, 12))
    logits = model(idx)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, 64), idx[:, 1:].reshape(-1))
    loss.backward()
    changed = idx.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 64
    assert torch.allclose(model(changed)[:, 0], logits[:, 0]), "position 0 sees the last token"


if __name__ == "__main__":
    main()
