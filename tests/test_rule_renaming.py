"""A rule finds the same bug whatever the user called things.

Every INVALID example of every rule is linted again with its classes, functions, variables and
attributes renamed consistently to neutral names (tests/renaming.py); the findings must be the same.
This is what keeps rules working from structure (shapes, provenance) and not from names that only
their examples use.
"""

from __future__ import annotations

import dataclasses
import re
import math

import pytest

from renaming import rename
from shapecheck.linter import lint_source
from shapecheck.rules.base import Rule, registry

torch = pytest.importorskip("torch")
einops = pytest.importorskip("einops")
nn = torch.nn

RULES = list(registry())

#: Words a rule may read in a name: none (SC204 reads the data flow, not class names).
KEEP_WORDS: dict = {}


def _torch_names() -> set[str]:
    """Names torch, its modules and the standard library give meaning to: never renamed."""
    names: set[str] = set()
    for namespace in (torch, nn, nn.functional, nn.init, torch.Tensor, math, einops, dataclasses, str, dict, list):
        names.update(dir(namespace))
    for module in (
        nn.Linear(4, 4), nn.Embedding(4, 4), nn.LayerNorm(4), nn.MultiheadAttention(4, 2), nn.Dropout(),
        nn.TransformerEncoderLayer(4, 2), nn.TransformerDecoderLayer(4, 2), nn.Conv1d(4, 4, 1),
        nn.ModuleList(), nn.Sequential(), nn.RMSNorm(4) if hasattr(nn, "RMSNorm") else nn.Identity(),
    ):
        names.update(dir(module))
        names.update(vars(module))
    return names


PROTECTED = _torch_names()


def _cases() -> list:
    return [
        pytest.param(rule, example, id=f"{rule.code}-invalid-{index}")
        for rule in RULES
        if rule.code != "SC001"
        for index, example in enumerate(rule.INVALID)
    ]


def _findings(code: str, rule: type[Rule]) -> list[tuple[int, str]]:
    result = lint_source(code, "example.py", {rule.code})
    assert result.error is None, result.error
    return sorted({(d.span.line, d.code) for d in result.diagnostics})


@pytest.mark.parametrize(("rule", "example"), _cases())
def test_renamed_invalid_example_has_the_same_findings(rule: type[Rule], example) -> None:
    renamed = rename(example.code, PROTECTED, KEEP_WORDS.get(rule.code))
    assert renamed != example.code or "class" not in example.code
    assert _findings(renamed, rule) == [(line, rule.code) for line in example.expected_lines], renamed


def test_renaming_is_consistent_and_keeps_torch_names() -> None:
    code = (
        "import torch\nimport torch.nn as nn\nfrom jaxtyping import Float\n\n\n"
        "class Attention(nn.Module):\n"
        "    def __init__(self, d_model=64):\n"
        "        super().__init__()\n"
        "        self.q_proj = nn.Linear(d_model, d_model, bias=False)\n"
        "        self.register_buffer('mask', torch.ones(4, 4))\n\n"
        "    def forward(self, x: Float[torch.Tensor, 'b t d_model'], dim: int = -1):\n"
        "        scores = self.q_proj(x)\n"
        "        return scores.softmax(dim=dim) + self.mask.sum()\n\n\n"
        "model = Attention(d_model=32)\n"
    )
    renamed = rename(code, PROTECTED)
    assert renamed == (
        "import torch\nimport torch.nn as nn\nfrom jaxtyping import Float\n\n\n"
        "class C0(nn.Module):\n"
        "    def __init__(self, v1=64):\n"
        "        super().__init__()\n"
        "        self.a5 = nn.Linear(v1, v1, bias=False)\n"
        "        self.register_buffer('a6', torch.ones(4, 4))\n\n"
        "    def forward(self, v2: Float[torch.Tensor, 'b t v1'], dim: int = -1):\n"
        "        v3 = self.a5(v2)\n"
        "        return v3.softmax(dim=dim) + self.a6.sum()\n\n\n"
        "v4 = C0(v1=32)\n"
    )


def test_renaming_reaches_named_strings_fstrings_and_keyword_arguments() -> None:
    """What the libcst renamer this one replaced did, byte for byte: names registered by string
    (positionally or as ``name=``), dims of un-prefixed jaxtyping strings, the expressions of
    f-strings (nested, with conversions and format specs, not their ``{{`` text)."""
    code = (
        "import torch\nfrom jaxtyping import Float\nfrom torch import Tensor\n\n\n"
        "class Mixer(torch.nn.Module):\n"
        "    def __init__(self, width):\n"
        "        super().__init__()\n"
        '        self.register_buffer(name="mask", tensor=torch.ones(width, width))\n'
        '        setattr(self, "gain", width)\n\n'
        '    def forward(self, x: Float[Tensor, "b width"], y: Float[Tensor, r"b width"]):\n'
        '        total = getattr(self, "gain") + sum(row for row in x if (first := row) is not None)\n'
        "        print(f\"{total!r:>{self.gain}} {{total}} {f'{first}'} {self.mask.shape=}\")\n"
        "        return x * self.mask\n"
    )
    assert rename(code, PROTECTED) == (
        "import torch\nfrom jaxtyping import Float\nfrom torch import Tensor\n\n\n"
        "class C0(torch.nn.Module):\n"
        "    def __init__(self, v1):\n"
        "        super().__init__()\n"
        "        self.register_buffer(name='a7', tensor=torch.ones(v1, v1))\n"
        "        setattr(self, 'a8', v1)\n\n"
        '    def forward(self, v2: Float[Tensor, "b v1"], v3: Float[Tensor, r"b width"]):\n'
        "        v4 = getattr(self, 'a8') + sum(v5 for v5 in v2 if (v6 := v5) is not None)\n"
        "        print(f\"{v4!r:>{self.a8}} {{total}} {f'{v6}'} {self.a7.shape=}\")\n"
        "        return v2 * self.a7\n"
    )


LINEAR_CALL = re.compile(r"nn\.Linear\(([^()]*(?:\([^()]*\))?[^()]*)\)")


def _without_bias(code: str) -> str:
    """Every ``nn.Linear(...)`` that does not say ``bias=`` gets ``bias=False``: shapes do not change."""
    return LINEAR_CALL.sub(
        lambda match: match.group(0) if "bias" in match.group(1) else f"nn.Linear({match.group(1)}, bias=False)", code
    )


@pytest.mark.parametrize(
    ("rule", "example"), [case for case in _cases() if _without_bias(case.values[1].code) != case.values[1].code]
)
def test_invalid_example_without_linear_biases_has_the_same_findings(rule: type[Rule], example) -> None:
    changed = _without_bias(example.code)
    assert _findings(changed, rule) == [(line, rule.code) for line in example.expected_lines], changed
