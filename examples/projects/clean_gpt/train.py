"""Trains one step with a causal mask built here and passed to the model; checks causality."""

import torch
import torch.nn.functional as F

from nanolm import GPT, GPTConfig, causal_mask


def main():
    torch.manual_seed(0)
    config = GPTConfig(n_head=4)
    model = GPT(config)
    idx = torch.randint(0, config.vocab_size, (2, 12))
    mask = causal_mask(idx.shape[1])
    logits = model(idx, mask)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, config.vocab_size), idx[:, 1:].reshape(-1))
    loss.backward()
    changed = idx.clone()
    changed[:, -1] = (changed[:, -1] + 1) % config.vocab_size
    assert torch.allclose(model(changed, mask)[:, 0], logits[:, 0]), "position 0 sees the last token"
    assert model.head.weight is model.tok.weight_table.weight


if __name__ == "__main__":
    main()
