"""Placeholder: the engine issue fills this in."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst


@dataclass
class FileFacts:
    module: cst.Module
    source: str
    path: str


def analyze(module: cst.Module, source: str, path: str) -> FileFacts:
    return FileFacts(module, source, path)
