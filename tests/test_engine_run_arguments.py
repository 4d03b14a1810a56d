"""Each inlined run knows the argument expression its call site bound to each parameter
(``FunctionRun.arguments``), bound as the values are: by position (``self`` skipped for a method
called on an instance), then by keyword; nothing for a parameter left to its default, nor for
positions after a starred argument. SC103 reads it to report a wrong softmax dim where it is passed.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from engine_snippets import findings_on_lines
from shapecheck.engine import analyze

SOURCE = """
import torch
import torch.nn.functional as F


def softmax(hidden_state, dim=-1, onnx_trace=False):
    return F.softmax(hidden_state.float(), dim=dim)


class Attention(torch.nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.q = torch.nn.Linear(d, d)
        self.k = torch.nn.Linear(d, d)
        self.v = torch.nn.Linear(d, d)

    def weights(self, scores, dim):
        return softmax(scores, dim)

    def forward(self, x: "Float[Tensor, 'b t 64']", extra: tuple):
        s = self.q(x) @ self.k(x).transpose(-1, -2) / 8.0
        a = softmax(s, dim=-2, onnx_trace=False)
        b = self.weights(s, -2)
        c = softmax(s)
        pair = (s,)
        d = softmax(*pair, dim=-1)
        return (a + b + c) @ self.v(x)
"""


def _arguments() -> dict[str, list[dict[str, str]]]:
    source = textwrap.dedent(SOURCE)
    facts = analyze(cst.parse_module(source), source, "attention.py")
    code = cst.Module([]).code_for_node
    found: dict[str, list[dict[str, str]]] = {}
    for run in facts.runs:
        if run.inlined and run.parent is not None and run.parent.qualname == "Attention.forward":
            found.setdefault(code(run.call_node), []).append({name: code(node) for name, node in run.arguments.items()})
    return found


def test_arguments_are_bound_by_position_and_keyword_with_self_skipped():
    arguments = _arguments()
    assert arguments["softmax(s, dim=-2, onnx_trace=False)"][0] == {"hidden_state": "s", "dim": "-2", "onnx_trace": "False"}
    assert arguments["self.weights(s, -2)"][0] == {"scores": "s", "dim": "-2"}
    assert arguments["softmax(s)"][0] == {"hidden_state": "s"}
    assert arguments["softmax(*pair, dim=-1)"][0] == {"dim": "-1"}


def test_a_wrong_dim_passed_down_is_reported_where_it_is_passed():
    found = findings_on_lines(SOURCE.replace("c = softmax(s)", "c = softmax(s, dim=-1)").replace(
        "d = softmax(*pair, dim=-1)", "d = s"))
    assert sorted(line for code, line in found if code == "SC103") == ["a = softmax(s, dim=-2, onnx_trace=False)", "b = self.weights(s, -2)"]
