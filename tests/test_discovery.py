"""Which files a run checks."""

from __future__ import annotations

from pathlib import Path

from shapecheck.discovery import discover


def tree(root: Path, *files: str) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def test_walk_skips_hidden_venvs_caches_and_build_output(tmp_path: Path) -> None:
    tree(
        tmp_path,
        "a.py",
        "pkg/b.py",
        "pkg/notes.txt",
        ".hidden/c.py",
        "pkg/.cache/d.py",
        "__pycache__/e.py",
        "build/f.py",
        "dist/g.py",
        "venv/h.py",
        "myenv/pyvenv.cfg",
        "myenv/lib/i.py",
        "thing.egg-info/j.py",
        "node_modules/k.py",
    )
    found = discover([str(tmp_path)])
    assert sorted(t.path.relative_to(tmp_path).as_posix() for t in found.targets) == ["a.py", "pkg/b.py"]
    assert found.errors == []


def test_display_paths_follow_the_argument(tmp_path: Path, monkeypatch) -> None:
    tree(tmp_path, "src/pkg/m.py")
    monkeypatch.chdir(tmp_path)
    assert [t.display for t in discover(["."]).targets] == ["src/pkg/m.py"]
    assert [t.display for t in discover(["src/"]).targets] == ["src/pkg/m.py"]
    assert [t.display for t in discover(["./src/pkg/m.py"]).targets] == ["./src/pkg/m.py"]
    absolute = discover([str(tmp_path / "src")]).targets[0].display
    assert absolute == str(tmp_path / "src" / "pkg" / "m.py")


def test_explicit_files_any_suffix_and_each_file_once(tmp_path: Path, monkeypatch) -> None:
    tree(tmp_path, "script", "m.py")
    monkeypatch.chdir(tmp_path)
    found = discover(["script", "m.py", ".", "m.py"])
    assert [t.display for t in found.targets] == ["script", "m.py"]
    assert all(t.explicit for t in found.targets)


def test_missing_path_and_folder_without_python(tmp_path: Path, monkeypatch) -> None:
    tree(tmp_path, "docs/readme.txt")
    monkeypatch.chdir(tmp_path)
    found = discover(["nope.py", "docs"])
    assert [(e.path, e.message) for e in found.errors] == [
        ("nope.py", "no such file or directory"),
        ("docs", "no Python files found in this folder"),
    ]


def test_excluded_files_are_not_an_error(tmp_path: Path, monkeypatch) -> None:
    tree(tmp_path, "gen/a.py", "gen/b.py", "c.py")
    monkeypatch.chdir(tmp_path)
    found = discover(["gen", "c.py"], excluded=lambda path: "gen" in path.parts or path.name == "c.py")
    assert found.targets == [] and found.errors == []
    assert found.excluded == 3


def test_broken_symlink(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("link.py").symlink_to(tmp_path / "gone.py")
    found = discover(["link.py"])
    assert [(e.path, e.message) for e in found.errors] == [("link.py", "broken symbolic link")]
