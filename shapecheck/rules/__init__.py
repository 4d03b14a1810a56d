"""Every rule of shapecheck, one module per rule (``scNNN_kebab_name.py``), found by the registry."""

from shapecheck.rules.base import Invalid, Registry, Report, Rule, Valid, registry

__all__ = ["Invalid", "Registry", "Report", "Rule", "Valid", "registry"]
