"""Mutation testing of the rules and of the engine's op rules and shape algebra, with mutmut.

Each module is mutated on its own, in a scratch copy of this checkout (never in the checkout
itself), and only the tests that target it run against each mutant: a rule's own examples and
decision tests, the engine tests for an engine module. Prints one line per module (mutants,
killed, survived, timeouts, score) and writes the surviving mutants' names to
``<work dir>/<module>/survivors.txt`` (``mutmut show NAME`` there prints one's diff) and mutmut's
own output to ``<work dir>/<module>/mutmut.log`` (which phase a time box was spent in).

    python benchmarks/mutation_testing.py                       # every module below (long)
    python benchmarks/mutation_testing.py sc101 shapes          # modules whose path contains a word
    python benchmarks/mutation_testing.py --time-box 300 --list

Why mutmut (3.x): it mutates in a copy and switches mutants on with a trampoline inside one forked
pytest process, so a mutant costs a fork, not an interpreter start and a re-import (cosmic-ray
runs a new pytest session per mutant: about 3 s here, against 0.3 s). It needs mutmut (the ``dev``
extra). Runs are ``nice``d and single-process: the machine is shared. The score is killed /
(killed + survived + timeouts); mutants no test reaches ("no tests") count as survivors.

mutmut does not mutate decorated functions: the ``ops/`` rules are therefore plain functions
registered by a ``register(rule, "name", ...)`` call after their definitions (no ``@op`` decorator),
so their bodies are mutated too.

A rule module's mutants share the unmutated engine: its scratch copy keeps each snippet's parse and
analysis (``RULE_ONLY_CACHE``), so a mutant costs only the rules. Engine modules run without it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: The engine's tests for each engine package: the shape and dim algebra have their unit tests, the
#: op rules the engine's op, idiom, layout and training tests (a mutant runs only the tests that
#: execute the mutated function). Test files that do not exist are left out.
ENGINE_TESTS = {
    "symbolic/shapes": ["tests/test_engine_shapes.py", "tests/test_mutation_kills_shapes.py"],
    "symbolic/dims": ["tests/test_engine_dims.py", "tests/test_engine_rc403.py", "tests/test_mutation_kills_ops_mut27.py"],
    "symbolic/annotations": ["tests/test_engine_annotations.py"],
    "ops": [
        "tests/test_engine_ops.py", "tests/test_engine_idioms.py", "tests/test_engine_layouts.py",
        "tests/test_engine_training.py", "tests/test_mutation_kills_ops.py",
    ],
}

#: A rule's tests: its examples (alone and with all rules on), its decision tests, the shipped examples and
#: the reviewed snapshot of what it says on each INVALID example.
RULE_TESTS = [
    "tests/test_rule_examples.py", "tests/test_rule_decisions.py", "tests/test_examples_cross_rule.py",
    "tests/test_examples_promises.py", "tests/test_mutation_kills_rules.py", "tests/test_rule_message_snapshots.py",
]


def _rule_tests(code: str, everything: bool = False) -> list[str]:
    """The rule's own examples (alone and with all rules on), decisions and shipped bug example, and the
    kill tests (``tests/test_mutation_kills_rules*.py``, selected by the code in their names); with
    ``everything``, every rule's examples and every shipped file linted with all rules on as well
    (stricter, several times slower: --all-examples)."""
    selection = f"{code} or cross_rule or promises" if everything else code
    extra = sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").glob("test_mutation_kills_rules_*.py"))
    return [*(name for name in RULE_TESTS if (REPO / name).is_file()), *extra, "-k", selection]


def targets(all_examples: bool = False) -> dict[str, list[str]]:
    """Module path -> the pytest arguments that select its tests."""
    selected: dict[str, list[str]] = {}
    for path in sorted((REPO / "shapecheck" / "rules").glob("sc[0-9]*.py")):
        code = path.name[:5].upper()
        selected[f"shapecheck/rules/{path.name}"] = _rule_tests(code, all_examples)
    engine = REPO / "shapecheck" / "engine"
    for package in ("symbolic", "ops"):
        for path in sorted((engine / package).glob("[a-z]*.py")):
            tests = ENGINE_TESTS.get(f"{package}/{path.stem}", ENGINE_TESTS.get(package, []))
            if package == "ops":
                # Every engine test file (the idioms of real code each session adds have their own:
                # test_engine_unknown_rank.py, test_engine_hf_models.py, ...) and the kill tests kept
                # in a file per helper session (tests/test_mutation_kills_ops_<topic>.py).
                extra = [*(REPO / "tests").glob("test_engine_*.py"), *(REPO / "tests").glob("test_mutation_kills_ops_*.py")]
                tests = tests + sorted(str(p.relative_to(REPO)) for p in extra if str(p.relative_to(REPO)) not in tests)
            selected[f"shapecheck/engine/{package}/{path.name}"] = [t for t in tests if (REPO / t).is_file()]
    return selected


def _copy_checkout(destination: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout.split()
    for name in files:
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


#: Appended to the scratch copy's tests/conftest.py when a rule module is mutated: the engine is not
#: mutated then, so each snippet's parse and analysis are kept (mutmut forks every mutant from the
#: process that ran the tests once) and a mutant costs only the rules. Never in the checkout.
RULE_ONLY_CACHE = """

