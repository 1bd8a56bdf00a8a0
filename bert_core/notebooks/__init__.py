"""Notebooks that reproduce a page's view: `View` (what the page shows) in, an nbformat notebook out.

This package writes code as strings and never runs it: it imports no torch and no other part of
bert_core (pyproject's import contract "notebooks"). Each page's builder lives in `pages.py` beside
its settings (`PAGES`), the one description the page and the builder share; the app's button is
ui/notebook_ui.py.

    from bert_core.notebooks import View, notebook_bytes
    data = notebook_bytes(View("attention", "bundled-minilm", "bundled", "MiniLM …", "A text.", None, 0,
                               {"layer": 0, "head": 0, "average": False}))
"""

import nbformat
from nbformat import v4

from .cells import View, header, install, setting_lines, setup
from .pages import LEFT_OUT, PAGES, PageSpec


def build(view: View):
    """The notebook that reproduces `view`."""
    spec = PAGES[view.page]
    spec.check(view.settings)
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["bert_explorer"] = {"page": view.page, "version": view.version, "model": view.model}
    imports, body = spec.build(view)
    nb.cells = [*header(view, spec.title), *install(view),
                *setup(view, setting_lines(view.settings, spec.settings), imports), *body]
    if view.page in LEFT_OUT:
        nb.cells.append(v4.new_markdown_cell(f"**Not in this notebook:** {LEFT_OUT[view.page]}; the page has them."))
    nbformat.validate(nb)
    return nb


def notebook_bytes(view: View) -> bytes:
    """`build(view)` as the .ipynb file's bytes."""
    return nbformat.writes(build(view)).encode("utf-8")


__all__ = ["PAGES", "PageSpec", "View", "build", "notebook_bytes"]
