"""Runtime shape checks: errors a person understands, the on/off switch, construction errors.

Dims: b batch, t time, d_model width, vocab_size vocabulary.
"""

import sys

import pytest

torch = pytest.importorskip("torch")

import reference_model  # noqa: E402
from conftest import in_fork  # noqa: E402
from reference_model import (  # noqa: E402
    ENV_VAR,
    CausalSelfAttention,
    Encoder,
    MiniBERT,
    MiniGPT,
    MultiHeadAttention,
    Transformer,
    TypeCheckError,
    typecheck_enabled,
    typechecking,
)


@pytest.fixture(scope="module")
def encoder():
    return Encoder(d_model=512, n_heads=8, d_ff=2048, n_layers=1).eval()


def check_message(message: str, *, function: str, argument: str, annotation: str, dims: dict[str, int]) -> None:
    """The four things a shape error must name (shapecheck.runtime's one-line message)."""
    path = function.split(".")[1]  # reference_model.encoder.Encoder.forward -> encoder
    qualname = ".".join(function.split(".")[2:])
    assert message.startswith(f"{qualname} (") and f"{path}.py:" in message.split(")")[0], message
    assert f": parameter {argument}: expected {annotation}, got " in message, message
    bound = message.split("dims bound so far: ")[1].split(";")[0].split()
    for name, size in dims.items():
        assert f"{name}={size}" in bound, (name, size, bound)
    assert "\n" not in message  # one line


def test_encoder_rejects_wrong_width_naming_d_model(encoder):
    with pytest.raises(TypeCheckError) as info:
        encoder(torch.randn(2, 5, 384))
    check_message(
        str(info.value),
        function="reference_model.encoder.Encoder.forward",
        argument="x",
        annotation="Float[Tensor, 'b t d_model']",
        dims={"d_model": 512, "b": 2, "t": 5},  # d_model comes from the module, b and t from x
    )
    assert "got float32[2, 5, 384]" in str(info.value)
    assert str(info.value).endswith("axis 2: expected d_model=512, got 384")


def test_encoder_rejects_mask_of_wrong_length(encoder):
    with pytest.raises(TypeCheckError) as info:
        encoder(torch.randn(2, 5, 512), torch.zeros(5, 6, dtype=torch.bool))
    check_message(
        str(info.value),
        function="reference_model.encoder.Encoder.forward",
        argument="mask",
        annotation="Bool[Tensor, '#t t'] | Bool[Tensor, '#b #h #t t'] | None",
        dims={"d_model": 512, "b": 2, "t": 5},
    )
    assert "got bool[5, 6]" in str(info.value)
    assert str(info.value).endswith("axis 1: expected t=5, got 6")


def test_encoder_rejects_float_mask(encoder):
    with pytest.raises(TypeCheckError, match="parameter mask:"):
        encoder(torch.randn(2, 5, 512), torch.zeros(5, 5))


@pytest.mark.parametrize(
    ("model", "function"),
    [
        (MiniGPT(vocab_size=14, d_model=32, n_heads=4, n_layers=1, max_len=16), "reference_model.gpt.MiniGPT.forward"),
        (MiniBERT(vocab_size=50, d_model=32, n_heads=4, n_layers=1, max_len=16), "reference_model.bert.MiniBERT.forward"),
    ],
    ids=["MiniGPT", "MiniBERT"],
)
def test_models_reject_float_token_ids(model, function):
    with pytest.raises(TypeCheckError) as info:
        model(torch.randn(2, 5))
    message = str(info.value)
    assert message.startswith(function.split(".", 2)[2] + " (")
    assert "parameter idx:" in message or "parameter ids:" in message
    assert "expected Int[Tensor, 'b t'], got float32[2, 5]" in message
    assert message.endswith("dtype: expected Int, got float32")


def test_transformer_checks_both_sequences_and_the_batch():
    model = Transformer(src_vocab_size=30, tgt_vocab_size=20, d_model=32, n_heads=4, n_layers=1, d_ff=64, max_len=16)
    src, tgt = torch.randint(0, 30, (2, 7)), torch.randint(0, 20, (3, 5))
    with pytest.raises(TypeCheckError) as info:
        model(src, tgt)  # batch 2 vs 3
    check_message(
        str(info.value),
        function="reference_model.decoder.Transformer.forward",
        argument="tgt",
        annotation="Int[Tensor, 'b t']",
        dims={"b": 2, "s": 7},
    )
    assert model(src, tgt[:2]).shape == (2, 5, 20)


