"""The app's version, which every notebook and handout states, is the project's."""

import tomllib

from nb_run import ROOT

import bert_core


def test_version_matches_pyproject():
    with open(ROOT / "pyproject.toml", "rb") as f:
        assert bert_core.__version__ == tomllib.load(f)["project"]["version"]
