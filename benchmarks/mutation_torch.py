"""Check with torch that planted bugs are bugs: the mutant's output differs from the original's.

For the corpora whose modules run standalone (perceiver-pytorch, rotary-embedding-torch,
local-attention, x-transformers), a sample of the mutants of ``mutation.py --json FILE`` is run:
the package is copied to a temporary folder, the mutated file written over the original, and a
small fixed-seed model is built and run on random input in a fresh subprocess. The verdict per
mutant is ``differs`` (outputs not close), ``crashes`` (the mutant raises where the original does
not), or ``same`` (the probe does not reach the mutated code, or the bug is invisible there).

    python benchmarks/mutation.py --corpus perceiver-pytorch --json /tmp/m.json
    python benchmarks/mutation_torch.py /tmp/m.json --sample 10

This script imports torch (``shapecheck lint`` never does).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402

# Stand-ins for imports the probes never exercise (logging, optional residual helpers).
STUBS = """
import sys, types
loguru = types.ModuleType("loguru")
loguru.logger = types.SimpleNamespace(warning=print, info=print, debug=print)
sys.modules.setdefault("loguru", loguru)
"""

PROBES = {
    "perceiver-pytorch": """
from perceiver_pytorch import Perceiver, PerceiverIO
m = Perceiver(input_channels=3, input_axis=2, num_freq_bands=4, max_freq=10., depth=1, num_latents=8,
              latent_dim=32, cross_heads=1, latent_heads=2, cross_dim_head=16, latent_dim_head=16,
              num_classes=5, self_per_cross_attn=1).eval()
outputs.append(m(torch.randn(2, 8, 8, 3)))
io = PerceiverIO(dim=16, queries_dim=8, logits_dim=5, depth=1, num_latents=8, latent_dim=32, cross_heads=1,
                 latent_heads=2, cross_dim_head=16, latent_dim_head=16).eval()
outputs.append(io(torch.randn(2, 10, 16), queries=torch.randn(2, 6, 8)))
""",
    "rotary-embedding-torch": """
from rotary_embedding_torch import RotaryEmbedding
r = RotaryEmbedding(dim=16)
outputs.append(r.rotate_queries_or_keys(torch.randn(1, 2, 8, 32)))
""",
    "local-attention": """
hc = types.ModuleType("hyper_connections")
hc.get_init_and_expand_reduce_stream_functions = lambda *a, **k: (None, (lambda t: t), (lambda t: t))
sys.modules.setdefault("hyper_connections", hc)
from local_attention.local_attention import LocalAttention
for causal in (True, False):
    attn = LocalAttention(dim=16, window_size=4, causal=causal, look_backward=1, look_forward=0 if causal else 1,
                          autopad=True).eval()
    q, k, v = torch.randn(3, 2, 2, 16, 16)
    outputs.append(attn(q, k, v))
""",
    "x-transformers": """
from x_transformers import TransformerWrapper, Decoder, Encoder
for layers in (Decoder(dim=32, depth=1, heads=2), Encoder(dim=32, depth=1, heads=2)):
    m = TransformerWrapper(num_tokens=50, max_seq_len=16, attn_layers=layers).eval()
    outputs.append(m(torch.randint(0, 50, (2, 12))))
""",
}

RUNNER = """
import sys, types, torch
{stubs}
torch.manual_seed(0)
outputs = []
with torch.no_grad():
{probe}
torch.save([o.detach().float() for o in outputs], sys.argv[1])
"""


def _run(root: Path, probe: str, out: Path) -> str | None:
    """Run the probe against the package copy in ``root``; None if it ran, else the error's last line."""
    script = RUNNER.format(stubs=STUBS, probe="\n".join("    " + line for line in probe.strip().splitlines()))
    completed = subprocess.run(
        [sys.executable, "-c", script, str(out)], cwd=root, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    if completed.returncode != 0:
        lines = completed.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit {completed.returncode}"
    return None


def check(mutants: list[dict], sample: int, seed: int) -> list[tuple[dict, str, str]]:
    import torch

    import mutation

    verdicts = []
    by_corpus: dict[str, list[dict]] = {}
    for m in mutants:
        if m["spec"]["corpus"] in PROBES:
            by_corpus.setdefault(m["spec"]["corpus"], []).append(m)
    for name, group in sorted(by_corpus.items()):
        group = random.Random(f"{seed}:{name}").sample(group, min(sample, len(group)))
        package = corpora.package_root(corpora.CORPORA[name])
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp) / "original"
            shutil.copytree(package, base / package.name)
            error = _run(base, PROBES[name], Path(tmp) / "original.pt")
            if error is not None:
                print(f"{name}: the probe fails on the original ({error}); skipped", file=sys.stderr)
                continue
            reference = torch.load(Path(tmp) / "original.pt")
            for i, m in enumerate(group):
                spec = mutation.MutantSpec(**m["spec"])
                root = Path(tmp) / f"mutant{i}"
                shutil.copytree(package, root / package.name)
                (root / package.name / Path(spec.path).relative_to(package)).write_text(mutation.mutant_source(spec))
                error = _run(root, PROBES[name], root / "out.pt")
                if error is not None:
                    verdicts.append((m, "crashes", error))
                else:
                    got = torch.load(root / "out.pt")
                    same = len(got) == len(reference) and all(
                        a.shape == b.shape and torch.allclose(a, b, atol=1e-5) for a, b in zip(got, reference)
                    )
                    verdicts.append((m, "same" if same else "differs", ""))
                shutil.rmtree(root)
                print(f"  {verdicts[-1][1]:<8} {spec.code} {spec.display}:{spec.line}", file=sys.stderr, flush=True)
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a sample of mutants of standalone corpora with torch and "
                                     "compare their output with the original's.")
    parser.add_argument("json", type=Path, help="the --json output of mutation.py")
    parser.add_argument("--sample", type=int, default=10, help="mutants per corpus (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    corpora.use_repo_checkout()
    mutants = json.loads(args.json.read_text())["mutants"]
    verdicts = check(mutants, args.sample, args.seed)
    counts = Counter(verdict for _, verdict, _ in verdicts)
    for m, verdict, detail in verdicts:
        spec = m["spec"]
        print(f"{verdict:<8} {spec['code']} {spec['display']}:{spec['line']} {spec['description']} {detail[:100]}")
    print(f"{len(verdicts)} mutants run: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
