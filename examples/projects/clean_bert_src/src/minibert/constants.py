"""Sizes shared by the modules (module-level constants used across files)."""

HIDDEN = 48
HEADS = 6
FF_MULT = 4
