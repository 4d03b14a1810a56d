"""The training demo: MiniGPT learns the second seed's text, with train/eval modes used right."""

import pytest

torch = pytest.importorskip("torch")

from reference_model import MiniGPT  # noqa: E402
from reference_model.train import (  # noqa: E402
    TEXT,
    CharVocab,
    TrainConfig,
    estimate_loss,
    get_batch,
    main,
    train,
)


@pytest.fixture(autouse=True)
def _single_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 100k-parameter model: threads only add contention
    yield
    torch.set_num_threads(threads)


def record_modes(model):
    """Record (model.training, grad enabled) at every forward of the whole model."""
    seen: list[tuple[bool, bool]] = []
    model.register_forward_pre_hook(lambda module, args: seen.append((module.training, torch.is_grad_enabled())))
    return seen


def test_loss_falls_below_0_6_within_500_steps_with_the_seed_settings():
    config = TrainConfig(steps=500, target_loss=0.6, seed=0)
    assert (config.batch_size, config.block_size, config.lr) == (4, 16, 3e-4)
    torch.manual_seed(config.seed)
    model = MiniGPT(len(CharVocab(TEXT)), config.d_model, config.n_heads, config.n_layers, config.block_size)
    modes = record_modes(model)
    result = train(config, model=model)

    first_below = min(step for step, loss in result.val_losses.items() if loss < 0.6)
    assert first_below <= 500
    assert result.final_val_loss < 0.6
    # Training forwards (with grad) ran in train mode, evaluation forwards (no grad) in eval mode.
    assert modes and all(training == grad for training, grad in modes)
    assert sum(1 for training, _ in modes if training) >= first_below
    assert not result.model.training  # handed back ready for inference


def test_estimate_loss_uses_eval_mode_and_restores_the_previous_mode():
    vocab = CharVocab(TEXT)
    data = vocab.encode(TEXT)
    model = MiniGPT(len(vocab), d_model=32, n_heads=4, n_layers=1, max_len=16, dropout=0.1)
    seen = record_modes(model)
    for mode in (True, False):
        model.train(mode)
        loss = estimate_loss(model, data, batch_size=4, block_size=16, n_batches=2)
        assert model.training is mode
        assert loss > 0
    assert seen and all(training is False and grad is False for training, grad in seen)
    # With dropout, eval-mode losses are deterministic.
    assert estimate_loss(model, data, 4, 16, 2) == estimate_loss(model, data, 4, 16, 2)


def test_batches_are_next_character_targets():
    vocab = CharVocab(TEXT)
    assert len(vocab) == len(set(TEXT))
    data = vocab.encode(TEXT)
    x, y = get_batch(data, batch_size=4, block_size=16, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 16) and x.dtype == torch.long
    assert torch.equal(x[:, 1:], y[:, :-1])  # y is x shifted left by one
    assert vocab.decode(data[:13]) == "To be, or not"


def test_cli_runs_and_prints_the_loss(capsys):
    assert main(["--steps", "20", "--d-model", "16", "--n-heads", "2", "--n-layers", "1"]) == 0
    out = capsys.readouterr().out
    assert "step   20  train loss" in out and "val loss" in out and "sample:" in out
