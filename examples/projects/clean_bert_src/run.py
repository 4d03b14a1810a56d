"""Encodes a batch; an encoder sees both directions, so only shapes are checked."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent / "src"))

from minibert import BertEncoder  # noqa: E402


if __name__ == "__main__":
    encoder = BertEncoder()
    pooled = encoder(torch.randint(0, 120, (3, 20)))
    assert pooled.shape == (3, 48)
