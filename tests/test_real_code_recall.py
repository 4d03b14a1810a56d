"""Bugs in the idioms of published model code, written from scratch in their style.

Each case is a correct snippet that must stay clean under all rules and its one-line mutant that
must give exactly the expected finding, as benchmarks/mutation.py does on the real corpora.
"""

from __future__ import annotations

import textwrap

import pytest

from shapecheck.linter import lint_source


def codes(source: str) -> list[str]:
    result = lint_source(textwrap.dedent(source), "recall.py")
    assert result.error is None
    return [d.code for d in result.diagnostics]


# Hugging Face's eager attention: a module-level function whose query arrives with an unknown shape;
# only the key is known, from the grouped-query ``repeat_kv`` helper that unpacks it to rank 4.
HF_EAGER_ATTENTION = """
import torch
from torch import nn


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous(), attn_weights
"""


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (None, []),
        (("* scaling", ""), ["SC101"]),
        (("dim=-1, dtype", "dim=1, dtype"), ["SC103"]),
    ],
    ids=["original", "scale-deleted", "softmax-dim-flipped"],
)
def test_hf_eager_attention(mutation: tuple[str, str] | None, expected: list[str]) -> None:
    source = HF_EAGER_ATTENTION
    if mutation is not None:
        assert mutation[0] in source
        source = source.replace(mutation[0], mutation[1], 1)
    assert codes(source) == expected
