"""Time and memory of ``shapecheck lint`` on one generated file of 2,000 vs 20,000 lines.

The file repeats one block of ordinary model code (an attention module, a feed-forward module and
a helper function, each copy with its own names) until it has the requested number of lines.
Each size is linted in a fresh process (``shapecheck lint --no-cache --jobs 1``); the script
prints wall seconds and the peak resident memory of that process.

Targets (issue 12): the 20,000-line file in under 10x the time of the 2,000-line one, and under
300 MB.

    python benchmarks/large_files.py
    python benchmarks/large_files.py --lines 2000 20000 40000
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

HEADER = "import math\n\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"

BLOCK = '''class Attention{i}(nn.Module):
    def __init__(self, d_model: int = 64, n_heads: int = 4) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q = q.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        k = k.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        v = v.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        y = scores.softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, c))


class FeedForward{i}(nn.Module):
    def __init__(self, d_model: int = 64, hidden: int = 256) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, hidden)
        self.down = nn.Linear(hidden, d_model)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


def residual{i}(x, layer):
    y = layer(x)
    return x + y


'''


def generate(lines: int) -> str:
    parts = [HEADER]
    count = HEADER.count("\n")
    index = 0
    while count < lines:
        block = BLOCK.format(i=index)
        parts.append(block)
        count += block.count("\n")
        index += 1
    return "".join(parts)


def measure(path: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB and exit code of one lint process."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    command = [sys.executable, "-m", "shapecheck", "lint", "--no-cache", "--jobs", "1", "--format", "json", str(path)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak <= before:
        peak = before  # ru_maxrss is the maximum over all children so far: measure small files first
    return seconds, peak / 1024, done.returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time and peak memory of lint on generated large files.")
    parser.add_argument("--lines", type=int, nargs="+", default=[2000, 20000], help="file sizes (ascending)")
    args = parser.parse_args(argv)
    sizes = sorted(args.lines)
    print("| lines | seconds | peak RSS MB | exit | time / smallest |")
    print("|---:|---:|---:|---:|---:|")
    base = None
    with tempfile.TemporaryDirectory(prefix="shapecheck-large-") as folder:
        for lines in sizes:
            path = Path(folder) / f"generated_{lines}.py"
            source = generate(lines)
            path.write_text(source)
            seconds, peak, code = measure(path)
            base = base or seconds
            print(f"| {source.count(chr(10)):,} | {seconds:.1f} | {peak:.0f} | {code} | {seconds / base:.1f}x |")
    print("peak RSS: ru_maxrss of the lint processes (a running maximum, so sizes are measured smallest first)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
