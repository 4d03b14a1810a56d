"""shapecheck.trace and `shapecheck trace`: the submodule calls of one forward pass, with shapes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from conftest import run_forked  # noqa: E402

import shapecheck  # noqa: E402
from reference_model import MiniGPT  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return MiniGPT(vocab_size=65, d_model=32, n_heads=4, n_layers=2, max_len=16).eval()


def test_trace_tree_names_dims_from_annotations(model):
    trace = shapecheck.trace(model, torch.zeros(2, 16, dtype=torch.long))
    root = trace.root
    assert root.label() == "MiniGPT(idx=int64(b=2, t=16)) -> float32(b=2, t=16, vocab_size=65)"
    names = [node.name for node in root.walk()]
    assert names[:3] == ["MiniGPT", "token_embedding", "position_embedding"]
    assert names.count("blocks.1.attn.W_Q") == 1
    attention = next(node for node in root.walk() if node.name == "blocks.0.attn")
    assert attention.label() == "attn: CausalSelfAttention(x=float32(b=2, t=16, d_model=32)) -> float32(b=2, t=16, d_model=32)"
    w1 = next(node for node in root.walk() if node.name == "blocks.0.ffn.W_1")
    assert w1.outputs == ["float32(2, 16, 128)"]  # nn.Linear has no annotations: plain sizes
    assert str(trace).splitlines()[1] == "    token_embedding: Embedding(input=int64(2, 16)) -> float32(2, 16, 32)"


def test_meta_device_leaves_the_model_alone(model):
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trace = shapecheck.trace(model, torch.zeros(2, 16, dtype=torch.long), device="meta")
    assert trace.root.outputs == ["float32(b=2, t=16, vocab_size=65)"]
    for name, parameter in model.named_parameters():
        assert parameter.device.type == "cpu" and torch.equal(parameter, before[name])


def test_meta_trace_of_a_large_model_allocates_nothing():
    with torch.device("meta"):
        big = MiniGPT(vocab_size=50_000, d_model=2048, n_heads=16, n_layers=24, max_len=4096)
    trace = shapecheck.trace(big, torch.zeros(8, 4096, dtype=torch.long), device="meta")
    assert trace.root.outputs == ["float32(b=8, t=4096, vocab_size=50000)"]


def test_shape_errors_surface_during_a_trace(model):
    with pytest.raises(shapecheck.ShapeCheckError, match="dtype: expected Int, got float32"):
        shapecheck.trace(model, torch.zeros(2, 16))


def test_mermaid_and_rich_renderings(model):
    trace = shapecheck.trace(model, torch.zeros(2, 16, dtype=torch.long), device="meta")
    mermaid = trace.to_mermaid()
    lines = mermaid.splitlines()
    assert lines[0] == "flowchart TD"
    assert 'n0["MiniGPT<br/>idx: int64(b=2, t=16)"]' in mermaid
    assert '-- "float32(b=2, t=16, d_model=32)" -->' in mermaid
    assert lines[-2].strip() == 'n0_out(["float32(b=2, t=16, vocab_size=65)"])'
    assert mermaid.count("subgraph") == mermaid.count("\n    end") + mermaid.count("\n        end") + mermaid.count("\n            end")
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(trace)
    text = console.export_text()
    assert text.splitlines()[0] == "MiniGPT(idx=int64(b=2, t=16)) -> float32(b=2, t=16, vocab_size=65)"
    assert "├── blocks.0: GPTBlock(x=float32(b=2, t=16, d_model=32))" in text


def test_trace_command(cli, tmp_path):
    """End to end in a process of its own (text; a fork of this one, torch already imported); the
    mermaid rendering of the same command in this process."""
    done = run_forked(
        ["trace", "reference_model:MiniGPT", "--kwargs", "vocab_size=65", "d_model=32", "n_heads=4", "n_layers=1",
         "max_len=16", "--input", "idx: int64[2, 16]", "--device", "meta"],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "MiniGPT(idx=int64(b=2, t=16)) -> float32(b=2, t=16, vocab_size=65)"
    assert any("attn: CausalSelfAttention(x=float32(b=2, t=16, d_model=32))" in line for line in lines)
    mermaid = cli(
        "trace", "reference_model:MiniGPT", "--kwargs", "vocab_size=65,d_model=32,n_heads=4,n_layers=1,max_len=16",
        "--input", "int64[2, 16]", "--format", "mermaid", cwd=tmp_path,
    )
    assert mermaid.code == 0, mermaid.err
    assert mermaid.out.startswith("flowchart TD\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["reference_model"], "expected MODULE:FACTORY"),
        (["no_such_pkg_x:f"], "cannot import no_such_pkg_x"),
        (["reference_model:Nope"], "reference_model has no attribute 'Nope'"),
        (["reference_model:MiniGPT", "--input", "idx: int64[2 16"], "--input: expected"),
        (["reference_model:MiniGPT", "--input", "idx: complex7[2]"], "unknown dtype 'complex7'"),
        (["reference_model:MiniGPT", "--kwargs", "oops"], "--kwargs: expected NAME=VALUE"),
        (["reference_model:MiniGPT", "--kwargs", "wrong=1"], "unexpected keyword argument 'wrong'"),
        (["reference_model:causal_mask", "--kwargs", "t=3"], "returned a Tensor, not a torch.nn.Module"),
        (
            ["reference_model:MiniGPT", "--kwargs", "vocab_size=5,d_model=8,n_heads=2,n_layers=1,max_len=4", "--input", "idx: int64[1, 9]"],
            "the forward pass failed",
        ),
    ],
)
def test_trace_command_bad_input_exits_2(cli, args, message):
    ran = cli("trace", *args)
    assert ran.code == 2, ran.err
    assert message in ran.err


def test_trace_command_shape_error_exits_1(cli):
    ran = cli("trace", "reference_model:MiniGPT", "--kwargs", "vocab_size=5,d_model=8,n_heads=2,n_layers=1,max_len=4",
              "--input", "idx: float32[1, 4]")
    assert ran.code == 1
    assert ran.err.startswith("shapecheck: MiniGPT.forward (") and ran.err.strip().endswith("dtype: expected Int, got float32")
