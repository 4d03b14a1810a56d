"""The on-disk result cache: reused only while file, configuration and shapecheck are unchanged."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import REPO, run_subprocess, start_forked
from shapecheck import cache as cache_module
from shapecheck.cache import Cache, Dependency, content_hash
from shapecheck.linter import lint_source

BUGGY = (REPO / "examples" / "bugs" / "sc201_mask_dtype.py").read_text()
CLEAN = "import torch\n\n\ndef double(x):\n    return x * 2\n"


def lint_json(cli, cwd: Path, *args: str) -> dict:
    return json.loads(cli("lint", "--format", "json", *args, cwd=cwd).out)


def test_second_run_reads_the_cache_and_gives_the_same_report(cli, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "model.py").write_text(BUGGY)
    first = cli("lint", "model.py", cwd=tmp_path)
    root = Path(os.environ["SHAPECHECK_CACHE_DIR"])
    assert (root / ".gitignore").read_text().strip().endswith("*")
    calls = []
    real = cache_module.Cache.get

    def spy(self, *args, **kwargs):
        found = real(self, *args, **kwargs)
        calls.append(found is not None)
        return found

    monkeypatch.setattr(cache_module.Cache, "get", spy)
    second = cli("lint", "model.py", cwd=tmp_path)
    assert calls == [True]
    assert (second.code, second.out, second.err) == (first.code, first.out, first.err)
    calls.clear()
    cli("lint", "--no-cache", "model.py", cwd=tmp_path)
    assert calls == []


def test_changed_file_or_configuration_is_checked_again(cli, tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(BUGGY)
    assert lint_json(cli, tmp_path, "model.py")["diagnostics"]
    path.write_text(CLEAN)
    assert lint_json(cli, tmp_path, "model.py")["diagnostics"] == []
    path.write_text(BUGGY)
    assert lint_json(cli, tmp_path, "model.py")["diagnostics"]
    (tmp_path / "pyproject.toml").write_text("[tool.shapecheck]\nignore = ['SC201']\n")
    assert "SC201" not in {d["code"] for d in lint_json(cli, tmp_path, "model.py")["diagnostics"]}
    (tmp_path / "pyproject.toml").write_text("[tool.shapecheck]\n")
    assert "SC201" in {d["code"] for d in lint_json(cli, tmp_path, "model.py")["diagnostics"]}
    assert "SC201" not in {d["code"] for d in lint_json(cli, tmp_path, "--ignore", "SC201", "model.py")["diagnostics"]}


def test_fix_works_from_a_cached_result(cli, tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(BUGGY)
    cli("lint", "model.py", cwd=tmp_path)  # fills the cache
    ran = cli("lint", "--fix", "model.py", cwd=tmp_path)
    assert "Fixed 1 problem" in ran.out and ".bool()" in path.read_text()
    assert cli("lint", "model.py", cwd=tmp_path).code == 0


def test_entries_are_checked_against_every_dependency(tmp_path: Path) -> None:
    store = Cache(tmp_path / "cache")
    other = tmp_path / "imported.py"
    other.write_text("x = 1\n")
    result = lint_source(BUGGY, "model.py")
    own = Dependency("model.py", content_hash(BUGGY))
    store.put(result, {"SC201"}, "py", [own, Dependency(str(other), content_hash("x = 1\n"))])
    found = store.get("model.py", {"SC201"}, "py", own)
    assert found is not None and found.cached
    assert [d.code for d in found.diagnostics] == [d.code for d in result.diagnostics]
    assert [d.fix.message for d in found.diagnostics if d.fix] == [d.fix.message for d in result.diagnostics if d.fix]
    assert store.get("model.py", {"SC201"}, "py", Dependency("model.py", content_hash(CLEAN))) is None
    assert store.get("model.py", {"SC101"}, "py", own) is None  # other rules: another entry
    other.write_text("x = 2\n")  # an imported file changed: the result is stale
    assert store.get("model.py", {"SC201"}, "py", own) is None


def test_broken_entries_are_misses(tmp_path: Path) -> None:
    store = Cache(tmp_path / "cache")
    own = Dependency("m.py", content_hash(CLEAN))
    store.put(lint_source(CLEAN, "m.py"), {"SC201"}, "py", [own])
    (entry,) = (tmp_path / "cache").rglob("*.json")
    entry.write_text('{"dependencies": [["m.py", ')
    assert store.get("m.py", {"SC201"}, "py", own) is None
    readonly = Cache(Path("/proc/no-such-place/cache"))
    readonly.put(lint_source(CLEAN, "m.py"), {"SC201"}, "py", [own])  # silently not stored
    assert readonly.get("m.py", {"SC201"}, "py", own) is None


def test_concurrent_runs_share_one_cache(tmp_path: Path) -> None:
    """Four runs at once (processes forked from this one), then a fresh interpreter reading what they stored."""
    for index in range(6):
        (tmp_path / f"m{index}.py").write_text(BUGGY if index % 2 else CLEAN)
    shared = {"SHAPECHECK_CACHE_DIR": str(tmp_path / "shared")}
    args = ["lint", "--format", "json", "."]
    runs = [start_forked(args, cwd=tmp_path, env=shared) for _ in range(4)]
    outputs = [run.wait().stdout for run in runs]
    again = run_subprocess(args, cwd=tmp_path, env=shared).stdout
    assert len(set(outputs + [again])) == 1
    assert len(json.loads(again)["diagnostics"]) >= 3
    assert not list((tmp_path / "shared").rglob("*.tmp"))
