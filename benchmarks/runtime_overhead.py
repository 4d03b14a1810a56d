"""Cost of reference_model's runtime shape checks (jaxtyping + beartype), on versus off.

    python benchmarks/runtime_overhead.py [--repeats 7] [--threads 1]

For each workload, times calls with checks on and off alternately (``typechecking(True/False)``,
the same switch as REFERENCE_MODEL_TYPECHECK=0) and prints the median times, the absolute overhead
per call, and the overhead both ways: how much slower checking makes a call, and how much faster
turning it off makes it. Every checked forward adds a roughly constant cost, so the relative
overhead is large for tiny models and small for big ones.
"""

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from reference_model import Encoder, MiniGPT, typechecking
from reference_model.train import TEXT, CharVocab, TrainConfig, get_batch


def measure(fn: Callable[[], object], calls: int, repeats: int) -> tuple[float, float]:
    """Median seconds per call with checks on and off.

    Calls alternate on, off, on, off ... so that both see the same background load, and the median
    of the single-call times ignores the calls that another process slowed down.
    """
    for enabled in (True, False):  # warm up both paths
        with typechecking(enabled):
            for _ in range(3):
                fn()
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(calls * repeats):
        for enabled in (True, False):
            with typechecking(enabled):
                start = time.perf_counter()
                fn()
                times[enabled].append(time.perf_counter() - start)
    return statistics.median(times[True]), statistics.median(times[False])


def workloads() -> list[tuple[str, int, Callable[[], object]]]:
    """(name, checked calls per run, function) for each measured workload."""
    torch.manual_seed(0)
    config = TrainConfig()
    vocab = CharVocab(TEXT)
    data = vocab.encode(TEXT)
    gpt = MiniGPT(len(vocab), config.d_model, config.n_heads, config.n_layers, config.block_size)
    optimizer = torch.optim.AdamW(gpt.parameters(), lr=config.lr)
    x, y = get_batch(data, config.batch_size, config.block_size, torch.Generator().manual_seed(0))

    def gpt_train_step() -> None:
        gpt.train()
        logits = gpt(x)  # (b, t, vocab_size)
        b, t, v = logits.shape
        loss = F.cross_entropy(logits.view(b * t, v), y.view(b * t))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    small = Encoder(d_model=64, n_heads=4, d_ff=256, n_layers=2).eval()
    seed_size = Encoder(d_model=512, n_heads=8, d_ff=2048, n_layers=6).eval()
    x_small, x_seed = torch.randn(4, 16, 64), torch.randn(1, 5, 512)

    @torch.no_grad()
    def gpt_forward() -> None:
        gpt.eval()
        gpt(x)

    @torch.no_grad()
    def encoder_small() -> None:
        small(x_small)

    @torch.no_grad()
    def encoder_seed() -> None:
        seed_size(x_seed)

    # checked calls: MiniGPT = forward + embed + position + per block (block, attention, sdpa,
    # ffn); Encoder = forward + per layer (layer, attention, sdpa, ffn)
    return [
        ("MiniGPT train step (b4 t16, d64, 2 layers)", 3 + 2 * 4, gpt_train_step),
        ("MiniGPT forward, no grad", 3 + 2 * 4, gpt_forward),
        ("Encoder forward (b4 t16, d64, 2 layers)", 1 + 2 * 4, encoder_small),
        ("Encoder forward (b1 t5, d512, 6 layers)", 1 + 6 * 4, encoder_seed),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(f"torch {torch.__version__}, {args.threads} thread(s), median of {args.repeats * args.calls} alternating calls each")
    columns = ("checks on", "off", "+per call", "on vs off", "off vs on", "per check")
    header = f"{'workload':44} " + " ".join(f"{c:>10}" for c in columns)
    print(header)
    print("-" * len(header))
    for name, n_checked, fn in workloads():
        on, off = measure(fn, args.calls, args.repeats)
        slower = (on - off) / off * 100  # checks on: this much slower than off
        faster = (on - off) / on * 100  # checks off: this much of the checked time saved
        print(
            f"{name:44} {on * 1e3:8.2f}ms {off * 1e3:8.2f}ms {(on - off) * 1e3:8.2f}ms "
            f"{slower:+9.0f}% {-faster:+9.0f}% {(on - off) / n_checked * 1e6:8.0f}us"
        )


if __name__ == "__main__":
    main()
