"""The parts every notebook shares: its header, the install cell, loading the model, the inputs.

User text reaches a notebook only as a Python literal (repr) in a code cell, or escaped in Markdown.
"""

from __future__ import annotations

import datetime as _dt
import html
import re
from dataclasses import dataclass, field

from nbformat import v4

FALLBACK_MODEL = "bundled-minilm"
# Where a reader gets the project. The app's server can say where its code lives; otherwise a placeholder
# the reader replaces (the project is not on PyPI, and its bundled MiniLM ships only with the repository).
REPO_PLACEHOLDER = "<URL of the BERT Explorer repository>"


@dataclass(frozen=True)
class View:
    """What a page shows: the model, the input and the page's own settings (its `PageSpec.settings`)."""

    page: str  # a key of PAGES
    model: str  # what bert_core.load_model takes: a bundled name, a hub id or a folder; "session": trained here
    source: str  # LoadedModel.source: "bundled" | "hub" | "local" | "session"
    model_size: str  # e.g. "6 layers, 384 wide, 12 heads; 22,713,216 parameters"
    text: str
    pair: str | None
    seed: int
    settings: dict = field(default_factory=dict)
    prose: dict = field(default_factory=dict)  # our own Markdown for the notebook (a Lesson step's words), not code
    version: str = ""  # the app's version (bert_core.__version__)
    repo_url: str = ""  # where the project's code is, if the server says so
    created: str = ""  # ISO date; today when empty


def md_text(s: str) -> str:
    """User text for a Markdown cell, shown literally: HTML entities, Markdown and LaTeX marks escaped."""
    s = html.escape(str(s), quote=True)
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~$>])", r"\\\1", s).replace("\n", " ")


def md(*lines: str):
    return v4.new_markdown_cell("\n".join(lines))


def code(src: str):
    return v4.new_code_cell(src.strip("\n"))


def setting_lines(settings: dict, docs: dict[str, str]) -> str:
    """One `NAME = value  # what it is` line per setting, values as Python literals."""
    return "\n".join(f"{k.upper()} = {settings[k]!r}  # {docs[k]}" for k in docs)


def header(view: View, title: str) -> list:
    created = view.created or _dt.date.today().isoformat()
    if view.source == "session":
        model = ("a model trained in the app's session (it stays in the app: this notebook loads the bundled "
                 f"`{FALLBACK_MODEL}` instead)")
    else:
        model = f"{md_text(view.model)} ({view.source})"
    return [md(
        f"# {title}: the view, as a notebook",
        "",
        f"Made by BERT Explorer {md_text(view.version or '(version unknown)')} on {created}. "
        f"Model: {model}; {md_text(view.model_size)}.",
        "",
        "The cells recompute the page's view through `bert_core`'s public functions, draw its figures with "
        "`bert_core.figures` and print its numbers as tables (what the notebook leaves out is said at its end). "
        "Run them top to bottom; change the inputs and run again.",
    )]


def install(view: View) -> list:
    url = view.repo_url or REPO_PLACEHOLDER
    return [
        md("## 1. Get `bert_core`",
           "`bert_core` is BERT Explorer's own package; it is not on PyPI and its bundled models ship with the "
           "repository. Where it is already importable (next to the app, or installed) leave the next cell as it "
           "is. Elsewhere (Colab, a fresh environment) remove the `# ` before its lines"
           + ("" if view.repo_url else ", with the repository's address in place of the placeholder")
           + ", and run it once."),
        code(f"""
# !git clone --depth 1 {url} bert-explorer
# %pip install -r bert-explorer/requirements.txt
# import sys; sys.path.insert(0, "bert-explorer")
"""),
    ]


def setup(view: View, settings_code: str, imports: str = "") -> list:
    cells = []
    if view.source == "session":
        cells.append(md(
            "**The page showed a model trained in the app's session.** Its weights stay in the app, so this "
            f"notebook loads the bundled `{FALLBACK_MODEL}` instead: the cells run the same computation, but the "
            "numbers are that model's, not the ones on the page."))
        model = FALLBACK_MODEL
    else:
        model = view.model  # a bundled name, a hub id or a folder: load_model takes each
    cells.append(md("## 2. The model and the input", "The same model, text and settings as on the page."))
    cells.append(code(f"""
import pandas as pd

import bert_core
{imports.strip()}

pd.set_option("display.width", 200)
MODEL = {model!r}
model = bert_core.load_model(MODEL)
n_params = sum(p.numel() for p in model.model.parameters())
cfg = model.config
print(f"{{model.name}}: {{cfg.num_hidden_layers}} layers, {{cfg.hidden_size}} wide, {{cfg.num_attention_heads}} heads; "
      f"{{n_params:,}} parameters. bert_core {{getattr(bert_core, '__version__', '?')}}.")
"""))
    cells.append(code(f"""
TEXT = {view.text!r}
PAIR = {view.pair!r}  # sentence B, or None
SEED = {view.seed!r}
{settings_code}
"""))
    return cells


def show_table(df_expr: str, title: str) -> str:
    """Code that prints a table of the page's numbers (probabilities and weights to 4 decimals)."""
    return f'print({title!r})\nprint(({df_expr}).round(4).to_string(index=False), end="\\n\\n")'


def indent(src: str) -> str:
    """Code indented by one level (a table's cell lines inside an `if` of the notebook's code)."""
    return "\n".join("    " + line for line in src.splitlines())
