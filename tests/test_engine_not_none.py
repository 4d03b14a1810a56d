"""A ``T | None = None`` parameter read standalone may be None, so ``if mask is None:`` keeps both
branches. Once a statement has used it as an object on every path through it (``mask.reshape(...)``,
``mask.shape``), it is not None from there on in that path: the code would have raised. LightGlue
(transformers) sums ``mask.reshape(batch_size, -1)`` first and tests ``mask is not None`` later; the
branch for None built a mask of the wrong batch that no run can reach, and SC403 reported it.
A use that runs only on some paths (one side of a conditional expression or of ``and`` / ``or``, a
comprehension, a lambda, one branch of an ``if``) proves nothing."""

from __future__ import annotations

import textwrap

from shapecheck.linter import lint_source

HEADER = """
import torch
from jaxtyping import Float
from torch import Tensor
"""

#: The branch for None builds a (b, n) mask that the view then cannot make (b, 2, n) of.
TAIL = """
    if mask is None:
        mask = torch.ones(b, n)
    return mask.reshape(b, 2, n)
"""


def _codes(use: str) -> list[str]:
    body = f"""
def pairs(x: Float[Tensor, "b n d"], mask: Tensor | None = None, flag: bool = False):
    b, n, d = x.shape
{textwrap.indent(textwrap.dedent(use), "    ")}{TAIL}"""
    return [d.code for d in lint_source(HEADER + body, "pairs.py").diagnostics]


def test_without_a_use_the_branch_for_none_is_followed():
    assert _codes("total = 0\n") == ["SC403"]


def test_a_method_call_proves_the_parameter_is_not_none():
    assert _codes("total = torch.sum(mask.reshape(b, -1), dim=1)\n") == []


def test_a_chained_method_call_proves_it():
    assert _codes("total = mask.float().sum()\n") == []


def test_an_attribute_read_proves_it_too():
    assert _codes("rows = mask.shape[0]\n") == []


def test_an_operand_of_arithmetic_always_runs():
    assert _codes("total = 1 + mask.sum()\n") == []


def test_a_negated_use_always_runs():
    assert _codes("total = -mask.sum()\n") == []


def test_a_comparison_always_runs_both_sides():
    assert _codes("same = n == mask.size(1)\n") == []


def test_an_element_of_a_tuple_always_runs():
    assert _codes("rows, cols = n, mask.size(0)\n") == []


def test_an_index_always_runs():
    assert _codes("first = x[mask.long()]\n") == []


def test_the_left_side_of_and_always_runs():
    assert _codes("ready = mask.any() and flag\n") == []


def test_the_test_of_a_conditional_expression_always_runs():
    assert _codes("total = 1 if mask.any() else 0\n") == []


def test_the_right_side_of_and_may_not_run():
    assert _codes("ready = flag and mask.any()\n") == ["SC403"]


def test_a_branch_of_a_conditional_expression_may_not_run():
    assert _codes("total = mask.sum() if flag else 0\n") == ["SC403"]


def test_a_comprehension_may_not_run():
    assert _codes("sizes = [mask.size(0) for _ in range(n)]\n") == ["SC403"]


def test_a_generator_may_not_run():
    assert _codes("sizes = tuple(mask.size(0) for _ in range(n))\n") == ["SC403"]


def test_a_lambda_may_not_run():
    assert _codes("size = lambda: mask.size(0)\n") == ["SC403"]


def test_a_use_in_one_branch_of_an_if_proves_nothing_after_it():
    assert _codes("""
        if flag:
            total = mask.sum()
        """) == ["SC403"]


def test_a_use_in_both_branches_of_an_if_proves_it_after_it():
    assert _codes("""
        if flag:
            total = mask.sum()
        else:
            total = mask.mean()
        """) == []


def test_a_conditional_expression_tested_after_a_use_is_decided():
    source = HEADER + '''
def pairs(x: Float[Tensor, "b n d"], mask: Tensor | None = None):
    b, n, d = x.shape
    total = mask.sum()
    return mask if mask is not None else torch.ones(b, n).reshape(b, 2, n)
'''
    assert [d.code for d in lint_source(source, "pairs.py").diagnostics] == []
    unproven = source.replace("    total = mask.sum()\n", "")
    assert [d.code for d in lint_source(unproven, "pairs.py").diagnostics] == ["SC403"]
