"""How long does ``shapecheck`` take to start, and what does it import?

A pre-commit hook runs the linter on every commit, so its start-up time is a cost people feel. This
script runs, as subprocesses, ``shapecheck --version`` and ``shapecheck lint <empty file>`` (20 runs
each by default) next to two baselines (a bare interpreter, and ``import libcst``), then lists the
top-level packages that ``python -X importtime -m shapecheck lint <file>`` imports, and says whether
torch, jaxtyping or beartype were among them (``shapecheck lint`` must import none of them).

    python benchmarks/startup.py
    python benchmarks/startup.py --runs 50 --top 30
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402  (benchmarks/corpus.py, next to this file)

#: Packages ``shapecheck lint`` must never import (the runtime checker may).
FORBIDDEN = ("torch", "jaxtyping", "beartype", "numpy", "einops")
MUST_NOT = ("torch", "jaxtyping", "beartype")


def shapecheck_command() -> tuple[list[str], str]:
    """The installed console script next to this interpreter (not a pyenv shim, whose own start-up
    would be measured too), or ``python -m shapecheck``."""
    script = Path(sys.executable).parent / ("shapecheck.exe" if os.name == "nt" else "shapecheck")
    if script.is_file():
        return [str(script)], str(script)
    return [sys.executable, "-m", "shapecheck"], "python -m shapecheck"


def environment() -> dict[str, str]:
    env = dict(os.environ)
    # Measure this checkout, whatever else is installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(corpora.REPO_ROOT), env.get("PYTHONPATH", "")]))
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_command(command: list[str], runs: int, env: dict[str, str]) -> tuple[list[float], list[float], int, str]:
    """Wall seconds and CPU seconds (user + system of the child) of each run; the exit code and last
    stderr line of the last run."""
    times = []
    cpu = []
    completed = None
    for _ in range(runs):
        cpu_before = _children_cpu()
        started = time.perf_counter()
        completed = subprocess.run(command, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
        cpu.append(_children_cpu() - cpu_before)
    assert completed is not None
    lines = (completed.stderr or "").strip().splitlines()
    return times, cpu, completed.returncode, lines[-1] if lines else ""


def parse_importtime(stderr: str) -> list[tuple[int, int, int, str]]:
    """``(depth, self_us, cumulative_us, module)`` for each line of ``-X importtime`` output."""
    entries = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        parts = line[len("import time:") :].split("|", 2)
        if len(parts) != 3:
            continue
        self_us, cumulative_us, name = parts
        raw = name[1:] if name.startswith(" ") else name
        depth = (len(raw) - len(raw.lstrip(" "))) // 2
        try:
            entries.append((depth, int(self_us.strip()), int(cumulative_us.strip()), raw.strip()))
        except ValueError:
            continue
    return entries


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Wall time of `shapecheck --version` and `shapecheck lint <empty file>` over N runs, "
        "and the packages `python -X importtime -m shapecheck lint <file>` imports.",
    )
    parser.add_argument("--runs", type=int, default=20, metavar="N", help="runs per command (default 20)")
    parser.add_argument("--top", type=int, default=20, metavar="K", help="top-level packages to list (default 20)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    env = environment()
    command, label = shapecheck_command()
    print(f"machine: {corpora.describe_machine()}")
    print(
        f"command: {label}; {args.runs} runs each; wall = elapsed time of the subprocess, "
        "CPU = its user + system time (steadier on a busy machine)"
    )
    with tempfile.TemporaryDirectory(prefix="shapecheck-startup-") as folder:
        empty = Path(folder) / "empty.py"
        empty.write_text("")
        cases = [
            ("python -c pass (baseline)", [sys.executable, "-c", "pass"]),
            ("python -c 'import libcst' (baseline)", [sys.executable, "-c", "import libcst"]),
            ("shapecheck --version", [*command, "--version"]),
            ("shapecheck lint <empty file>", [*command, "lint", str(empty)]),
        ]
        print()
        print("| command | wall min ms | wall median ms | wall max ms | CPU median ms | exit |")
        print("|---|---:|---:|---:|---:|---:|")
        failures = []
        for name, argv_ in cases:
            times, cpu, code, last = time_command(argv_, args.runs, env)
            ms = [t * 1e3 for t in times]
            print(
                f"| {name} | {min(ms):.0f} | {statistics.median(ms):.0f} | {max(ms):.0f} "
                f"| {statistics.median(cpu) * 1e3:.0f} | {code} |"
            )
            if code != 0:
                failures.append(f"{name} exited {code}: {last}")
        for failure in failures:
            print(f"  note: {failure}")

        modules_file = Path(folder) / "modules.txt"
        # Run the CLI as `python -m shapecheck lint FILE` does, then write sys.modules: the exact set of
        # modules that ended up imported (importtime also logs imports that failed, like `nt`).
        child = (
            "import runpy, sys\n"
            f"sys.argv = ['shapecheck', 'lint', {str(empty)!r}]\n"
            "try:\n"
            "    runpy.run_module('shapecheck', run_name='__main__', alter_sys=True)\n"
            "except SystemExit:\n"
            "    pass\n"
            f"open({str(modules_file)!r}, 'w').write('\\n'.join(sorted(sys.modules)))\n"
        )
        completed = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", child],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        imported = set(modules_file.read_text().split()) if modules_file.exists() else set()
    entries = parse_importtime(completed.stderr)
    if not entries or not imported:
        lines = [line for line in completed.stderr.splitlines() if not line.startswith("import time:")]
        print(f"\ncould not list imports (exit {completed.returncode}): {lines[-1] if lines else 'no output'}")
        return 0

    # Per top-level package: the self time of all its modules (exclusive, so the sums add up).
    self_us: dict[str, int] = defaultdict(int)
    count: dict[str, int] = defaultdict(int)
    for _depth, own_us, _cumulative_us, name in entries:
        if name in imported:
            root = name.split(".", 1)[0]
            self_us[root] += own_us
            count[root] += 1
    roots = {name.split(".", 1)[0] for name in imported}
    total_us = sum(self_us.values())
    ranked = sorted(roots, key=lambda root: (-self_us[root], root))
    print()
    print(
        f"python -X importtime -m shapecheck lint <empty file>: {len(imported)} modules in {len(roots)} "
        f"top-level packages, {total_us / 1e3:.0f} ms of import time (interpreter start-up included)"
    )
    print(f"top {min(args.top, len(ranked))} top-level packages by import time (self time of all their modules):")
    print("| package | import ms | modules |")
    print("|---|---:|---:|")
    for root in ranked[: args.top]:
        print(f"| {root} | {self_us[root] / 1e3:.1f} | {count[root]} |")
    print()
    third_party = sorted(root for root in roots if root not in sys.stdlib_module_names and not root.startswith("_"))
    print("top-level packages outside the standard library: " + ", ".join(third_party))
    print()
    for name in FORBIDDEN:
        status = ("IMPORTED: FAIL" if name in MUST_NOT else "imported") if name in roots else "not imported: ok"
        print(f"{name:<10} {status}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
