"""Kill tests for the survivors of ``ops/shapes.py``'s view functions (the ``--only`` run of the
functions changed after its first run) and the survivors left "not killed" in ``ops/products.py``
and ``ops/windows.py`` (benchmarks/README.md, the ``mut24`` subsection).

Black-box through the engine, like tests/test_mutation_kills_ops.py: each test analyses a small
function and asserts the shapes, tags or conflicts the engine infers. Every shape asserted is what
torch 2.13 gives (checked in a scratch script); where torch raises, the test asserts the engine's
conflict or an unknown shape.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.linter import lint_source

from test_engine_ops import HEADER, _shape, analyze_src, run_of

CODE = cst.Module([])


def _code(node: cst.CSTNode | None) -> str | None:
    return None if node is None else CODE.code_for_node(node)


def _run(src: str, func: str = "f", header: str = HEADER):
    facts = analyze_src(header + textwrap.dedent(src))
    assert facts.internal_errors == []  # an op rule that raises gives up silently: never in these tests
    return {a.name: a.value for a in run_of(facts, func).assignments}, facts.conflicts


# --- ops/shapes.py: view and reshape ----------------------------------------------------------------


NANOGPT_VIEW_BY_KEYWORD = """
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(size=(B, T, self.n_head, C // self.n_head)).transpose(1, 2)
        q = q.view(size=(B, T, self.n_head, C // self.n_head)).transpose(1, 2)
        v = v.view(size=(B, T, self.n_head, C // self.n_head)).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(size=(B, T, C))
        return self.c_proj(y)
"""


def test_view_reads_its_sizes_by_the_keyword_size_and_its_dtype_by_keyword() -> None:
    """torch's ``Tensor.view`` names its sizes ``size=`` (``reshape``: ``shape=``) and takes
    ``dtype=`` by keyword too. The engine read only ``shape=``, so ``view(size=(B, T, h, C // h))``
    was a view as ``()``: SC403 on each of nanoGPT's head splits written by keyword (a false
    positive). Torch: (2, 3, 8).view(size=(2, 3, 2, 4)) is (2, 3, 2, 4); view(dtype=float16) of
    float32 is (2, 3, 16), a last size the engine does not compute (unknown shape, the dtype kept)."""
    assert lint_source(NANOGPT_VIEW_BY_KEYWORD, "attn.py").diagnostics == []
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"], B: int, T: int, H: int):
            heads = x.view(size=(B, T, H, -1))
            flat = x.view(size=(-1,))
            halves = x.view(dtype=torch.float16)
            merged = heads.reshape(shape=(B, T, -1))
        """
    )
    assert conflicts == []
    found = {name: (_shape(values[name]), values[name].dtype) for name in ("heads", "flat", "halves", "merged")}
    assert found == {
        "heads": ("(B, T, H, b*d*t//(B*H*T))", "float"),
        "flat": ("(b*d*t)", "float"),
        "halves": (None, "float"),
        "merged": ("(B, T, b*d*t//(B*T))", "float"),
    }
