"""The on-disk result cache: ``.shapecheck_cache/`` in the folder the run starts in.

One entry per checked file and effective settings. An entry is found by a key made of
shapecheck's version and a fingerprint of its own code, the rules that run on the file, the file's
kind and the path it is shown under; it is used only if every one of its **dependencies** (a list
of ``(path, content hash)``) still has that content. Today a file's result depends on the file
alone; project-wide analysis adds the project files it imports to that list, and the check on read
stays the same.

Entries are JSON, written to a temporary file and renamed into place, so that concurrent runs
never read half an entry; an entry that does not load is a miss. Results with an internal error
are never stored. Fixes are stored as text (for reporting); ``--fix`` re-checks a file whose
cached result has one. ``SHAPECHECK_CACHE_DIR`` moves the folder; ``--no-cache`` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import shapecheck
from shapecheck.coverage import Coverage, UnknownInput
from shapecheck.diagnostics import Diagnostic, Edit, Fix, Severity, Span
from shapecheck.linter import FileResult

FOLDER = ".shapecheck_cache"
ENV = "SHAPECHECK_CACHE_DIR"
#: Bumped when the layout of an entry changes.
FORMAT = 1


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def file_hash(path: Path) -> str | None:
    """The content hash of a file on disk, as its text (None: it cannot be read)."""
    from shapecheck.linter import SourceError, read_source

    try:
        return content_hash(read_source(path))
    except SourceError:
        return None


@dataclass(frozen=True)
class Dependency:
    """A file a result was computed from, and its content hash then."""

    path: str
    digest: str


_code_fingerprint: str | None = None


def code_fingerprint() -> str:
    """shapecheck's version and the size and modification time of each of its modules, so that an
    edited checkout never reuses results of its previous code."""
    global _code_fingerprint
    if _code_fingerprint is None:
        root = Path(shapecheck.__file__).resolve().parent
        digest = hashlib.sha256(shapecheck.__version__.encode())
        for path in sorted(root.rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
        _code_fingerprint = digest.hexdigest()
    return _code_fingerprint


class Cache:
    """Results on disk under ``root``; every failure to read or write is a silent miss."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._ready = False

    @classmethod
    def default(cls) -> Cache:
        return cls(Path(os.environ.get(ENV) or FOLDER))

    def _entry_path(self, display: str, selected: Collection[str], kind: str) -> Path:
        key = json.dumps([FORMAT, code_fingerprint(), kind, display, sorted(selected)])
        name = hashlib.sha256(key.encode()).hexdigest()
        return self.root / name[:2] / f"{name}.json"

    def get(self, display: str, selected: Collection[str], kind: str, own: Dependency) -> FileResult | None:
        """The stored result if every dependency still has the recorded content, else None."""
        path = self._entry_path(display, selected, kind)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            dependencies = [Dependency(*item) for item in entry["dependencies"]]
            if not all(_still(dependency, own) for dependency in dependencies):
                return None
            return _result(display, entry["result"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, result: FileResult, selected: Collection[str], kind: str, dependencies: Sequence[Dependency]) -> None:
        """Store ``result`` (never one with an error or a caught internal error) atomically."""
        if result.error is not None or result.internal_errors:
            return  # never hide a shapecheck bug behind a cached result
        path = self._entry_path(result.path, selected, kind)
        entry = {"dependencies": [[d.path, d.digest] for d in dependencies], "result": _encode(result)}
        try:
            self._prepare()
            path.parent.mkdir(exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".entry.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as stream:
                    json.dump(entry, stream, separators=(",", ":"))
                os.replace(temporary, path)
            except BaseException:
                _unlink(temporary)
                raise
        except OSError:
            return

    def _prepare(self) -> None:
        if self._ready:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by shapecheck: its result cache, never committed.\n*\n")
        self._ready = True


def _still(dependency: Dependency, own: Dependency) -> bool:
    if dependency.path == own.path:
        return dependency.digest == own.digest
    return file_hash(Path(dependency.path)) == dependency.digest


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


# ------------------------------------------------------------------------------ (de)serialising


def _encode(result: FileResult) -> dict[str, object]:
    coverage = result.coverage
    return {
        "diagnostics": [_encode_diagnostic(d) for d in result.diagnostics],
        "note": result.note,
        "suppressed": result.suppressed,
        "coverage": None
        if coverage is None
        else {
            "functions": coverage.functions,
            "full": coverage.full,
            "partial": coverage.partial,
            "unknown": coverage.unknown,
            "inputs": [[i.path, i.function, i.parameter] for i in coverage.unknown_inputs],
        },
    }


def _encode_diagnostic(d: Diagnostic) -> dict[str, object]:
    data = d.to_json()
    data["fix"] = None if d.fix is None else d.fix.to_json()
    return data


def _result(display: str, data: dict) -> FileResult:
    result = FileResult(display)
    result.diagnostics = [_diagnostic(display, item) for item in data["diagnostics"]]
    result.note = data["note"]
    result.suppressed = data["suppressed"]
    coverage = data["coverage"]
    if coverage is not None:
        result.coverage = Coverage(
            coverage["functions"],
            coverage["full"],
            coverage["partial"],
            coverage["unknown"],
            [UnknownInput(*item) for item in coverage["inputs"]],
        )
    result.cached = True
    return result


def _diagnostic(display: str, data: dict) -> Diagnostic:
    fix = data.get("fix")
    return Diagnostic(
        path=display,
        span=Span(data["line"], data["column"], data["end_line"], data["end_column"]),
        code=data["code"],
        name=data["name"],
        severity=Severity(data["severity"]),
        message=data["message"],
        hint=data.get("hint"),
        fix=None if fix is None else Fix(fix["message"], tuple(_edit(edit) for edit in fix["edits"])),
        cell=data.get("cell"),
    )


def _edit(data: dict) -> Edit:
    span = None if data["line"] is None else Span(data["line"], data["column"], data["end_line"], data["end_column"])
    return Edit(None, None, span, data["content"])  # type: ignore[arg-type] - text only: no nodes
