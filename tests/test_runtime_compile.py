"""Checks step aside while torch.compile / dynamo traces: no graph break, no recompilation."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from reference_model import MiniGPT  # noqa: E402
from shapecheck.runtime import ShapeCheckError  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def dynamo():
    """torch._dynamo, imported by the tests that use it (seconds of import: not at collection, in every
    test process)."""
    import torch._dynamo

    return torch._dynamo


@pytest.fixture
def model():
    torch.manual_seed(0)
    return MiniGPT(vocab_size=17, d_model=16, n_heads=2, n_layers=1, max_len=8).eval()


def test_compiled_checked_model_has_one_graph_and_no_breaks(model):
    from torch._dynamo.utils import counters

    assert type(model).forward.__shapecheck_checked__  # the forward really is a checked wrapper
    idx = torch.randint(0, 17, (2, 8))
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(model, backend="eager")
    with torch.no_grad():
        outputs = [compiled(idx) for _ in range(4)]
        expected = model(idx)
    assert counters["stats"]["unique_graphs"] == 1
    assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])
    assert counters["frames"]["total"] == 1  # compiled once, the three later calls reuse it
    assert all(torch.allclose(out, expected) for out in outputs)


def test_explain_reports_no_graph_break(model):
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(model)(torch.randint(0, 17, (2, 8)))
    assert explanation.graph_count == 1
    assert explanation.graph_break_count == 0, explanation.break_reasons


def test_eager_calls_are_still_checked_after_compiling(model):
    torch._dynamo.reset()
    torch.compile(model, backend="eager")(torch.randint(0, 17, (2, 8)))
    with pytest.raises(ShapeCheckError, match="dtype: expected Int, got float32"):
        model(torch.zeros(2, 8))
