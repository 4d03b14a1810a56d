"""The shape engine: reads a parsed module once and computes facts about its tensors.

It never imports or executes the code it reads, and never imports torch.
"""

from shapecheck.engine.facts.records import FileFacts
from shapecheck.engine.interpreter.driver import analyze_module as analyze
from shapecheck.engine.interpreter.project import ModuleGraph, SourceModule

__all__ = ["FileFacts", "ModuleGraph", "SourceModule", "analyze"]
