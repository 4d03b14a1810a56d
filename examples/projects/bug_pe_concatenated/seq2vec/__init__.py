"""An encoder package with relative imports."""
