"""Cost of runtime shape checks on reference_model.MiniGPT: unchecked vs plain jaxtyping+beartype vs shapecheck.

    python benchmarks/runtime_overhead.py [--repeats 9] [--threads 1] [--sizes tiny,medium]

Three variants of the same model code, swapped in place between calls:

- unchecked: the undecorated functions (what ``SHAPECHECK_RUNTIME=0`` gives);
- jaxtyping+beartype: ``jaxtyped(typechecker=beartype)`` on the same functions, as jaxtyping's
  own decorator or import hook would do (no module sizes bound, no cache);
- shapecheck: ``shapecheck.runtime.checked`` (module sizes bound, validated calls cached).

For each workload (forward under no_grad; forward + backward of a cross-entropy loss) and size
(tiny: b=4 t=16 d=64 4 heads 2 layers; medium: b=8 t=256 d=384 6 heads 6 layers) the variants run
in turn, round after round, so that all three see the same background load; the median time per
call is reported with the ratios to unchecked. Also printed: the cost of one call of a trivial
annotated function under each variant. Targets: shapecheck/unchecked <= 1.10 tiny, <= 1.03 medium.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from beartype import beartype  # noqa: E402
from jaxtyping import Float, jaxtyped  # noqa: E402
from torch import Tensor  # noqa: E402

import reference_model  # noqa: E402
from reference_model import MiniGPT  # noqa: E402
from shapecheck.runtime import checked  # noqa: E402

VARIANTS = ("unchecked", "jaxtyping+beartype", "shapecheck")
SIZES = {
    "tiny": {"batch": 4, "time": 16, "d_model": 64, "n_heads": 4, "n_layers": 2},
    "medium": {"batch": 8, "time": 256, "d_model": 384, "n_heads": 6, "n_layers": 6},
}
VOCAB_SIZE = 65
#: CPU time of this process: with one torch thread all the work is here, and the other jobs of a
#: busy machine change it far less than wall time. ``--clock wall`` measures wall time instead.
CLOCK = time.process_time


class Variants:
    """Every checked function of reference_model, and where it is stored, in three versions."""

    def __init__(self) -> None:
        self.slots: list[tuple[Any, str, dict[str, Any]]] = []  # (owner, attribute, versions)
        owners: list[Any] = []
        for name, module in sorted(sys.modules.items()):
            if name == "reference_model" or name.startswith("reference_model."):
                owners.append(module)
                owners += [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == name]
        made: dict[int, dict[str, Any]] = {}
        for owner in owners:
            for attribute, value in list(vars(owner).items()):
                if not getattr(value, "__shapecheck_checked__", False):
                    continue
                if id(value) not in made:
                    original = value.__wrapped__
                    made[id(value)] = {
                        "unchecked": original,
                        "jaxtyping+beartype": jaxtyped(typechecker=beartype)(original),
                        "shapecheck": value,
                    }
                self.slots.append((owner, attribute, made[id(value)]))

    def use(self, variant: str) -> None:
        for owner, attribute, versions in self.slots:
            setattr(owner, attribute, versions[variant])


def workloads(size: dict[str, int]) -> dict[str, Callable[[], object]]:
    torch.manual_seed(0)
    model = MiniGPT(VOCAB_SIZE, size["d_model"], size["n_heads"], size["n_layers"], max_len=size["time"]).eval()
    idx = torch.randint(0, VOCAB_SIZE, (size["batch"], size["time"]))
    targets = torch.randint(0, VOCAB_SIZE, (size["batch"], size["time"]))

    def forward() -> None:
        with torch.no_grad():
            model(idx)

    def forward_backward() -> None:
        logits = model(idx)  # (b, t, vocab_size)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        model.zero_grad(set_to_none=True)
        loss.backward()

    return {"forward": forward, "forward+backward": forward_backward}


def measure(variants: Variants, fn: Callable[[], object], rounds: int) -> dict[str, float]:
    """Median seconds per call of each variant, the variants taking turns round after round."""
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for variant in VARIANTS:  # warm up (and fill shapecheck's cache)
        variants.use(variant)
        for _ in range(2):
            fn()
    for round_index in range(rounds):
        order = VARIANTS if round_index % 2 == 0 else VARIANTS[::-1]
        for variant in order:
            variants.use(variant)
            start = CLOCK()
            fn()
            times[variant].append(CLOCK() - start)
    variants.use("shapecheck")
    return {v: statistics.median(t) for v, t in times.items()}


def trivial_call_costs(calls: int) -> dict[str, float]:
    """Seconds per call of a one-line annotated function under each variant."""

    def add(x: Float[Tensor, "b d"], y: Float[Tensor, "b d"]) -> Float[Tensor, "b d"]:
        return x

    versions = {"unchecked": add, "jaxtyping+beartype": jaxtyped(typechecker=beartype)(add), "shapecheck": checked(add)}
    x = torch.zeros(2, 3)
    best = {}
    for variant, fn in versions.items():
        runs = []
        for _ in range(5):
            start = CLOCK()
            for _ in range(calls):
                fn(x, x)
            runs.append((CLOCK() - start) / calls)
        best[variant] = min(runs)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="rounds per workload at medium size (x10 at tiny)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sizes", default="tiny,medium", help="comma-separated: tiny, medium")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="process CPU time (default) or wall time")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(args.threads)
    assert reference_model.typecheck_enabled(), "run with checks on (unset SHAPECHECK_RUNTIME)"

    print(f"torch {torch.__version__}, {args.threads} thread(s), {args.clock} time; median per call, variants alternating")
    costs = trivial_call_costs(2000)
    print("one call of a trivial annotated function: " + ", ".join(f"{v} {c * 1e6:.1f} us" for v, c in costs.items()))
    variants = Variants()
    header = f"{'size':7} {'workload':17} {'unchecked':>10} {'jax+bear':>10} {'shapecheck':>10} {'jax+bear/unch':>14} {'shapecheck/unch':>16}"
    print(header)
    print("-" * len(header))
    for size_name in args.sizes.split(","):
        size = SIZES[size_name]
        rounds = args.repeats * (10 if size_name == "tiny" else 1)
        for workload, fn in workloads(size).items():
            median = measure(variants, fn, rounds)
            base = median["unchecked"]
            print(
                f"{size_name:7} {workload:17} {base * 1e3:8.2f}ms {median['jaxtyping+beartype'] * 1e3:8.2f}ms "
                f"{median['shapecheck'] * 1e3:8.2f}ms {median['jaxtyping+beartype'] / base:14.3f} "
                f"{median['shapecheck'] / base:16.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
