"""How much real code SC404, SC501-SC504 and SC507 actually examine: the sites where the engine had
every fact the rule needs (full shapes, the provenance it asks for), correct or not.

A rule with no finding on a corpus is only informative if it saw something there. This prints, per
corpus, the number of such sites per rule (the precision report lists the findings themselves):

    python benchmarks/layout_sites.py                      # transformers, x-transformers, timm
    python benchmarks/layout_sites.py --dir examples/clean # any folder
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402  (benchmarks/corpus.py, next to this file)

corpora.use_repo_checkout()

import libcst as cst  # noqa: E402

from shapecheck.engine import analyze  # noqa: E402
from shapecheck.engine.domain.tags import Permuted, Reordered  # noqa: E402
from shapecheck.engine.domain.values import ProjectionTag  # noqa: E402
from shapecheck.engine.facts.layouts import fixed_dims, is_attention_data  # noqa: E402
from shapecheck.engine.facts.norms import layer_norm_sites  # noqa: E402
from shapecheck.engine.facts.records import FileFacts  # noqa: E402
from shapecheck.engine.facts.sequence_layers import batch_first, layer_calls  # noqa: E402

SITES = {
    "SC404": "layer norms with a known input shape and normalized shape",
    "SC501": "views of a transposed / permuted tensor, full shapes",
    "SC502": "4-D -> 3-D reshapes of attention data, full shapes",
    "SC503": "3-D -> 4-D reshapes of attention data, full shapes",
    "SC504": "products of a projected query with a reordered rank >= 3 operand",
    "SC507": "seq-first nn.MultiheadAttention / nn.Transformer* calls on a known 3-D input",
}


def sites(facts: FileFacts) -> Counter:
    """Distinct nodes per rule (a node analysed in several contexts counts once)."""
    found: dict[str, set] = {code: set() for code in SITES}
    for event in facts.events_of("view"):
        if event.tensor(0).has(Permuted) and fixed_dims(event.tensor(0).shape) and fixed_dims(event.result_tensor.shape):
            found["SC501"].add(event.node)
    for event in facts.events_of("view", "reshape"):
        source, result = event.tensor(0), event.result_tensor
        if is_attention_data(source):
            if fixed_dims(source.shape, 4) and fixed_dims(result.shape, 3):
                found["SC502"].add(event.node)
            if fixed_dims(source.shape, 3) and fixed_dims(result.shape, 4):
                found["SC503"].add(event.node)
    for event in facts.events_of("matmul", "bmm"):
        key = event.tensor(1)
        layout = key.tag(Reordered)
        if layout is not None and layout.rank >= 3 and event.tensor(0).has(ProjectionTag) and fixed_dims(key.shape):
            found["SC504"].add(event.node)
    for site in layer_norm_sites(facts):
        if site.input.shape is not None and site.normalized is not None:
            found["SC404"].add(site.node)
    for call in layer_calls(facts):
        if batch_first(call.module) is False and fixed_dims(call.input.shape, 3):
            found["SC507"].add(call.event.node)
    return Counter({code: len(nodes) for code, nodes in found.items()})


def count(files: list[Path]) -> tuple[Counter, int, float]:
    total: Counter = Counter()
    errors = 0
    started = time.perf_counter()
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
            total += sites(analyze(cst.parse_module(source), source, str(path)))
        except Exception:  # noqa: BLE001 - a probe: a file the engine cannot read counts as an error
            errors += 1
    return total, errors, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", choices=sorted(corpora.CORPORA), help="default: all")
    parser.add_argument("--dir", action="append", type=Path, default=[], help="a folder of .py files instead")
    args = parser.parse_args(argv)
    targets: list[tuple[str, list[Path]]] = [(str(folder), sorted(folder.rglob("*.py"))) for folder in args.dir]
    if not targets:
        for name in args.corpus or sorted(corpora.CORPORA):
            corpus = corpora.CORPORA[name]
            corpora.ensure(corpus)
            targets.append((f"{name} {corpus.version}", corpora.corpus_files(corpus)))
    print("| corpus | files | " + " | ".join(SITES) + " | errors | s |")
    print("|---|---:|" + "---:|" * (len(SITES) + 2))
    for label, files in targets:
        total, errors, seconds = count(files)
        cells = " | ".join(str(total[code]) for code in SITES)
        print(f"| {label} | {len(files)} | {cells} | {errors} | {seconds:.0f} |", flush=True)
    print()
    for code, what in SITES.items():
        print(f"- {code}: {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
