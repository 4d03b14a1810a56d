"""Encodes a batch: fails in the feed-forward block (64 features reach a Linear(32, 64))."""

import torch

from seq2vec.encoder import Encoder


def main():
    model = Encoder()
    vectors = model(torch.randint(0, 100, (2, 10)))
    assert vectors.shape == (2, 32)


if __name__ == "__main__":
    main()
