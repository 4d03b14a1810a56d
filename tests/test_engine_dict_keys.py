"""Dicts whose keys are all known (``dict(num_experts=...)``, ``{"device": ..., "dtype": ...}``, a
``**kwargs`` of known keywords): ``'key' in kwargs`` is decided, an empty dict is false
(``conv_kwargs = conv_kwargs or {}``) and ``kwargs['depthwise'] = True`` sets the key. So a factory
that picks a layer by its keyword arguments (timm's ``create_conv2d``) builds the layer that runs,
not both, and a block whose default builds the plain layer is not read as routing into the other.
"""

from __future__ import annotations

import textwrap

from shapecheck.engine import analyze
from shapecheck.linter import lint_source
from shapecheck.parsing import parse_module

FACTORY = """
import torch
from torch import nn


class RoutedLinear(nn.Module):
    def __init__(self, dim, num_experts=1, device=None):
        super().__init__()
        self.dim = dim
        self.weight = nn.Parameter(torch.empty(num_experts, dim * dim, device=device))

    def forward(self, x, routing):
        weight = torch.matmul(routing, self.weight)
        weight = weight.view(x.shape[0], self.dim, self.dim)
        return torch.bmm(x, weight)


def make_layer(dim, **kwargs):
    if 'num_experts' in kwargs and kwargs['num_experts'] > 0:
        return RoutedLinear(dim, **kwargs)
    kwargs.pop('num_experts', None)
    return nn.Linear(dim, dim, **kwargs)


class Base(nn.Module):
    def __init__(self, dim, layer_kwargs=None, device=None):
        super().__init__()
        layer_kwargs = layer_kwargs or {}
        extra = {'device': device}
        self.layer = make_layer(dim, **layer_kwargs, **extra)


class Block(Base):
    def __init__(self, dim=64, num_experts=0, device=None):
        layer_kwargs = dict(num_experts=num_experts)
        super().__init__(dim, layer_kwargs=layer_kwargs, device=device)
        self.router = nn.Linear(dim, ROUTES)

    def forward(self, x):
        routing = torch.sigmoid(self.router(x.mean(dim=1)))
        return self.layer(x, routing)
"""


def _lint(source: str) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in lint_source(textwrap.dedent(source), "model.py").diagnostics]


def _built_by_block(source: str) -> set[str]:
    """The classes whose constructor ran inside a run of ``Block.__init__``."""
    module = parse_module(textwrap.dedent(source))
    facts = analyze(module, textwrap.dedent(source), "model.py")
    return {
        run.qualname.split(".")[0]
        for run in facts.runs
        if run.qualname.endswith(".__init__") and any(outer.qualname == "Block.__init__" for outer in run.chain())
    }


def test_a_factory_given_a_zero_count_builds_the_plain_layer_only():
    source = FACTORY.replace("ROUTES", "num_experts") + "\n\nblock = Block(64)\n"
    assert "RoutedLinear" not in _built_by_block(source)
    assert _lint(source) == []


def test_a_factory_given_a_positive_count_builds_the_routed_layer_and_its_shapes_are_checked():
    correct = FACTORY.replace("ROUTES", "num_experts") + "\n\nblock = Block(64, num_experts=4)\nblock(torch.randn(2, 10, 64))\n"
    assert "RoutedLinear" in _built_by_block(correct)
    assert _lint(correct) == []
    # The router gives one weight too many for the four experts: the matmul cannot run.
    wrong = FACTORY.replace("ROUTES", "num_experts + 1") + "\n\nblock = Block(64, num_experts=4)\nblock(torch.randn(2, 10, 64))\n"
    matmul_line = next(n for n, line in enumerate(wrong.splitlines(), 1) if "torch.matmul(routing" in line)
    assert ("SC505", matmul_line) in _lint(wrong)


def test_a_key_set_by_item_assignment_is_in_the_dict():
    source = """
    from torch import nn


    def make(dim, **kwargs):
        if 'depthwise' in kwargs:
            return nn.Conv1d(dim, dim, 3, groups=dim)
        return nn.Conv1d(dim, 2 * dim, 3)


    def build(dim=32):
        options = dict(bias=True)
        options['depthwise'] = True
        return make(dim, **options)


    def build_plain(dim=32):
        options = {}
        if 'depthwise' not in options:
            options['bias'] = False
        return make(dim, **options)


    depthwise = build(32)
    plain = build_plain(32)
    """
    module = parse_module(textwrap.dedent(source))
    facts = analyze(module, textwrap.dedent(source), "model.py")
    built: dict[str, set[str]] = {}
    for construction in facts.constructions:
        run = construction.run
        if construction.kind == "Conv1d" and run is not None and run.parent is not None and run.parent.inlined:
            built.setdefault(run.parent.qualname, set()).add(construction.params["out_channels"].dim.value)
    assert built == {"build": {32}, "build_plain": {64}}


def test_an_attribute_dict_set_by_item_assignment_and_a_key_the_engine_cannot_read():
    source = """
    from torch import nn
    from settings import pick_key


    def make(dim, **kwargs):
        if 'depthwise' in kwargs:
            return nn.Conv1d(dim, dim, 3, groups=dim)
        return nn.Conv1d(dim, 2 * dim, 3)


    class Stem(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.conv_cfg = dict(bias=True)
            self.conv_cfg['depthwise'] = True
            self.conv = make(dim, **self.conv_cfg)
            options = dict(bias=True)
            options[pick_key()] = True  # which key: not known, so neither is the branch
            self.other = make(dim, **options)


    stem = Stem(32)
    """
    module = parse_module(textwrap.dedent(source))
    facts = analyze(module, textwrap.dedent(source), "model.py")
    built: dict[int, set[int]] = {}
    for construction in facts.constructions:
        run = construction.run
        if construction.kind == "Conv1d" and run is not None and run.parent is not None and run.parent.inlined:
            line = run.call_node  # the make(...) call of this construction
            built.setdefault(id(line), set()).add(construction.params["out_channels"].dim.value)
    assert sorted(map(sorted, built.values())) == [[32], [32, 64]]


def test_a_deleted_key_is_no_longer_in_the_dict():
    source = """
    from torch import nn
    from settings import pick_key


    def make(dim, **kwargs):
        if 'depthwise' in kwargs:
            return nn.Conv1d(dim, dim, 3, groups=dim)
        return nn.Conv1d(dim, 2 * dim, 3)


    def build(dim):
        options = dict(depthwise=True, bias=False)
        del options['depthwise']
        return make(dim, **options)


    def build_unknown(dim):
        options = dict(depthwise=True, bias=False)
        del options[pick_key()], options['bias']
        return make(dim, **options)


    plain = build(32)
    either = build_unknown(32)
    """
    module = parse_module(textwrap.dedent(source))
    facts = analyze(module, textwrap.dedent(source), "model.py")
    built: dict[str, set[int]] = {}
    for construction in facts.constructions:
        run = construction.run
        if construction.kind == "Conv1d" and run is not None and run.parent is not None and run.parent.inlined:
            built.setdefault(run.parent.qualname, set()).add(construction.params["out_channels"].dim.value)
    assert built == {"build": {64}, "build_unknown": {32, 64}}
