"""A small GPT split over modules; the package re-exports what the training script uses."""

from .config import GPTConfig
from .masks import causal_mask
from .model import GPT
