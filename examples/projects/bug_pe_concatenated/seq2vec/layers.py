"""A position-wise feed-forward block."""

import torch.nn as nn


class FeedForward(nn.Module):
    def __init__(self, d_model, hidden=64):
        super().__init__()
        self.up = nn.Linear(d_model, hidden)
        self.down = nn.Linear(hidden, d_model)

    def forward(self, x):
        return self.down(self.up(x).relu())
