"""Train MiniGPT on the second seed's character-level task: ``python -m reference_model.train``.

The text is "To be, or not to be, that is the question." repeated 100 times; batches of 4 windows
of 16 characters, AdamW at lr 3e-4, 500 steps. A rich progress bar runs while it trains and the
train / validation losses are printed every 100 steps, then a greedy sample.

Dims: b batch (4), t time (block_size, 16), vocab_size distinct characters (14).

    x = data[i : i + 16]       (b, t)  inputs
    y = data[i + 1 : i + 17]   (b, t)  targets: the same window shifted by one character
    logits = model(x)          (b, t, vocab_size)
    loss = cross_entropy(logits.view(b * t, vocab_size), y.view(b * t))
"""

import argparse
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from reference_model.checking import typechecked
from reference_model.gpt import MiniGPT

__all__ = [
    "TEXT",
    "CharVocab",
    "TrainConfig",
    "TrainResult",
    "estimate_loss",
    "get_batch",
    "main",
    "train",
    "train_step",
]

TEXT = "To be, or not to be, that is the question." * 100


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides a run; the defaults are the seed's task."""

    steps: int = 500
    batch_size: int = 4
    block_size: int = 16  # characters of context = MiniGPT.max_len
    lr: float = 3e-4  # AdamW
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    dropout: float = 0.0
    eval_every: int = 100
    eval_batches: int = 20  # batches averaged for each validation loss
    val_fraction: float = 0.1  # the tail of the text held out for validation
    target_loss: float | None = None  # stop at the first evaluation below this validation loss
    seed: int = 0


@dataclass
class TrainResult:
    """A trained model and its loss curve."""

    model: MiniGPT
    vocab: "CharVocab"
    val_losses: dict[int, float] = field(default_factory=dict)  # step -> validation loss
    train_losses: dict[int, float] = field(default_factory=dict)  # step -> mean train loss since last eval
    seconds: float = 0.0

    @property
    def final_val_loss(self) -> float:
        return self.val_losses[max(self.val_losses)]


class CharVocab:
    """Characters <-> ids, sorted so that ids are stable."""

    def __init__(self, text: str) -> None:
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> Int[Tensor, " n"]:
        return torch.tensor([self.stoi[c] for c in text], dtype=torch.long)

    def decode(self, ids: Int[Tensor, " n"]) -> str:
        return "".join(self.chars[i] for i in ids.tolist())


@typechecked
def get_batch(
    data: Int[Tensor, " n"], batch_size: int, block_size: int, generator: torch.Generator
) -> tuple[Int[Tensor, "b t"], Int[Tensor, "b t"]]:
    """Random windows x and the next-character targets y = x shifted left by one."""
    starts = torch.randint(0, len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i : i + block_size] for i in starts.tolist()])  # (b, t)
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in starts.tolist()])  # (b, t)
    return x, y


def _lm_loss(model: MiniGPT, x: Int[Tensor, "b t"], y: Int[Tensor, "b t"]) -> Float[Tensor, ""]:
    logits = model(x)  # (b, t, vocab_size)
    b, t, vocab_size = logits.shape
    return F.cross_entropy(logits.view(b * t, vocab_size), y.view(b * t))