# --- benchmarks/mutation_testing.py: a rule is mutated, the engine is not: keep parses and analyses
import shapecheck.linter as _mutation_linter

_mutation_parse, _mutation_analyze = _mutation_linter.parse_module, _mutation_linter.analyze
_mutation_parsed: dict = {}
_mutation_analyzed: dict = {}


def _mutation_cached_parse(source, *args, **kwargs):
    if args or kwargs:
        return _mutation_parse(source, *args, **kwargs)
    if source not in _mutation_parsed:
        _mutation_parsed[source] = _mutation_parse(source)
    return _mutation_parsed[source]


def _mutation_cached_analyze(module, source, path, *args, **kwargs):
    if args or kwargs or _mutation_parsed.get(source) is not module:
        return _mutation_analyze(module, source, path, *args, **kwargs)
    if (source, path) not in _mutation_analyzed:
        _mutation_analyzed[source, path] = _mutation_analyze(module, source, path)
    return _mutation_analyzed[source, path]


_mutation_linter.parse_module = _mutation_cached_parse
_mutation_linter.analyze = _mutation_cached_analyze
"""


#: Appended to the scratch copy's tests/conftest.py when the shape algebra (``engine/symbolic/``) is
#: mutated. mutmut forks each mutant's test process from the one that ran the tests unmutated, so
#: the child inherits what the unmutated code memoised: the Dim arithmetic table (``dims._memo``),
#: the ``lru_cache`` tables of interned constants, symbols and monomials, and each Dim's cached
#: text, symbols and sort key. A mutant of ``_add_raw``, ``_check_name`` or ``_fmt`` then never runs
#: on any input the clean run already saw, and survives for that reason alone. Each mutant's
#: session therefore starts with all of them emptied (after ``gc.unfreeze()``: mutmut freezes the
#: parent's heap before forking, and ``gc.get_objects()`` does not list frozen objects). Never in the
#: checkout.
FRESH_ALGEBRA = """

# --- benchmarks/mutation_testing.py: the shape algebra is mutated: forget what the clean run memoised
def pytest_sessionstart(session):
    import gc
    import os

    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        return
    from shapecheck.engine.symbolic import dims as _mutation_dims

    _mutation_dims._memo.clear()
    for value in vars(_mutation_dims).values():
        if hasattr(value, "cache_clear"):
            value.cache_clear()
    gc.unfreeze()
    for value in gc.get_objects():
        if type(value) is _mutation_dims.Dim:
            value._str = value._syms = value._ck = None
