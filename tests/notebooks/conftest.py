"""Fixtures for the notebook tests: one Jupyter kernel per test file, the bundled model."""

from support.nb_run import kernel, minilm  # noqa: F401  (pytest fixtures)
