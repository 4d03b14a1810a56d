"""Padding masks in the SDPA convention: True marks a key that may be attended to."""


def keep_mask(lengths, size):
    import torch

    return (torch.arange(size)[None, :] < lengths[:, None])[:, None, None, :]
