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
# Where a reader gets the project when the app knows no address (View.repo_url empty): a placeholder to replace.
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
    # By name only: given by position, the version once landed in `prose` and the address in `version`.
    prose: dict = field(default_factory=dict, kw_only=True)  # our own Markdown (a Lesson step's words), not code
    version: str = field(default="", kw_only=True)  # the app's version (the installed distribution's, or pyproject's)
    repo_url: str = field(default="", kw_only=True)  # the project's git repository (or a wheel's URL) to pip-install
    created: str = field(default="", kw_only=True)  # ISO date; today when empty


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
    where = f" Its code: {md_text(view.repo_url)}." if view.repo_url else ""
    return [md(
        f"# {title}: the view, as a notebook",
        "",
        f"Made by BERT Explorer {md_text(view.version or '(version unknown)')} on {created}. "
        f"Model: {model}; {md_text(view.model_size)}.{where}",
        "",
        "The cells recompute the page's view through `bert_core`'s public functions, draw its figures with "
        "`bert_core.figures` and print its numbers as tables (what the notebook leaves out is said at its end). "
        "Run them top to bottom; change the inputs and run again.",
    )]


def pip_target(repo_url: str) -> str:
    """What `pip install` takes for the project at `repo_url`: a wheel's URL as it is, a git repository as git+."""
    if repo_url.endswith(".whl") or repo_url.startswith(("git+", "bert-explorer")):
        return repo_url
    return f"bert-explorer @ git+{repo_url}"


def install(view: View) -> list:
    if not view.repo_url:
        return [
            md("## 1. Get `bert_core`",
               "`bert_core` is BERT Explorer's own package, with its bundled models. Where it is importable (next to "
               "the app, or installed) the next cell does nothing. Elsewhere (Colab, a fresh environment) put the "
               "address of BERT Explorer's repository in place of the placeholder and run it once."),
            code(f"""
import importlib
import importlib.util

if importlib.util.find_spec("bert_core") is None:  # not installed here yet: pip-install the project (once)
    %pip install --quiet {pip_target(REPO_PLACEHOLDER)!r}
    importlib.invalidate_caches()
    if importlib.util.find_spec("bert_core") is None:  # pip failed (no network, a wrong address): say so here
        raise ModuleNotFoundError("bert_core is not installed: pip's message above says why")
"""),
        ]
    return [
        md("## 1. Get `bert_core`",
           "`bert_core` is BERT Explorer's own package, with its bundled models. Where it is importable (next to the "
           "app, or installed) the next cell does nothing; elsewhere (Colab, a fresh environment) it installs the "
           f"project with pip from {md_text(view.repo_url)}: about 75 MB, plus whichever of torch, transformers, "
           "pandas and Streamlit the environment lacks."),
        code(f"""
import importlib
import importlib.util

if importlib.util.find_spec("bert_core") is None:  # not installed here yet: pip-install the project (once)
    %pip install --quiet {pip_target(view.repo_url)!r}
    importlib.invalidate_caches()
    if importlib.util.find_spec("bert_core") is None:  # pip failed (no network, a wrong address): say so here
        raise ModuleNotFoundError("bert_core is not installed: pip's message above says why")
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
        if view.source == "local":
            cells.append(md(f"**The page's model is a folder on the app's machine** ({md_text(view.model)}): "
                            "copy it next to this notebook, or change `MODEL` below to where it is."))
    cells.append(md("## 2. The model and the input", "The same model, text and settings as on the page."))
    cells.append(code(f"""
import pandas as pd

import bert_core
{imports.strip()}

pd.set_option("display.width", 200)
MADE_WITH = {view.version!r}  # the app's version that wrote this notebook
if MADE_WITH and getattr(bert_core, "__version__", None) != MADE_WITH:
    print(f"Note: this notebook was made with BERT Explorer {{MADE_WITH}}; this bert_core is "
          f"{{getattr(bert_core, '__version__', 'unknown')}}, so its numbers may differ from the page's.")
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