def test_mha_weights_annotation_is_checked_against_heads():
    mha = MultiHeadAttention(d_model=32, n_heads=4)
    x = torch.randn(2, 5, 32)
    with pytest.raises(TypeCheckError, match="parameter mask:"):
        mha(x, x, x, torch.zeros(2, 3, 5, 5, dtype=torch.bool))  # 3 heads' worth of mask for 4 heads
    out, weights = mha(x, x, x, torch.zeros(2, 4, 5, 5, dtype=torch.bool))
    assert weights.shape == (2, 4, 5, 5)


def test_return_values_are_checked_too():
    attn = CausalSelfAttention(d_model=32, n_heads=4, max_len=8)
    attn.W_O = torch.nn.Linear(32, 16)  # a broken module: output width != d_model
    with pytest.raises(TypeCheckError, match=r"^CausalSelfAttention.forward \(.*attention.py:\d+\): return value: expected Float\[Tensor, 'b t d_model'\], got float32\[1, 4, 16\]"):
        attn(torch.randn(1, 4, 32))


def test_checks_can_be_switched_off_at_run_time(encoder):
    assert typecheck_enabled()
    with typechecking(False):
        assert not typecheck_enabled()
        with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
            encoder(torch.randn(2, 5, 384))  # torch's own error, deep inside the first layer
    assert typecheck_enabled()


def test_environment_variable_switches_checks_off(tmp_path):
    def body() -> None:
        # A fresh import of reference_model with the variable set (torch stays imported: the fork
        # saves an interpreter start); its checking switch is read when reference_model loads.
        for name in [name for name in sys.modules if name == "reference_model" or name.startswith("reference_model.")]:
            del sys.modules[name]
        import reference_model as fresh

        print(fresh.typecheck_enabled())
        try:
            fresh.Encoder(d_model=16, n_heads=2, d_ff=32, n_layers=1)(torch.randn(2, 5, 8))
        except Exception as error:  # noqa: BLE001 - the test prints which error the model raised
            print(type(error).__name__)

    result = in_fork(body, ["python", "-c", "..."], tmp_path, env={ENV_VAR: "0"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "RuntimeError"]


def test_heads_must_divide_d_model():
    with pytest.raises(ValueError, match=r"d_model=10 must be divisible by n_heads=4.*10 % 4 = 2"):
        MultiHeadAttention(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match=r"d_model=30 must be divisible by n_heads=4"):
        CausalSelfAttention(d_model=30, n_heads=4, max_len=8)
    with pytest.raises(ValueError, match="d_model=512 must be divisible by n_heads=0"):
        MultiHeadAttention(d_model=512, n_heads=0)


def test_projections_are_named_and_distinct():
    mha = MultiHeadAttention(d_model=32, n_heads=4)
    projections = [mha.W_Q, mha.W_K, mha.W_V, mha.W_O]
    assert all(isinstance(p, torch.nn.Linear) for p in projections)
    assert len({id(p.weight) for p in projections}) == 4


def test_public_api_is_explicit():
    assert sorted(reference_model.__all__) == sorted(set(reference_model.__all__))
    for name in reference_model.__all__:
        assert hasattr(reference_model, name), name


def test_int_is_accepted_where_float_is_annotated():
    """PEP 484 numeric tower: dropout=0 is a valid float argument, not a type error."""
    mha = MultiHeadAttention(d_model=16, n_heads=2, dropout=0).train()
    x = torch.randn(1, 3, 16)
    assert mha(x, x, x)[0].shape == (1, 3, 16)
    q = torch.randn(1, 3, 8)
    assert reference_model.scaled_dot_product_attention(q, q, q, dropout_p=0)[0].shape == (1, 3, 8)


def test_three_dimensional_mask_is_rejected():
    """A (b, t, t) mask would broadcast b against the heads (seed 2, pitfall 7.2): use (b, 1, t, t)."""
    mha = MultiHeadAttention(d_model=16, n_heads=2)
    x = torch.randn(2, 4, 16)
    with pytest.raises(TypeCheckError, match="parameter mask:"):
        mha(x, x, x, torch.zeros(2, 4, 4, dtype=torch.bool))
    assert mha(x, x, x, torch.zeros(2, 1, 4, 4, dtype=torch.bool))[1].shape == (2, 2, 4, 4)