@typechecked
def train_step(
    model: MiniGPT, optimizer: torch.optim.Optimizer, x: Int[Tensor, "b t"], y: Int[Tensor, "b t"]
) -> float:
    """One AdamW step in training mode; returns the batch loss."""
    model.train()
    loss = _lm_loss(model, x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
@typechecked
def estimate_loss(
    model: MiniGPT, data: Int[Tensor, " n"], batch_size: int, block_size: int, n_batches: int, seed: int = 1234
) -> float:
    """Mean loss over ``n_batches`` fixed batches in eval mode; restores the previous mode."""
    was_training = model.training
    model.eval()
    try:
        generator = torch.Generator().manual_seed(seed)  # the same batches at every evaluation
        batches = [get_batch(data, batch_size, block_size, generator) for _ in range(n_batches)]
        losses = [_lm_loss(model, x, y) for x, y in batches]
        return torch.stack(losses).mean().item()
    finally:
        model.train(was_training)


def train(
    config: TrainConfig = TrainConfig(),
    text: str = TEXT,
    model: MiniGPT | None = None,
    on_step: Callable[[int], None] | None = None,
    on_eval: Callable[[int, float, float], None] | None = None,
) -> TrainResult:
    """Train a MiniGPT (a new one from ``config`` unless ``model`` is given) on ``text``.

    ``on_step(step)`` runs after every step and ``on_eval(step, train_loss, val_loss)`` after
    every evaluation; the CLI uses them for its progress bar and loss lines.
    """
    torch.manual_seed(config.seed)
    vocab = CharVocab(text)
    data = vocab.encode(text)
    n_val = int(len(data) * config.val_fraction)
    train_data, val_data = data[:-n_val], data[-n_val:]
    if model is None:
        model = MiniGPT(
            len(vocab), config.d_model, config.n_heads, config.n_layers, config.block_size, config.dropout
        )
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
    generator = torch.Generator().manual_seed(config.seed)
    result = TrainResult(model=model, vocab=vocab)
    recent: list[float] = []
    start = time.perf_counter()
    for step in range(1, config.steps + 1):
        x, y = get_batch(train_data, config.batch_size, config.block_size, generator)
        recent.append(train_step(model, optimizer, x, y))
        if step % config.eval_every == 0 or step == config.steps:
            val = estimate_loss(model, val_data, config.batch_size, config.block_size, config.eval_batches)
            result.train_losses[step] = sum(recent) / len(recent)
            result.val_losses[step] = val
            recent.clear()
            if on_eval is not None:
                on_eval(step, result.train_losses[step], val)
        if on_step is not None:
            on_step(step)
        if config.target_loss is not None and result.val_losses.get(step, float("inf")) < config.target_loss:
            break
    result.seconds = time.perf_counter() - start
    model.eval()  # done training: hand back a model ready for inference
    return result


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    parser = argparse.ArgumentParser(
        prog="python -m reference_model.train", description=__doc__.splitlines()[0]
    )
    defaults = TrainConfig()
    parser.add_argument("--steps", type=int, default=defaults.steps)
    parser.add_argument("--lr", type=float, default=defaults.lr)
    parser.add_argument("--d-model", type=int, default=defaults.d_model)
    parser.add_argument("--n-heads", type=int, default=defaults.n_heads)
    parser.add_argument("--n-layers", type=int, default=defaults.n_layers)
    parser.add_argument("--dropout", type=float, default=defaults.dropout)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (1 is fastest at this size)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = TrainConfig(
        steps=args.steps,
        lr=args.lr,
        d_model=args.d_model,
        n_heads=args.n_heads,
        n_layers=args.n_layers,
        dropout=args.dropout,
        seed=args.seed,
    )
    console = Console()
    console.print(f"MiniGPT on {len(TEXT)} characters: {asdict(config)}")
    columns = (TextColumn("training"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("train", total=config.steps)
        result = train(
            config,
            on_step=lambda step: progress.update(task, completed=step),
            on_eval=lambda step, tr, val: progress.console.print(
                f"step {step:4d}  train loss {tr:.4f}  val loss {val:.4f}"
            ),
        )
    n_params = sum(p.numel() for p in result.model.parameters())
    console.print(
        f"{n_params:,} parameters, {result.seconds:.1f} s, "
        f"final val loss {result.final_val_loss:.4f}"
    )
    prompt = result.vocab.encode("To be")[None, :]  # (1, 5)
    sample = result.model.generate(prompt, max_new_tokens=60)  # model is in eval mode
    console.print(f"sample: {result.vocab.decode(sample[0])!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
