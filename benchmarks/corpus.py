"""Real model code to measure shapecheck on: installed once into a cache folder outside the repo.

Each corpus is one PyPI package, pinned, installed with ``pip install --no-deps --target`` into
``$SHAPECHECK_BENCH_DIR/<dist>-<version>/`` (default ``~/.cache/shapecheck-bench/``). Nothing is
imported from it and nothing of it is ever copied into this repository: the scripts only read the
files as text.

    python benchmarks/corpus.py              # install what is missing, print files and lines
    python benchmarks/corpus.py --list timm  # print the file list of one corpus

Other benchmark scripts use ``load_corpora`` / ``corpus_files``; ``--dir DIR`` in those scripts
replaces the real corpora with every ``*.py`` file under DIR (no network, used by the smoke test).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Environment variable that moves the cache folder.
CACHE_ENV = "SHAPECHECK_BENCH_DIR"
DEFAULT_CACHE = Path.home() / ".cache" / "shapecheck-bench"

REPO_ROOT = Path(__file__).resolve().parent.parent


def use_repo_checkout() -> None:
    """Make ``import shapecheck`` pick this checkout, whatever else is installed."""
    root = str(REPO_ROOT)
    if root not in sys.path:
        sys.path.insert(0, root)


@dataclass(frozen=True)
class Corpus:
    """One pinned package and the files of it that hold model code."""

    name: str  # short name used on the command line
    dist: str  # name on PyPI
    version: str  # pinned version
    package: str  # top-level import folder inside the target dir
    patterns: tuple[str, ...]  # globs relative to the package folder

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"


CORPORA: dict[str, Corpus] = {
    corpus.name: corpus
    for corpus in (
        Corpus("transformers", "transformers", "5.24.0", "transformers", ("models/*/modeling_*.py",)),
        Corpus("x-transformers", "x-transformers", "2.31.10", "x_transformers", ("*.py",)),
        Corpus("timm", "timm", "1.0.31", "timm", ("models/*.py",)),
        Corpus(
            "diffusers", "diffusers", "0.42.1", "diffusers",
            ("models/attention*.py", "models/embeddings.py", "models/transformers/*.py", "training_utils.py"),
        ),
        Corpus("openai-whisper", "openai-whisper", "20250625", "whisper", ("model.py", "decoding.py")),
        Corpus(
            "fair-esm", "fair-esm", "2.0.0", "esm",
            ("modules.py", "multihead_attention.py", "rotary_embedding.py", "axial_attention.py", "model/*.py"),
        ),
        Corpus(
            "audiocraft", "audiocraft", "1.3.0", "audiocraft",
            ("modules/transformer.py", "modules/rope.py", "modules/streaming.py", "modules/conditioners.py",
             "modules/codebooks_patterns.py", "models/lm.py", "solvers/*.py"),
        ),
        Corpus("perceiver-pytorch", "perceiver-pytorch", "0.11.0", "perceiver_pytorch", ("*.py",)),
        Corpus("local-attention", "local-attention", "1.11.2", "local_attention", ("*.py",)),
        Corpus("rotary-embedding-torch", "rotary-embedding-torch", "0.9.1", "rotary_embedding_torch", ("*.py",)),
        Corpus(
            "mmpretrain", "mmpretrain", "1.2.0", "mmpretrain",
            ("models/utils/attention.py", "models/utils/embed.py", "models/utils/position_encoding.py",
             "models/utils/layer_scale.py", "models/backbones/vision_transformer.py", "models/backbones/deit*.py",
             "models/backbones/swin_transformer*.py", "models/backbones/beit.py", "models/backbones/t2t_vit.py",
             "models/backbones/xcit.py", "models/backbones/levit.py", "models/backbones/mixmim.py",
             "models/backbones/vit_eva02.py", "models/backbones/vit_sam.py", "models/multimodal/*/*.py"),
        ),
    )
}


def cache_dir() -> Path:
    value = os.environ.get(CACHE_ENV)
    return Path(value).expanduser() if value else DEFAULT_CACHE


def target_dir(corpus: Corpus) -> Path:
    return cache_dir() / f"{corpus.dist}-{corpus.version}"


def package_root(corpus: Corpus) -> Path:
    """The folder paths are shown relative to (``transformers/``, ``x_transformers/``, ``timm/``)."""
    return target_dir(corpus) / corpus.package


def is_installed(corpus: Corpus) -> bool:
    # The marker is written only after pip succeeded, so a half-finished install never counts.
    return (target_dir(corpus) / ".complete").is_file() and package_root(corpus).is_dir()


class CorpusError(Exception):
    """A corpus is not installed and could not be installed."""


def ensure(corpus: Corpus, quiet: bool = False) -> Path:
    """Install ``corpus`` into the cache unless it is already there; return its package root."""
    if is_installed(corpus):
        return package_root(corpus)
    target = target_dir(corpus)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"installing {corpus.requirement} into {target} ...", file=sys.stderr, flush=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{corpus.dist}-", dir=target.parent))
    command = [
        sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--quiet",
        "--disable-pip-version-check", "--target", str(staging), corpus.requirement,
    ]  # fmt: skip
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        detail = (completed.stderr or completed.stdout).strip().splitlines()
        raise CorpusError(
            f"pip could not install {corpus.requirement} (exit {completed.returncode}): "
            + (detail[-1] if detail else "no output")
        )
    (staging / ".complete").write_text(f"{corpus.requirement}\n")
    if target.exists():  # a stale, incomplete install
        shutil.rmtree(target)
    staging.rename(target)
    if not quiet:
        print(f"  done in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    return package_root(corpus)


def corpus_files(corpus: Corpus) -> list[Path]:
    """The model files of an installed corpus, sorted by path."""
    root = package_root(corpus)
    found: set[Path] = set()
    for pattern in corpus.patterns:
        found.update(path for path in root.glob(pattern) if path.is_file())
    return sorted(found)


@dataclass
class SourceFile:
    """One file read into memory, with the path shown in reports."""

    corpus: str
    path: Path
    display: str  # relative to the package root's parent: "transformers/models/bert/modeling_bert.py"
    source: str

    @property
    def lines(self) -> int:
        return self.source.count("\n") + (0 if self.source.endswith("\n") or not self.source else 1)


def read_text(path: Path) -> str:
    """Read a file as UTF-8 (BOM dropped), the way ``shapecheck`` reads it."""
    return path.read_bytes().decode("utf-8", errors="replace").removeprefix("\ufeff")


def load_corpora(
    names: Sequence[str],
    directory: Path | None = None,
    limit: int | None = None,
    quiet: bool = False,
) -> dict[str, list[SourceFile]]:
    """Read the files of each named corpus (installing it if needed), or of ``directory`` instead.

    ``limit`` keeps the first N files of each corpus (in path order).
    """
    loaded: dict[str, list[SourceFile]] = {}
    if directory is not None:
        root = directory.resolve()
        paths = sorted(path for path in root.rglob("*.py") if path.is_file())
        loaded[root.name or str(root)] = _read(root.name, root.parent, paths[:limit])
        return loaded
    for name in names:
        corpus = CORPORA[name]
        root = ensure(corpus, quiet=quiet)
        loaded[name] = _read(name, root.parent, corpus_files(corpus)[:limit])
    return loaded


def _read(corpus: str, base: Path, paths: Iterable[Path]) -> list[SourceFile]:
    return [
        SourceFile(corpus, path, path.relative_to(base).as_posix(), read_text(path)) for path in paths
    ]


def add_corpus_arguments(parser: argparse.ArgumentParser, default: Sequence[str]) -> None:
    """The corpus-selection options every benchmark script shares."""
    parser.add_argument(
        "--corpus",
        action="append",
        choices=sorted(CORPORA),
        help=f"corpus to use, repeatable (default: {', '.join(default)})",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        help="use every *.py file under DIR instead of the installed corpora (no network)",
    )
    parser.add_argument("--limit", type=int, metavar="N", help="take only the first N files of each corpus")


def describe_machine() -> str:
    """One line: CPU model, cores, Python, libcst."""
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        from importlib.metadata import version

        libcst_version = version("libcst")
    except Exception:  # pragma: no cover - metadata missing
        libcst_version = "?"
    parser = os.environ.get("LIBCST_PARSER_TYPE", "native")
    return (
        f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}; "
        f"libcst {libcst_version} ({parser} parser)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Install the benchmark corpora (pinned, --no-deps, into a cache outside the repo) "
        f"and print their size. Cache: ${CACHE_ENV} or {DEFAULT_CACHE}.",
    )
    parser.add_argument(
        "corpus", nargs="*", help=f"corpora to install: {', '.join(CORPORA)} (default: all)"
    )
    parser.add_argument("--list", action="store_true", help="print every file path, one per line")
    args = parser.parse_args(argv)
    names = args.corpus or list(CORPORA)
    unknown = [name for name in names if name not in CORPORA]
    if unknown:
        parser.error(f"unknown corpus {', '.join(unknown)}; choose from {', '.join(CORPORA)}")
    try:
        loaded = load_corpora(names)
    except CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.list:
        for files in loaded.values():
            for file in files:
                print(file.path)
        return 0
    print(f"cache: {cache_dir()}")
    print(f"{'corpus':<16} {'version':<10} {'files':>6} {'lines':>9}  root")
    for name, files in loaded.items():
        corpus = CORPORA[name]
        lines = sum(file.lines for file in files)
        print(f"{name:<16} {corpus.version:<10} {len(files):>6} {lines:>9,}  {package_root(corpus)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
