"""A tiny causal LM in a src/ layout; the package re-exports its pieces."""

from .masks import *  # noqa: F403
from .model import TinyLM

__all__ = ["TinyLM", "causal_mask"]
