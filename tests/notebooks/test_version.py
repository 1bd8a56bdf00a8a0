"""The app's version, which every notebook and handout states, is the project's."""

import tomllib

from support.nb_run import ROOT

import bert_core


def test_version_matches_pyproject():
    with open(ROOT / "pyproject.toml", "rb") as f:
        assert bert_core.__version__ == tomllib.load(f)["project"]["version"]


def test_a_pages_notebook_names_the_apps_version_and_the_configured_repository(monkeypatch):
    """BERT_EXPLORER_REPO_URL goes to the install cell and the header, the version to the header (View(...) once
    took them by position, and a `prose` field before them swallowed the version: "Made by BERT Explorer https://")."""
    from support.apptest import assert_ok, open_page

    from bert_core.notebooks import build
    from ui.notebook_ui import VIEWS_KEY

    url = "https://git.example.org/school/bert-explorer.git"
    monkeypatch.setenv("BERT_EXPLORER_REPO_URL", url)
    at = open_page("predictions", text="The cat [MASK] on the mat.")
    assert_ok(at)
    view = at.session_state[VIEWS_KEY]["predictions"]
    assert (view.version, view.repo_url, view.prose) == (bert_core.__version__, url, {})
    cells = build(view).cells
    assert f"Made by BERT Explorer {bert_core.__version__.replace('.', chr(92) + '.')} on" in cells[0].source
    install = next(c.source for c in cells if c.cell_type == "code")
    assert f"%pip install --quiet 'bert-explorer @ git+{url}'" in install
    assert "<URL of" not in install


def test_without_a_configured_address_the_notebook_installs_from_pyprojects_repository(monkeypatch):
    """BERT_EXPLORER_REPO_URL unset (or blank): the install cell and the header name [project.urls] Repository, the
    address `pip install` of a clone or a wheel records, never the placeholder."""
    from support.apptest import assert_ok, open_page

    from bert_core.notebooks import build
    from bert_core.notebooks.cells import md_text
    from ui.notebook_ui import VIEWS_KEY

    with open(ROOT / "pyproject.toml", "rb") as f:
        url = tomllib.load(f)["project"]["urls"]["Repository"]
    assert url.startswith("https://")
    for unset in (None, "  "):
        if unset is None:
            monkeypatch.delenv("BERT_EXPLORER_REPO_URL", raising=False)
        else:
            monkeypatch.setenv("BERT_EXPLORER_REPO_URL", unset)
        at = open_page("predictions", text="The cat [MASK] on the mat.")
        assert_ok(at)
        view = at.session_state[VIEWS_KEY]["predictions"]
        assert (view.version, view.repo_url) == (bert_core.__version__, url)
        cells = build(view).cells
        assert f"Its code: {md_text(url)}." in cells[0].source
        install = next(c.source for c in cells if c.cell_type == "code")
        assert f"%pip install --quiet 'bert-explorer @ git+{url}'" in install
        assert "<URL of" not in install
