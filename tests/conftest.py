"""Shared helpers: run the CLI in-process or in a subprocess, and register test-only rules."""

from __future__ import annotations

import functools
import importlib
import itertools
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import pytest

import shapecheck
from shapecheck.cli import main
from shapecheck.diagnostics import Edit, Fix, Severity
from shapecheck.rules.base import Invalid, Registry, Report, Rule, Valid, registry

#: The checkout this test run imports shapecheck from (CI: a fresh clone).
REPO = Path(shapecheck.__file__).resolve().parents[1]


def _import_without_assertion_rewriting(name: str) -> None:
    """Import a third-party package now, out of sight of pytest's assertion rewriter.

    pytest rewrites the asserts of every installed package that ships a pytest plugin (hypothesis
    does, and its plugin imports hypothesis at the end of every session, even in the xdist
    controller). The rewritten code is cached only where ``__pycache__`` can be written: with
    ``PYTHONDONTWRITEBYTECODE`` or a read-only site-packages, each pytest process rewrites all of
    hypothesis again, 2.0 s of CPU instead of 0.3 s. Its internal asserts need no pytest messages;
    the tests' own asserts are rewritten as before."""
    if name in sys.modules:
        return
    rewriters = [finder for finder in sys.meta_path if type(finder).__name__ == "AssertionRewritingHook"]
    for finder in rewriters:
        sys.meta_path.remove(finder)
    try:
        importlib.import_module(name)
    except ImportError:
        pass  # not installed: the tests that need it say so when they import it
    finally:
        sys.meta_path[0:0] = rewriters


_import_without_assertion_rewriting("hypothesis")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes tens of seconds (runs by default; -m 'not slow' skips)")


@pytest.fixture(scope="session")
def _result_caches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder under which each test gets its own result cache."""
    return tmp_path_factory.mktemp("caches")


_CACHE_NUMBERS = itertools.count()


@pytest.fixture(autouse=True)
def _private_result_cache(_result_caches: Path) -> Iterator[None]:
    """Each test gets its own result cache (subprocesses inherit it): no test sees another's results.

    A fresh, not yet existing folder per test (shapecheck creates it when it first stores a result):
    ``tmp_path_factory.mktemp`` per test lists every folder made before it, 3 ms a test by the end."""
    previous = os.environ.get("SHAPECHECK_CACHE_DIR")
    os.environ["SHAPECHECK_CACHE_DIR"] = str(_result_caches / f"cache{next(_CACHE_NUMBERS)}")
    yield
    if previous is None:
        os.environ.pop("SHAPECHECK_CACHE_DIR", None)
    else:
        os.environ["SHAPECHECK_CACHE_DIR"] = previous


@dataclass
class Ran:
    """What one CLI run printed and returned."""

    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """Run ``shapecheck ARGS`` in this process (optionally in ``cwd``) and capture its output."""

    def run(*args: str, cwd: Path | None = None) -> Ran:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exit:  # argparse: --version, --help and usage errors
            code = int(exit.code or 0)
        captured = capsys.readouterr()
        return Ran(code, captured.out, captured.err)

    return run


def run_subprocess(args: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m shapecheck ARGS`` in a fresh interpreter, importing this checkout."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), environment.get("PYTHONPATH")]))
    environment.pop("SHAPECHECK_DEBUG", None)
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "shapecheck", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_forked(
    args: Sequence[str], cwd: Path, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m shapecheck ARGS`` in a fork of this test process: a process of its own (its own
    ``sys.modules``, ``sys.path``, environment, exit code and standard streams), without the 3 s of
    a fresh interpreter importing torch. For tests of what a program run does, not of interpreter
    start-up (``run_subprocess`` for those)."""
    return in_fork(lambda: main(list(args)), [sys.executable, "-m", "shapecheck", *args], cwd, stdin, env)


