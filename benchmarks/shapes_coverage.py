"""How many tensor values does the shape engine know the shape of, on real model code?

For every file: parse once, ``shapecheck.engine.analyze``, then count each value record of each
analysed function as

- **full**: a shape with every dim known (an int, a symbol such as ``n_heads`` or an expression
  such as ``d_model//n_heads`` all count as known);
- **partial**: a shape with at least one unknown dim, or an unknown rank part;
- **unknown**: no shape at all (``shape is None``).

Only tensors bound by an assignment are counted (what ``shapecheck shapes`` prints), in the
standalone analysis of each function; ``--include-inlined`` also counts the re-analyses of a
function inlined at its call sites.

An extra figure, **at some run** (the columns "rank known at some run %" and "full at some run %"),
counts the same standalone values (same denominator) but takes for each the best shape that the
same assignment (statement and name) got in the standalone run or in any inlined run of its
function. It is the value as the rules see it: a helper such as Hugging Face's
``eager_attention_forward(module, query, key, value, ...)`` has inputs of unknown rank standalone,
yet it is checked with known shapes at each call site. It never replaces the standalone figure.

It reads the engine's facts as ``facts.runs`` (each with ``.inlined`` and ``.assignments``, each
assignment's ``.value`` a ``TensorValue`` whose ``.shape`` is a ``Shape`` or None). A shape is
partial when it is variadic (``*batch``) or holds an anonymous dim; a ``fully_known`` attribute on
the value or the shape, when the engine adds one, decides instead. Failing ``facts.runs`` it tries
``facts.functions[*].values[*].shape / .fully_known``. When the engine exposes neither, it says
what is missing and exits 0.

    python benchmarks/shapes_coverage.py
    python benchmarks/shapes_coverage.py --corpus x-transformers --files 15
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402  (benchmarks/corpus.py, next to this file)


class NotExposed(Exception):
    """The engine does not expose something this script reads yet."""


@dataclass
class Counts:
    files: int = 0
    lines: int = 0
    functions: int = 0
    full: int = 0
    partial: int = 0
    unknown: int = 0
    rank_known: int = 0
    #: the same standalone values, each at the best shape its assignment got in any run
    site_full: int = 0
    site_rank_known: int = 0
    crashes: int = 0
    seconds: float = 0.0

    #: the standalone values (the denominator of the "at some run" figure)
    standalone: int = 0

    @property
    def values(self) -> int:
        return self.full + self.partial + self.unknown

    def add(self, other: Counts) -> None:
        for key in vars(self):
            setattr(self, key, getattr(self, key) + getattr(other, key))


def _items(container, what: str) -> Iterable:
    if container is None:
        return ()
    if isinstance(container, Mapping):
        return container.values()
    try:
        return iter(container)
    except TypeError:
        raise NotExposed(f"{what} as a list or a mapping (it is a {type(container).__name__})") from None


def _explicit_known(*objects) -> bool | None:
    for obj in objects:
        value = getattr(obj, "fully_known", None)
        if value is not None:
            return bool(value() if callable(value) else value)
    return None


def _anonymous(dim) -> bool:
    try:
        from shapecheck.engine.symbolic.shapes import is_anonymous
    except ImportError:
        name = getattr(dim, "name", None)
        return isinstance(name, str) and name.startswith("_@")
    return is_anonymous(dim)


def status(record, shape) -> int:
    """0 unknown or a *batch prefix, 1 rank known with an unnamed dim, 2 every dim known."""
    here = Counts()
    classify(record, shape, here)
    return 2 if here.full else 1 if here.rank_known else 0


def classify(record, shape, counts: Counts) -> None:
    if shape is None:
        counts.unknown += 1
        return
    known = _explicit_known(record, shape)
    if known is None:
        if not hasattr(shape, "dims"):
            raise NotExposed(f"{type(shape).__name__}.dims or a fully_known attribute (on shapes)")
        known = not getattr(shape, "variadic", False) and not any(_anonymous(d) for d in shape.dims)
    if known:
        counts.full += 1
    else:
        counts.partial += 1
    if not getattr(shape, "variadic", False):
        counts.rank_known += 1


def count_file(facts, counts: Counts, include_inlined: bool = False, attention_only: bool = False) -> None:
    if hasattr(facts, "runs"):
        _count_runs(facts, counts, include_inlined, _attention_functions(facts) if attention_only else None)
        return
    if not hasattr(facts, "functions"):
        raise NotExposed(f"{type(facts).__name__}.runs or {type(facts).__name__}.functions")
    for function in _items(facts.functions, "FileFacts.functions"):
        if not hasattr(function, "values"):
            raise NotExposed(f"{type(function).__name__}.values (on the function records)")
        counts.functions += 1
        values = function.values
        if callable(values):
            values = values()
        for record in _items(values, "function.values"):
            if not hasattr(record, "shape"):
                raise NotExposed(f"{type(record).__name__}.shape (on the value records)")
            if record.shape is not None and _explicit_known(record) is None:
                raise NotExposed(f"{type(record).__name__}.fully_known (on the value records)")
            classify(record, record.shape, counts)


def _attention_functions(facts) -> set:
    """The function nodes that compute attention in some context: a softmax over attention scores,
    ``scaled_dot_product_attention`` or an ``nn.MultiheadAttention`` call."""
    from shapecheck.engine.facts.queries import attention_softmaxes

    events = attention_softmaxes(facts) + facts.events_of("scaled_dot_product_attention") + facts.events_of(
        "module.MultiheadAttention"
    )
    return {id(event.run.node) for event in events if event.run is not None and event.run.node is not None}


def _count_runs(facts, counts: Counts, include_inlined: bool, only: set | None = None) -> None:
    try:
        from shapecheck.engine.domain.values import TensorValue
    except ImportError as error:
        raise NotExposed(f"shapecheck.engine.values.TensorValue ({error})") from None
    best: dict[tuple[int, str], int] = {}  # (statement, name) -> best status over every run
    standalone: list[tuple[int, str]] = []
    for run in _items(facts.runs, "FileFacts.runs"):
        if only is not None and id(getattr(run, "node", None)) not in only:
            continue
        if not hasattr(run, "assignments"):
            raise NotExposed(f"{type(run).__name__}.assignments (on the function runs)")
        inlined = getattr(run, "inlined", False)
        if not inlined or include_inlined:
            counts.functions += 1
        for assignment in run.assignments:
            value = getattr(assignment, "value", None)
            if not isinstance(value, TensorValue):
                continue
            key = (id(getattr(assignment, "node", None)), getattr(assignment, "name", ""))
            best[key] = max(best.get(key, 0), status(value, value.shape))
            if not inlined:
                standalone.append(key)
                counts.standalone += 1
            if not inlined or include_inlined:
                classify(value, value.shape, counts)
    for key in standalone:
        counts.site_rank_known += best[key] >= 1
        counts.site_full += best[key] == 2


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def main(argv: Sequence[str] | None = None) -> int:
    default = list(corpora.CORPORA)
    parser = argparse.ArgumentParser(
        description="Count the tensor values whose shape the engine knows fully, partly or not at all, "
        "per corpus (exits 0 with a message while the engine does not expose its facts yet).",
    )
    corpora.add_corpus_arguments(parser, default=default)
    parser.add_argument(
        "--include-inlined",
        action="store_true",
        help="also count the analyses of functions inlined at their call sites",
    )
    parser.add_argument(
        "--scope",
        choices=("attention", "all"),
        default="attention",
        help="count the functions that compute attention (default: the figure Engine II is measured by), or all",
    )
    parser.add_argument(
        "--files",
        type=int,
        default=0,
        metavar="K",
        help="also list the K files with the most values of unknown or partial shape",
    )
    args = parser.parse_args(argv)

    corpora.use_repo_checkout()
    import libcst as cst

    try:
        from shapecheck.engine import analyze
    except ImportError as error:
        print(f"cannot import shapecheck.engine.analyze ({error}); nothing measured")
        return 0
    try:
        loaded = corpora.load_corpora(args.corpus or default, args.dir, args.limit)
    except corpora.CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    print(f"machine: {corpora.describe_machine()}")
    per_corpus: dict[str, Counts] = {}
    per_file: list[tuple[int, int, str]] = []
    crashes: list[str] = []
    for name, files in loaded.items():
        counts = per_corpus.setdefault(name, Counts())
        for file in files:
            counts.files += 1
            counts.lines += file.lines
            try:
                module = cst.parse_module(file.source)
            except Exception:
                continue  # not Python that libcst reads: nothing for the engine either
            started = time.process_time()
            here = Counts()
            try:
                facts = analyze(module, file.source, file.display)
                count_file(facts, here, args.include_inlined, attention_only=args.scope == "attention")
            except NotExposed as missing:
                print(f"engine does not expose {missing} yet; nothing measured")
                return 0
            except Exception as error:
                counts.crashes += 1
                frame = traceback.extract_tb(error.__traceback__)[-1]
                crashes.append(
                    f"{file.display}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''} "
                    f"at {Path(frame.filename).name}:{frame.lineno}"
                )
                continue
            finally:
                counts.seconds += time.process_time() - started
            counts.add(here)
            per_file.append((here.unknown + here.partial, here.values, file.display))

    print()
    print(f"scope: {'functions that compute attention' if args.scope == 'attention' else 'all functions'}")
    print("| corpus | files | lines | functions | tensor values | full | partial | unknown | rank known % | full % "
          "| rank known at some run % | full at some run % | crashes | engine CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    total = Counts()
    for name, counts in per_corpus.items():
        total.add(counts)
        print(_row(name, counts))
    if len(per_corpus) > 1:
        print(_row("**total**", total))
    print()
    print(
        "tensor values: tensors bound by assignments in the standalone analysis of each function"
        + (" and its inlined analyses" if args.include_inlined else "")
    )
    print("full = every dim known (int, symbol or expression); partial = an unnamed dim or a *batch prefix; "
          "unknown = no shape")
    print("at some run: the standalone values again, each at the best shape its assignment (statement and "
          "name) got in the standalone run or any inlined run of the function (what the rules see)")
    if crashes:
        print()
        print(f"engine crashes ({len(crashes)}):")
        for line in crashes:
            print(f"  {line}")
    if args.files and per_file:
        print()
        print(f"files with the most values of unknown or partial shape (top {args.files}):")
        for not_full, values, display in sorted(per_file, reverse=True)[: args.files]:
            print(f"  {not_full:>6} of {values:>6}  {display}")
    return 0


def _row(name: str, c: Counts) -> str:
    return (
        f"| {name} | {c.files:,} | {c.lines:,} | {c.functions:,} | {c.values:,} | {c.full:,} | {c.partial:,} "
        f"| {c.unknown:,} | {pct(c.rank_known, c.values)} | {pct(c.full, c.values)} "
        f"| {pct(c.site_rank_known, c.standalone)} | {pct(c.site_full, c.standalone)} | {c.crashes} | {c.seconds:.1f} |"
    )


if __name__ == "__main__":
    raise SystemExit(main())
