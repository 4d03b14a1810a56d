"""Large and hostile input: a clear per-file message instead of a hang."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import assert_no_traceback
from shapecheck.hostile import MAX_OPERATOR_CHAIN, longest_operator_chain


def test_long_operator_chain_is_refused_before_parsing(cli, tmp_path: Path) -> None:
    (tmp_path / "chain.py").write_text("x = " + " + ".join(f"a{i}" for i in range(20_000)) + "\n")
    (tmp_path / "ok.py").write_text("x = 1 + 2\n")
    started = time.perf_counter()
    ran = cli("lint", "--no-cache", "chain.py", "ok.py", cwd=tmp_path)
    assert time.perf_counter() - started < 60  # libcst alone would take hours
    assert ran.code == 2
    assert "chain.py: error: line 1 holds a chain of 19,999 binary operators" in ran.err
    assert "Not checked: chain.py" in ran.out
    assert_no_traceback(ran.out, ran.err)


def test_chain_count_follows_brackets_strings_and_statements() -> None:
    many_pairs = "x = [" + ", ".join(f"a{i} + b{i}" for i in range(3000)) + "]\n"
    assert longest_operator_chain(many_pairs)[0] <= MAX_OPERATOR_CHAIN
    dashes = 's = """' + "-" * 5000 + '"""\ny = 1 + 2\n'
    assert longest_operator_chain(dashes)[0] == 1  # a string is not a chain
    statements = "".join(f"x{i} = a + b\n" for i in range(3000))
    assert longest_operator_chain(statements)[0] <= MAX_OPERATOR_CHAIN
    nested = "x = (" + " * ".join(f"(a{i} - b{i})" for i in range(1500)) + ")\n"
    assert longest_operator_chain(nested) == (1499, 1)


def test_per_file_time_budget(cli, tmp_path: Path, monkeypatch) -> None:
    import shapecheck.linter

    real = shapecheck.linter.analyze

    def slow_for_big_files(module, source, path, *project):
        if path == "big.py":
            time.sleep(30)  # a stand-in for a runaway analysis; the timer interrupts it
        return real(module, source, path, *project)

    monkeypatch.setattr(shapecheck.linter, "analyze", slow_for_big_files)
    (tmp_path / "big.py").write_text("import torch\n\n\ndef f(x):\n    return x\n")
    (tmp_path / "small.py").write_text("x = 1\n")
    monkeypatch.setenv("SHAPECHECK_FILE_TIMEOUT", "2")
    started = time.perf_counter()
    ran = cli("lint", "--no-cache", "--jobs", "1", "big.py", "small.py", cwd=tmp_path)
    assert time.perf_counter() - started < 25
    assert ran.code == 2
    assert "big.py: error: took longer than the per-file budget of 2 s (SHAPECHECK_FILE_TIMEOUT)" in ran.err
    assert "No problems in the 1 file checked" in ran.out  # the run went on
    assert_no_traceback(ran.out, ran.err)
