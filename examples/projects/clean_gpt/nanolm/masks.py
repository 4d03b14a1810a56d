"""Mask builders: True marks a position that must not be attended to (the future)."""

import torch


def causal_mask(size):
    return torch.triu(torch.ones(size, size, dtype=torch.bool), diagonal=1)
