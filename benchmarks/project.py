"""What does following the project's imports cost? Whole-project lint against per-file lint.

Per file: ``linter.lint_source`` of each file alone (parse + analysis + rules, imports not
followed), summed. Whole project: ``linter.lint_path`` of the same files with one shared
``Workspace`` (what ``shapecheck lint DIR`` does): every file and every project module it imports
parsed once, each module's top level loaded once, imported classes and functions analysed with the
importer's arguments. The figure is the ratio whole / sum of per-file (target <= 1.5, issue 9).

Memory: ``--synthetic N`` writes an N-file project (a package whose modules import configs,
constants and layers of each other, with cycles) into a temporary folder and lints it whole in a
child process, printing its peak resident memory next to a per-file run of the same files.

    python benchmarks/project.py                         # transformers' models/ tree (modeling_*.py)
    python benchmarks/project.py --limit 100             # first 100 files, quick look
    python benchmarks/project.py --dir examples/projects # any folder
    python benchmarks/project.py --synthetic 500         # memory of a 500-file project
    python benchmarks/project.py --limit 60 --stages     # + where the extra time goes
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402  (benchmarks/corpus.py, next to this file)

TARGET_RATIO = 1.5
clock = time.process_time


class Stages:
    """CPU seconds of three stages of the whole-project lint: parsing files that are not among the
    linted ones, loading a module's top level, and analysing a call inlined into another module of
    the project. A stage is timed at its outermost call (not twice when it nests in itself); its
    seconds include the other stages it triggers (a scope load that parses an import)."""

    def __init__(self, targets: set[Path]) -> None:
        self.seconds = {"parse of imported files": 0.0, "module scopes loaded": 0.0, "calls into other modules": 0.0}
        self.calls = 0
        self.targets = targets
        self._open: set[str] = set()

    def timed(self, stage: str, function):
        def wrapper(*args, **kwargs):
            if stage in self._open:
                return function(*args, **kwargs)
            self._open.add(stage)
            started = clock()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[stage] += clock() - started
                self._open.discard(stage)

        return wrapper

    def install(self) -> "callable":
        """Wrap the three stages; returns a function that removes the wrappers."""
        from shapecheck.engine.interpreter.core import Interpreter
        from shapecheck.engine.interpreter.project import ModuleGraph
        from shapecheck.project import Workspace

        originals = (Workspace.file, ModuleGraph._load_scope, Interpreter.inline)
        parse, load, inline = (self.timed(stage, f) for stage, f in zip(self.seconds, originals))
        stages = self

        def file(workspace, path, *args, **kwargs):
            if path.resolve() in stages.targets or path.resolve() in workspace._files:
                return originals[0](workspace, path, *args, **kwargs)
            return parse(workspace, path, *args, **kwargs)

        def inline_call(interp, node, *args, **kwargs):
            scope = interp.graph.home.get(node) if interp.graph is not None else None
            if scope is None or scope.source.path == interp.own_path:
                return originals[2](interp, node, *args, **kwargs)
            stages.calls += "calls into other modules" not in stages._open
            return inline(interp, node, *args, **kwargs)

        Workspace.file, ModuleGraph._load_scope, Interpreter.inline = file, load, inline_call

        def remove() -> None:
            Workspace.file, ModuleGraph._load_scope, Interpreter.inline = originals

        return remove


def measure(paths: Sequence[Path], stages: bool = False) -> dict:
    """CPU seconds of per-file and whole-project lint over the same files, and what was loaded
    (with ``stages``, also the seconds of the stages of ``Stages``, which adds a little overhead)."""
    corpora.use_repo_checkout()
    from shapecheck import linter
    from shapecheck.project import Workspace

    from shapecheck.collector import lint_thresholds

    sources = [corpora.read_text(path) for path in paths]
    if paths:  # warm up (the rules' and engine's first imports) outside both timings
        linter.lint_source(sources[0], str(paths[0]))
    gc.collect()
    started = clock()
    alone_findings = 0
    with lint_thresholds():  # both modes with the collector settings of `shapecheck lint`
        for path, source in zip(paths, sources):
            alone_findings += len(linter.lint_source(source, str(path)).diagnostics)
    per_file = clock() - started

    gc.collect()
    timer = Stages({path.resolve() for path in paths}) if stages else None
    remove = timer.install() if timer is not None else None
    started = clock()
    workspace = Workspace()
    project_findings = 0
    try:
        with lint_thresholds():
            for path in paths:
                result = linter.lint_path(path, str(path), None, workspace)
                project_findings += len(result.diagnostics) + len(result.foreign)
    finally:
        if remove is not None:
            remove()
    whole = clock() - started
    parsed = [module for module in workspace._files.values() if module is not None]
    targets = {str(path.resolve()) for path in paths}
    outside = [module for module in parsed if module.path not in targets]
    loaded = sum(len(graph.loaded_paths()) for graph in workspace._graphs.values())
    return {
        "files": len(paths),
        "lines": sum(source.count("\n") for source in sources),
        "per_file_s": per_file,
        "whole_s": whole,
        "ratio": whole / per_file if per_file else float("nan"),
        "parsed": len(parsed),
        "parsed_outside": len(outside),
        "outside_lines": sum(module.source.count("\n") for module in outside),
        "scopes_loaded": loaded,
        "findings_alone": alone_findings,
        "findings_project": project_findings,
        "stages": dict(timer.seconds, calls_into_other_modules=timer.calls) if timer is not None else None,
    }


def report(name: str, figures: dict) -> None:
    print(f"{name}: {figures['files']} files, {figures['lines']:,} lines")
    print(f"  per-file lint (imports not followed), summed: {figures['per_file_s']:8.2f} s CPU")
    print(f"  whole-project lint (imports followed):         {figures['whole_s']:8.2f} s CPU")
    verdict = "within" if figures["ratio"] <= TARGET_RATIO else "OVER"
    print(f"  whole / per-file: {figures['ratio']:.2f} ({verdict} the {TARGET_RATIO} target)")
    print(
        f"  files parsed: {figures['parsed']} (each once), of which {figures['parsed_outside']} imported from "
        f"outside the checked files ({figures['outside_lines']:,} lines); module scopes loaded: "
        f"{figures['scopes_loaded']}"
    )
    print(f"  findings: {figures['findings_alone']} per file, {figures['findings_project']} whole project")
    if figures.get("stages"):
        stages = dict(figures["stages"])
        calls = stages.pop("calls_into_other_modules")
        print("  stages of the whole-project lint (outermost calls; a stage includes the others it triggers):")
        for stage, seconds in stages.items():
            extra = f" ({calls} outermost calls)" if stage == "calls into other modules" else ""
            print(f"    {stage:26} {seconds:8.2f} s CPU{extra}")


# ---------------------------------------------------------------------- synthetic project

MODULE = '''
"""Generated module {i} of a synthetic project."""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn

from synth.constants import WIDTH, HEADS
{imports}


@dataclass
class Config{i}:
    width: int = WIDTH
    heads: int = HEADS
    hidden: int = 4 * WIDTH


class Attention{i}(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.heads = config.heads
        self.head_dim = config.width // config.heads
        self.qkv = nn.Linear(config.width, 3 * config.width)
        self.out = nn.Linear(config.width, config.width)

    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        y = scores.softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class Block{i}(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = Attention{i}(config)
        self.inner = {inner}
        self.ln = nn.LayerNorm(config.width)
        self.ff = nn.Sequential(nn.Linear(config.width, config.hidden), nn.GELU(), nn.Linear(config.hidden, config.width))

    def forward(self, x):
        x = x + self.attn(self.ln(x))
        x = self.inner(x)
        return x + self.ff(x)


def build{i}():
    return Block{i}(Config{i}())
'''


def write_synthetic(root: Path, count: int) -> list[Path]:
    package = root / "synth"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "constants.py").write_text("WIDTH = 64\nHEADS = 4\n")
    paths = [package / "constants.py"]
    for i in range(count - 2):
        imports, inner = [], "nn.Identity()"
        if i > 0:
            imports.append(f"from synth.mod{i - 1} import Block{i - 1}, Config{i - 1}")
            inner = f"Block{i - 1}(Config{i - 1}())"
        if i > 2:
            imports.append(f"from synth import mod{i // 2} as half")
        if i < count - 3 and i % 10 == 5:
            imports.append(f"import synth.mod{i + 1}")  # a cycle: mod{i+1} imports mod{i}
        path = package / f"mod{i}.py"
        path.write_text(MODULE.format(i=i, imports="\n".join(imports), inner=inner))
        paths.append(path)
    paths.append(package / "__init__.py")
    return paths


CHILD = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from shapecheck import linter
from shapecheck.collector import lint_thresholds
from shapecheck.project import Workspace
paths = [Path(p) for p in json.loads(sys.argv[2])]
mode = sys.argv[3]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
workspace = Workspace()
with lint_thresholds():
    for path in paths:
        if mode == "project":
            linter.lint_path(path, str(path), None, workspace)
        else:
            linter.lint_source(path.read_text(), str(path))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before_mb": before / 1024, "peak_mb": after / 1024}))
"""


