"""The model's configuration. BUG: 768 is not divisible by the default n_head = 10."""

from dataclasses import dataclass


@dataclass
class GPTConfig:
    vocab_size: int = 100
    block_size: int = 16
    n_embd: int = 768
    n_head: int = 10  # BUG (cross-file): layers.py splits n_embd into n_head heads
