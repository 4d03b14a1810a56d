"""The read-only tree walk (``engine/facts/walk.py``) meets the nodes libcst's own visit meets, in
the same order wherever code is (not punctuation or whitespace), without copying the tree."""

from __future__ import annotations

import libcst as cst
import pytest

from shapecheck.engine.facts import walk

#: Punctuation and whitespace: libcst visits some of them in another order (parentheses first).
_LAYOUT = (
    cst.BaseParenthesizableWhitespace, cst.LeftParen, cst.RightParen, cst.Comma, cst.Colon, cst.Dot,
    cst.EmptyLine, cst.TrailingWhitespace, cst.Newline, cst.Comment, cst.Semicolon, cst.AssignEqual,
    cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace,
    cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp,
    cst.ImportStar, cst.Asynchronous,
)

SOURCES = {
    "decorated functions and classes": '''
@torch.no_grad()
@register(name="gpt")
def estimate(model: nn.Module, *, steps: int = 3) -> float:
    return model(steps)

@dataclass(frozen=True)
class Config(Base, metaclass=Meta):
    width: int = 64
''',
    "parameters of every kind": "def f(a, b=1, /, c=2, *args, d, e=3, **kwargs):\n    return a\n",
    "conditional expressions and keyword arguments": "y = F.softmax(s if causal else s.float(), dim=-1, dtype=torch.float32)\n",
    "exception handlers": "try:\n    x = q @ k\nexcept (RuntimeError, ValueError) as error:\n    raise TypeError from error\nfinally:\n    done = True\n",
    "loops, comprehensions and lambdas": '''
for i, (attn, ff) in enumerate(self.layers):
    x = x + attn(x)
else:
    heads = [lambda t, h=h: t.view(b, n, h, -1) for h in range(4) if h]
while step < n:
    step += {k: v for k, v in zip(a, b)}[0]
''',
}


class _Recorder(cst.CSTVisitor):
    def __init__(self, skip: type | None = None) -> None:
        self.entered: list[cst.CSTNode] = []
        self.left: list[cst.CSTNode] = []
        self.skip = skip

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.entered.append(node)
        return self.skip is None or not isinstance(node, self.skip)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.left.append(original_node)


def _code(nodes: list[cst.CSTNode]) -> list[int]:
    return [id(node) for node in nodes if not isinstance(node, _LAYOUT)]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_walk_meets_libcsts_nodes_in_text_order(name: str) -> None:
    module = cst.parse_module(SOURCES[name])
    theirs, ours = _Recorder(), _Recorder()
    module.visit(theirs)
    walk.visit(module, ours)
    assert {id(node) for node in ours.entered} == {id(node) for node in theirs.entered}
    assert _code(ours.entered) == _code(theirs.entered)
    assert _code(ours.left) == _code(theirs.left)


def test_a_hook_returning_false_skips_the_children_but_still_leaves() -> None:
    module = cst.parse_module("x = f(g(1), h(2))\ny = 3\n")
    theirs, ours = _Recorder(skip=cst.Call), _Recorder(skip=cst.Call)
    module.visit(theirs)
    walk.visit(module, ours)
    assert _code(ours.entered) == _code(theirs.entered)
    assert sum(isinstance(node, cst.Call) for node in ours.entered) == 1  # the outer call only
    assert sum(isinstance(node, cst.Call) for node in ours.left) == 1


def test_the_walk_does_not_copy_the_tree() -> None:
    module = cst.parse_module("def f(x):\n    return x + 1\n")
    before = module.body[0]
    walk.visit(module, _Recorder())
    assert module.body[0] is before


def test_contains_finds_a_node_class_anywhere_below() -> None:
    function = cst.parse_module("def f(x):\n    if x:\n        return [g(t) for t in x]\n    return x\n").body[0]
    assert walk.contains(function, cst.Call)
    assert walk.contains(function, cst.ListComp)
    assert not walk.contains(function, cst.Lambda)
    assert not walk.contains(cst.parse_module("def f(x):\n    return x + 1\n").body[0], cst.Call)
