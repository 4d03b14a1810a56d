"""Mask builders. BUG (cross-file): this builds the SDPA convention (True = may attend), but
attention.py fills -inf where the mask is True (True = blocked)."""

import torch

__all__ = ["causal_mask"]


def causal_mask(size):
    return torch.tril(torch.ones(size, size, dtype=torch.bool))


def _unused_helper():
    return None