def synthetic(count: int, stages: bool = False) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = write_synthetic(Path(folder), count)
        lines = sum(path.read_text().count("\n") for path in paths)
        print(f"synthetic project: {len(paths)} files, {lines:,} lines (each module imports the previous one's")
        print("  block and config, another module as an alias, and every tenth an import cycle)")
        figures = {}
        for mode in ("per-file", "project"):
            done = subprocess.run(
                [sys.executable, "-c", CHILD, str(corpora.REPO_ROOT), json.dumps([str(p) for p in paths]), mode],
                capture_output=True, text=True, check=True,
            )
            figures[mode] = json.loads(done.stdout)
            print(
                f"  {mode:9} peak RSS {figures[mode]['peak_mb']:7.1f} MB "
                f"(after imports {figures[mode]['before_mb']:.1f} MB)"
            )
        report("synthetic", measure(paths, stages))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpora.add_corpus_arguments(parser, ["transformers"])
    parser.add_argument("--synthetic", type=int, metavar="N", help="measure memory on a generated N-file project")
    parser.add_argument(
        "--stages", action="store_true",
        help="also time the parse of imported files, module scope loading and calls into other modules",
    )
    args = parser.parse_args(argv)
    print(corpora.describe_machine())
    if args.synthetic:
        synthetic(args.synthetic, args.stages)
        return 0
    if args.dir is not None:
        paths = sorted(path for path in args.dir.resolve().rglob("*.py") if path.is_file())[: args.limit]
        report(str(args.dir), measure(paths, args.stages))
        return 0
    for name in args.corpus or ["transformers"]:
        corpus = corpora.CORPORA[name]
        corpora.ensure(corpus, quiet=True)
        report(name, measure(corpora.corpus_files(corpus)[: args.limit], args.stages))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
