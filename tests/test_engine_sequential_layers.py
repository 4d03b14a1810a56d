"""Layers a Sequential chains that are not plain ``torch.nn`` constructions: a subclass of a torch
layer (whisper's ``class Linear(nn.Linear)`` with its own forward) is the layer its base was built
as, and lucidrains' ``torch_einops_utils.nn.Sequential`` is ``nn.Sequential`` of the modules that
are not None. Their layer chains are checked as ``nn.Sequential``'s are (SC406)."""

from __future__ import annotations

import textwrap

from shapecheck.linter import lint_source


def _chain_findings(source: str) -> list[tuple[int, str]]:
    result = lint_source(textwrap.dedent(source), "ff.py")
    return [(d.span.line, d.message) for d in result.diagnostics if d.code == "SC406"]


SUBCLASS = """
    import torch.nn.functional as F
    from torch import Tensor, nn


    class Linear(nn.Linear):
        def forward(self, x: Tensor) -> Tensor:
            return F.linear(x, self.weight.to(x.dtype))


    class LayerNorm(nn.LayerNorm):
        def forward(self, x: Tensor) -> Tensor:
            return super().forward(x.float()).type(x.dtype)


    def mlp(width: int):
        return nn.Sequential(LayerNorm(width), Linear(width, 4 * width), nn.GELU(), Linear({fed}, width))
"""


def test_a_subclassed_linear_chains_as_a_linear():
    found = _chain_findings(SUBCLASS.format(fed="8 * width"))
    assert [line for line, _ in found] == [17]
    assert "layer 3 expects 8*width input features but the layer before it produces 4*width" in found[0][1]


def test_a_subclassed_linear_chained_right_is_clean():
    assert _chain_findings(SUBCLASS.format(fed="4 * width")) == []


LIBRARY = """
    from torch import nn
    from torch_einops_utils.nn import Sequential


    def head(dim: int, norm: bool):
        return Sequential(
            nn.LayerNorm(dim) if norm else None,
            nn.Linear(dim, 2 * dim),
            None,
            nn.SiLU(),
            None,
            nn.Linear({fed}, dim),
        )
"""


def test_the_library_sequential_leaves_out_none_and_chains_the_rest():
    found = _chain_findings(LIBRARY.format(fed="4 * dim"))
    assert [line for line, _ in found] == [13]
    assert "layer 3 expects 4*dim input features but the layer before it produces 2*dim" in found[0][1]


def test_the_library_sequential_chained_right_is_clean():
    assert _chain_findings(LIBRARY.format(fed="2 * dim")) == []


def test_another_library_of_the_same_name_is_not_read():
    source = LIBRARY.replace("from torch_einops_utils.nn import Sequential", "from my_layers import Sequential")
    assert _chain_findings(source.format(fed="4 * dim")) == []