"""


def _configure(project: Path, modules: list[str], test_args: list[str]) -> None:
    if any(module.startswith("shapecheck/rules/") for module in modules):
        with (project / "tests" / "conftest.py").open("a") as conftest:
            conftest.write(RULE_ONLY_CACHE)
    if any(module.startswith("shapecheck/engine/symbolic/") for module in modules):
        with (project / "tests" / "conftest.py").open("a") as conftest:
            conftest.write(FRESH_ALGEBRA)
    quoted = ", ".join(f'"{arg}"' for arg in [*test_args, "-p", "no:cacheprovider"])
    paths = ", ".join(f'"{module}"' for module in modules)
    with (project / "pyproject.toml").open("a") as config:
        config.write(
            "\n[tool.mutmut]\n"
            f"source_paths = [{paths}]\n"
            f"pytest_add_cli_args_test_selection = [{quoted}]\n"
            'also_copy = ["shapecheck", "tests", "examples", "reference_model", "README.md"]\n'
        )


def _statuses(project: Path) -> dict[str, dict[str, int]]:
    """Dotted module -> status -> how many of its mutants have it."""
    listing = subprocess.run(
        ["mutmut", "results", "--all", "true"], cwd=project, capture_output=True, text=True
    ).stdout
    counts: dict[str, dict[str, int]] = {}
    for line in listing.splitlines():
        if ":" in line:
            name, status = (part.strip() for part in line.rsplit(":", 1))
            module = _dotted_module(name)
            counts.setdefault(module, {})
            counts[module][status] = counts[module].get(status, 0) + 1
    return counts


def _dotted_module(mutant: str) -> str:
    """``shapecheck.engine.ops.shapes.x__view__mutmut_3`` -> ``shapecheck.engine.ops.shapes``."""
    return mutant.split(".x_", 1)[0].split(".xǁ", 1)[0]


def _survivors(project: Path) -> str:
    """The names of the surviving mutants (``mutmut show NAME`` in the work folder prints a diff)."""
    listing = subprocess.run(["mutmut", "results"], cwd=project, capture_output=True, text=True).stdout
    return "\n".join(
        line.strip().rsplit(":", 1)[0] for line in listing.splitlines() if line.strip().endswith(("survived", "no tests"))
    )


def run_modules(modules: list[str], test_args: list[str], work: Path, time_box: int, only: list[str] | None = None) -> list[str]:
    """Mutate ``modules`` in one mutmut session (one copy, one run of the tests' statistics), run
    their tests against each mutant (or only those whose names match a glob of ``only``), and
    return one line of figures per module."""
    first = modules[0].removesuffix(".py")
    name = first if len(modules) == 1 else f"{first}+{len(modules) - 1}"
    project = work / name.replace("/", "_")
    if project.exists():
        shutil.rmtree(project)
    project.mkdir(parents=True)
    _copy_checkout(project)
    _configure(project, modules, test_args)
    started = time.monotonic()
    # mutmut's own output (its phases: mutant generation, test statistics, clean run, forced fail,
    # then the mutants) goes to mutmut.log in the work folder, to see where a time box went.
    with (project / "mutmut.log").open("w") as log:
        try:
            subprocess.run(
                ["nice", "-n", "10", "mutmut", "run", "--max-children", "1", *(only or [])],
                cwd=project, stdout=log, stderr=subprocess.STDOUT, timeout=time_box,
            )
            finished = "complete"
        except subprocess.TimeoutExpired:
            finished = f"TIME-BOXED at {time_box} s (partial)"
    seconds = time.monotonic() - started
    statuses = _statuses(project)
    (project / "survivors.txt").write_text(_survivors(project))
    lines = []
    for module in modules:
        counts = statuses.get(module.removesuffix(".py").replace("/", "."), {})
        killed = counts.get("killed", 0)
        survived = counts.get("survived", 0) + counts.get("no tests", 0)
        timeouts = counts.get("timeout", 0)
        judged = killed + survived + timeouts
        score = f"{100 * killed / judged:.0f}%" if judged else "n/a"
        lines.append(
            f"| `{module}` | {sum(counts.values())} | {judged} | {killed} | {survived} | {timeouts} | {score} | "
            f"{seconds:.0f} s {finished}{' (together: ' + name + ')' if len(modules) > 1 else ''} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("words", nargs="*", help="only modules whose path contains one of these words")
    parser.add_argument("--time-box", type=int, default=900, help="seconds per module (default 900)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "shapecheck-mutation")
    parser.add_argument("--list", action="store_true", help="print the modules and their tests, run nothing")
    parser.add_argument("--all-examples", action="store_true", help="rules also face every example with all rules on")
    parser.add_argument(
        "--together", action="store_true",
        help="mutate the chosen modules that share their tests in one mutmut session: one start-up "
        "(copy, statistics and clean run of the tests) instead of one per module; the time box is the group's",
    )
    parser.add_argument(
        "--only", action="append", metavar="GLOB",
        help="run only the mutants whose names match this glob (repeatable), e.g. '*x__masked_fill__mutmut_*' "
        "for one function's, after it changed; the other mutants count as not judged",
    )
    args = parser.parse_args(argv)
    chosen = {m: t for m, t in targets(args.all_examples).items() if not args.words or any(w in m for w in args.words)}
    if args.list:
        for module, test_args in chosen.items():
            print(module, " ".join(test_args))
        return 0
    if shutil.which("mutmut") is None:
        print("mutmut is not installed: pip install -e '.[mutation]'", file=sys.stderr)
        return 2
    print("| module | mutants | judged | killed | survived | timeout | score | time |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    groups: dict[tuple[str, ...], list[str]] = {}
    for module, test_args in chosen.items():
        key = tuple(test_args) if args.together else (module, *test_args)
        groups.setdefault(key, []).append(module)
    for modules in groups.values():
        for line in run_modules(modules, chosen[modules[0]], args.work, args.time_box, args.only):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
