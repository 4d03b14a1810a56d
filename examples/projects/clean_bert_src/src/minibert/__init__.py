"""A BERT-style encoder in a src/ layout (roots found from pyproject.toml and src/)."""

from .model import *  # noqa: F403
