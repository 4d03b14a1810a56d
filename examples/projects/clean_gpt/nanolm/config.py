"""Configuration. The default n_head = 5 does not divide n_embd = 64, but every construction in
this project overrides it (trap: an unused default is no bug)."""

from dataclasses import dataclass


@dataclass
class GPTConfig:
    vocab_size: int = 64
    block_size: int = 16
    n_embd: int = 64
    n_head: int = 5
