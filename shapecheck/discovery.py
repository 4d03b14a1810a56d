"""Which files a run checks: the paths given, folders walked for ``*.py``.

Walking a folder skips hidden folders, virtualenvs (any folder holding ``pyvenv.cfg``), caches and
build output, and whatever the caller's ``excluded`` predicate rejects (the configured ``exclude``
globs). A file named on the command line is checked whatever its suffix, unless ``excluded`` rejects
it, so that pre-commit, which passes file names, honours ``exclude`` too.

Problems with the paths themselves (missing, unreadable folder, a folder without Python files)
become ``FileError`` entries, never exceptions.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from shapecheck.diagnostics import FileError

#: Folder names never walked into (hidden folders, starting with ".", are skipped as well).
SKIPPED_FOLDERS = frozenset(
    {"__pycache__", "build", "dist", "node_modules", "site-packages", "venv", "_build", "__pypackages__"}
)
PYTHON_SUFFIXES = (".py", ".ipynb")

Excluded = Callable[[Path], bool]


@dataclass(frozen=True)
class Target:
    """One file to check: where it is, and the path to show for it (relative stays relative)."""

    path: Path
    display: str
    explicit: bool = False
    #: The source comes from standard input (the path ``-``); ``path`` is ``--stdin-filename``.
    stdin: bool = False


@dataclass
class Discovery:
    """The outcome of expanding the command-line paths."""

    targets: list[Target] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    excluded: int = 0
    #: Files named on the command line that the configuration excludes (not with ``force_exclude``).
    skipped: list[FileError] = field(default_factory=list)


def skipped_folder(folder: Path) -> bool:
    """True for folders a walk never enters: hidden, caches, build output, virtualenvs."""
    name = folder.name
    return (
        name.startswith(".")
        or name in SKIPPED_FOLDERS
        or name.endswith(".egg-info")
        or (folder / "pyvenv.cfg").is_file()
    )


def _never(_: Path) -> bool:
    return False


#: The path that stands for standard input.
STDIN = "-"


def discover(
    paths: Iterable[str], excluded: Excluded = _never, force_exclude: bool = False, stdin_filename: str | None = None
) -> Discovery:
    """Expand ``paths`` into the files to check, in a stable order, each file once.

    A file named in ``paths`` that ``excluded`` rejects is listed in ``skipped``, so that the run
    can say it did not check it; with ``force_exclude`` (pre-commit, editors) it is left out silently.
    """
    found = Discovery()
    seen: set[str] = set()

    def add(target: Target) -> None:
        key = os.path.realpath(target.path)
        if key not in seen:
            seen.add(key)
            found.targets.append(target)

    for raw in paths:
        path = Path(raw)
        if raw == STDIN:
            named = Path(stdin_filename) if stdin_filename else None
            if named is not None and excluded(named):
                if not force_exclude:
                    found.skipped.append(FileError(stdin_filename, "excluded by the configuration (--force-exclude skips it silently)"))
            else:
                found.targets.append(Target(named or Path(STDIN), stdin_filename or STDIN, explicit=True, stdin=True))
        elif path.is_dir():
            before = len(found.targets)
            skipped = _walk(path, raw, excluded, add, found)
            if len(found.targets) == before and skipped == 0:
                found.errors.append(FileError(raw, "no Python files found in this folder"))
        elif path.exists():
            if excluded(path):
                found.excluded += 1
                if not force_exclude:
                    found.skipped.append(FileError(raw, "excluded by the configuration (--force-exclude skips it silently)"))
            else:
                add(Target(path, raw, explicit=True))
        elif path.is_symlink():
            found.errors.append(FileError(raw, "broken symbolic link"))
        else:
            found.errors.append(FileError(raw, "no such file or directory"))
    return found


def _walk(root: Path, display_root: str, excluded: Excluded, add: Callable[[Target], None], found: Discovery) -> int:
    """Add the Python files under ``root``; return how many were left out by ``excluded``."""
    skipped = 0

    def on_error(error: OSError) -> None:
        where = error.filename or str(root)
        found.errors.append(FileError(_display(display_root, root, Path(where)), f"cannot read folder: {error.strerror}"))

    for folder, subfolders, files in os.walk(root, onerror=on_error):
        here = Path(folder)
        kept = []
        for name in sorted(subfolders):
            child = here / name
            if skipped_folder(child):
                continue
            if excluded(child):
                skipped += 1
                continue
            kept.append(name)
        subfolders[:] = kept
        for name in sorted(files):
            if not name.endswith(PYTHON_SUFFIXES):
                continue
            file = here / name
            if excluded(file):
                skipped += 1
                continue
            add(Target(file, _display(display_root, root, file)))
    found.excluded += skipped
    return skipped


def _display(display_root: str, root: Path, file: Path) -> str:
    """``file`` as the user would write it: under the path they gave, normalised (``./a.py`` -> ``a.py``)."""
    try:
        relative = file.relative_to(root)
    except ValueError:
        return str(file)
    return os.path.normpath(os.path.join(display_root, relative))
