"""``python -m shapecheck``: the same as the ``shapecheck`` command."""

from shapecheck.cli import main

raise SystemExit(main())