def in_fork(
    body: Callable[[], int | None], command: Sequence[str], cwd: Path, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``body`` in a forked child with its own standard streams; its return value (or
    ``SystemExit``) is the exit code, an uncaught exception prints a traceback and exits with 70."""
    return Forked(body, command, cwd, stdin, env).wait()


def start_forked(
    args: Sequence[str], cwd: Path, stdin: str = "", env: dict[str, str] | None = None
) -> Forked:
    """``python -m shapecheck ARGS`` in a fork of this test process, started and not waited for:
    several of them run at the same time (``run_forked`` for one)."""
    return Forked(lambda: main(list(args)), [sys.executable, "-m", "shapecheck", *args], cwd, stdin, env)


class Forked:
    """A forked child running ``body`` with its own standard streams (files in a scratch folder),
    started on construction; ``wait()`` gives its exit code and output."""

    def __init__(
        self,
        body: Callable[[], int | None],
        command: Sequence[str],
        cwd: Path,
        stdin: str = "",
        env: dict[str, str] | None = None,
    ) -> None:
        import tempfile

        self.command = list(command)
        self._scratch = tempfile.TemporaryDirectory()
        self.streams = {name: Path(self._scratch.name) / name for name in ("stdin", "stdout", "stderr")}
        self.streams["stdin"].write_text(stdin)
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns into pytest
            self._child(body, cwd, env)

    def _child(self, body: Callable[[], int | None], cwd: Path, env: dict[str, str] | None) -> None:
        code = 70
        try:
            os.chdir(cwd)
            os.environ.pop("SHAPECHECK_DEBUG", None)
            os.environ.update(env or {})
            for fd, name, mode in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY | os.O_CREAT), (2, "stderr", os.O_WRONLY | os.O_CREAT)):
                opened = os.open(self.streams[name], mode, 0o600)
                os.dup2(opened, fd)
                os.close(opened)
            sys.stdin = open(0, encoding="utf-8", closefd=False)
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
            try:
                code = body() or 0
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
        except BaseException:  # noqa: BLE001 - report anything to the parent, never return into pytest
            import traceback

            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:  # noqa: BLE001
                    pass
            os._exit(code)

    def wait(self) -> subprocess.CompletedProcess[str]:
        """Wait for the child; its exit code and standard output and error."""
        try:
            _, status = os.waitpid(self.pid, 0)
            return subprocess.CompletedProcess(
                self.command,
                os.waitstatus_to_exitcode(status),
                self.streams["stdout"].read_text(),
                self.streams["stderr"].read_text(),
            )
        finally:
            self._scratch.cleanup()


def assert_no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text, text


# --- test-only rules ------------------------------------------------------------------------------


class _Names(cst.CSTVisitor):
    def __init__(self, value: str) -> None:
        super().__init__()
        self.value = value
        self.found: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.value:
            self.found.append(node)


def _names(facts: object, value: str) -> list[cst.Name]:
    visitor = _Names(value)
    getattr(facts, "module").visit(visitor)
    return visitor.found


class BadNameRule(Rule):
    """Test-only: flags every name ``bad_name`` and offers to rename it ``good_name``.

    ## What it does
    Flags `bad_name`.

    ## Why is this bad?
    Tests need a fixable rule.

    ## Example
    ```python
    bad_name = 1
    ```

    ## Use instead
    ```python
    good_name = 1
    ```
    """

    code = "SC990"
    name = "bad-name"
    severity = Severity.WARNING
    fixable = True
    VALID = [Valid("good_name = 1\n")]
    INVALID = [Invalid("bad_name = 1  # <-\n", expected_fix="good_name = 1  # <-\n")]

    def check(self, facts: object) -> Iterator[Report]:
        for node in _names(facts, "bad_name"):
            fix = Fix("rename to good_name", (Edit(node, node.with_changes(value="good_name")),))
            yield Report(node, "bad_name is a bad name", hint="call it good_name", fix=fix)


class BrokenFixRule(Rule):
    """Test-only: offers a fix whose result does not parse (``class`` as a name)."""

    code = "SC991"
    name = "broken-fix"
    fixable = True

    def check(self, facts: object) -> Iterator[Report]:
        for node in _names(facts, "broken_name"):
            fix = Fix("break the file", (Edit(node, cst.Name("class")),))
            yield Report(node, "broken_name found", fix=fix)


class CrashingRule(Rule):
    """Test-only: raises on any file that mentions ``crash_me``."""

    code = "SC992"
    name = "crashing-rule"

    def check(self, facts: object) -> Iterator[Report]:
        if _names(facts, "crash_me"):
            raise RuntimeError("rule blew up\nsecond line")
        return iter(())


class StubbornRule(Rule):
    """Test-only: its fix wraps ``wrap_me`` in a call, after which it still fires."""

    code = "SC993"
    name = "stubborn-fix"
    fixable = True

    def check(self, facts: object) -> Iterator[Report]:
        for node in _names(facts, "wrap_me"):
            replacement = cst.Call(func=cst.Name("f"), args=[cst.Arg(node)])
            yield Report(node, "wrap_me is bare", fix=Fix("wrap it", (Edit(node, replacement),)))


class ClashingRule(Rule):
    """Test-only: rewrites the whole call ``pair(...)`` as ``pair2(...)``, enclosing other fixes."""

    code = "SC994"
    name = "clashing-fix"
    fixable = True

    def check(self, facts: object) -> Iterator[Report]:
        for name in _names(facts, "pair"):
            calls = _Calls(name)
            getattr(facts, "module").visit(calls)
            for call in calls.found:
                fix = Fix("rename", (Edit(call, call.with_changes(func=cst.Name("pair2"))),))
                yield Report(call, "pair() is old", fix=fix)


class _Calls(cst.CSTVisitor):
    def __init__(self, func: cst.Name) -> None:
        super().__init__()
        self.func = func
        self.found: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        if node.func is self.func:
            self.found.append(node)


@pytest.fixture
def test_rules(monkeypatch: pytest.MonkeyPatch) -> Registry:
    """The shipped rules plus the test-only ones, for this test only."""
    extended = Registry([*registry(), BadNameRule, BrokenFixRule, CrashingRule, StubbornRule, ClashingRule])
    monkeypatch.setattr("shapecheck.linter.registry", lambda: extended)
    return extended


@functools.lru_cache(maxsize=None)
def _lint_with_all_rules_cached(code: str):
    from shapecheck.linter import lint_source

    return lint_source(code, "example.py")


def lint_with_all_rules(code: str):
    """``lint_source`` of a snippet with every shipped rule on, once per distinct snippet: the example
    tests (test_rule_examples, test_examples_cross_rule) share the result instead of linting again.
    Not cached under mutation testing: mutmut forks each mutant from a process that already linted."""
    if "MUTANT_UNDER_TEST" in os.environ or "mutmut" in sys.modules:
        from shapecheck.linter import lint_source

        return lint_source(code, "example.py")
    return _lint_with_all_rules_cached(code)


@functools.lru_cache(maxsize=None)
def _lint_file_cached(path: Path):
    from shapecheck.linter import lint_source

    return lint_source(path.read_text(encoding="utf-8"), str(path))


def lint_shipped_file(path: Path):
    """``lint_source`` of a file shipped in the repository (examples/, reference_model/), once per file
    per test process: the tests that hold the shipped examples to their promises share the result.
    Not cached under mutation testing (see ``lint_with_all_rules``)."""
    if "MUTANT_UNDER_TEST" in os.environ or "mutmut" in sys.modules:
        from shapecheck.linter import lint_source

        return lint_source(path.read_text(encoding="utf-8"), str(path))
    return _lint_file_cached(path)
