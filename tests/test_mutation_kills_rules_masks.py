"""Kill tests for the surviving mutants of SC103, SC104 and SC201-SC205 (issue 13, item 1).

The complete mutmut run of every rule module (2 Dec 2026) left these decisions unpinned; each test
names its rule code so ``-k SCnnn`` selects it with the rule's other tests, and its docstring names
the function and decision it pins. Every snippet runs under torch 2.13 as written (checked in a
scratch script before the test was written). The analysis of every survivor, killed or equivalent,
is in benchmarks/README.md ("Rules re-run (2 Dec 2026, branch `mut20`): SC103-SC205").
"""

from __future__ import annotations

from shapecheck.linter import lint_source


def _found(source: str, code: str) -> list[tuple[str, int, int]]:
    """(code, line, column) of every finding of rule ``code`` alone on ``source``."""
    result = lint_source(source, "x.py", {code})
    assert result.error is None, result.error
    return sorted((d.code, d.line, d.column) for d in result.diagnostics)


# ---------------------------------------------------------------------------------------- SC103

CO_ATTENTION = '''
import math
import torch
from jaxtyping import Float
from torch import Tensor


def co_attend_queries(q: Float[Tensor, "b t 64"], k: Float[Tensor, "b s 64"], v: Float[Tensor, "b s 64"]):
    scores = torch.einsum("bid,bjd->bij", q, k) / math.sqrt(64)
    attn = torch.softmax(scores, dim=-2)
    out = torch.einsum("bij,bjd->bid", attn, v)
    back = torch.einsum("bij,bid->bjd", attn, out)
    return out, back


def co_attend_keys(q: Float[Tensor, "b t 64"], k: Float[Tensor, "b s 64"], v: Float[Tensor, "b s 64"]):
    scores = torch.einsum("bid,bjd->bij", q, k) / math.sqrt(64)
    attn = torch.softmax(scores, dim=-1)
    out = torch.einsum("bij,bjd->bid", attn, v)
    back = torch.einsum("bij,bid->bjd", attn, out)
    return out, back
'''


def test_SC103_probabilities_contracted_over_both_axes_have_no_key_axis() -> None:
    """``_key_axis``: a softmax whose probabilities are contracted with values over their last axis
    (``out``) and over their second-last axis (``back``, co-attention read both ways) has two
    contracted axes, so no single key axis: the rule makes no claim on either softmax dim (taking
    one of the two axes would report whichever dim the other contraction uses)."""
    assert _found(CO_ATTENTION, "SC103") == []
