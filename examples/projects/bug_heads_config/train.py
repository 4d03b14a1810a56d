"""Builds the model with the config's defaults and runs one step: fails in the head split."""

import torch
import torch.nn.functional as F

from config import GPTConfig
from model import GPT


def main():
    config = GPTConfig()
    model = GPT(config)
    idx = torch.randint(0, config.vocab_size, (2, 8))
    logits = model(idx)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, config.vocab_size), idx[:, 1:].reshape(-1))
    loss.backward()


if __name__ == "__main__":
    main()
