"""Example corpora of the rules: ``scNNN.py`` defines ``INVALID`` and ``VALID`` lists of
``(title, code)`` pairs; INVALID code marks the reported line with a trailing ``# <-``."""
