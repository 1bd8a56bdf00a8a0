"""The "Open as a notebook" button: the page's view (bert_core.notebooks.View) as a .ipynb download. A Lesson step's
notebook is the Lesson's own (ui/lesson/notebooks.py): this module reads nothing of the Lesson."""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import os
import re
import tomllib
import weakref
from pathlib import Path

import streamlit as st

import bert_core
from bert_core.finetune.tasks import builtin_tasks
from bert_core.notebooks import View, notebook_bytes
from ui.finetune_ui import new_head_bases, recipe_config
from ui.state import BUNDLED_LABEL, Current

DIST = "bert-explorer"  # the project's distribution name (pyproject.toml's [project] name)


def project_info() -> tuple[str, str]:
    """(version, repository address) of the running app; an address in BERT_EXPLORER_REPO_URL wins."""
    version, url = _project()
    return version, os.environ.get("BERT_EXPLORER_REPO_URL", "").strip() or url


@functools.cache
def _project() -> tuple[str, str]:
    """(version, [project.urls] Repository): the metadata of the installed distribution that holds this bert_core
    (an older one installed beside a checkout does not count), or else pyproject.toml beside it (a checkout)."""
    version = url = ""
    try:
        dist = importlib.metadata.distribution(DIST)
        if Path(dist.locate_file("bert_core/__init__.py")).resolve() == Path(bert_core.__file__).resolve():
            version = dist.version
            urls = dict(u.split(", ", 1) for u in dist.metadata.get_all("Project-URL") or [] if ", " in u)
            url = urls.get("Repository", "")
    except importlib.metadata.PackageNotFoundError:  # a checkout that was never pip-installed
        pass
    pyproject = Path(bert_core.__file__).resolve().parents[1] / "pyproject.toml"
    if not version and pyproject.is_file():
        with open(pyproject, "rb") as f:
            project = tomllib.load(f).get("project", {})
        version, url = project.get("version", ""), project.get("urls", {}).get("Repository", "")
    return version, url


VIEWS_KEY = "notebook_views"  # page -> the View its button offers (read by the tests, which run the notebook)


_PARAMETERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # module -> its parameter count (counted once)


def model_size(m: bert_core.LoadedModel) -> str:
    """The model's shape and parameter count, in the words the pages use."""
    c = m.config
    n = _PARAMETERS.get(m.model)
    if n is None:  # counted once per model (a class's followers ask on every step), forgotten with the model
        n = _PARAMETERS[m.model] = sum(p.numel() for p in m.model.parameters())
    return (f"{c.num_hidden_layers} layers, {c.hidden_size} wide, {c.num_attention_heads} heads; "
            f"{n:,} parameters")


def view_of(cur: Current, page: str, text: str | None = None, **settings) -> View:
    """The View a page shows: the sidebar's model and input (or the page's own text) and its settings."""
    source = "session" if cur.model_key.startswith("session:") else cur.model.source
    version, repo_url = project_info()
    return View(page=page, model=cur.model_key if source != "session" else "session", source=source,
                model_size=model_size(cur.model), text=cur.text if text is None else text, pair=cur.text_pair,
                seed=cur.seed, settings=settings, version=version, repo_url=repo_url)


def finetuning_button(cur: Current, trainer, task, base: str, cfg) -> None:
    """The Fine-tuning page's notebook: the run on the page (where it stands), or the one Start would begin, with its
    task, base model (`base`: a load_model name or "session"), recipe and seed; offered before any run too."""
    steps = None
    if trainer is not None:
        task, cfg = trainer.task, trainer.cfg
        steps = None if trainer.done else trainer.step_count
    if task is None or cfg is None:
        return
    notebook_button(cur, "finetuning", task=task.name if task.name in builtin_tasks() else None, base=base,
                    recipe=dataclasses.asdict(cfg), steps=steps)


def head_run_button(cur: Current, page: str, trainer, base_label: str, task, chosen: dict, text: str,
                    **settings) -> None:
    """Tagging and Question answering, beside the run's buttons: the page's fine-tuning run as a notebook (before any
    run the one Start would begin, during one where it stands), which then tags or answers `text` with the new head.
    `task`: the built-in task's first n examples, as the page builds it; `chosen`: `new_head_settings`' values."""
    steps = None
    if trainer is not None:
        task, cfg = trainer.task, trainer.cfg
        steps = None if trainer.done else trainer.step_count
    else:
        memo = st.session_state.setdefault("notebook_recipes", {})
        key = (page, base_label, cur.model_key, len(getattr(task, "train_words", getattr(task, "train", ()))),
               tuple(sorted(chosen.items())), cur.seed)
        if key not in memo:  # all weights: finetune_defaults reads every training text's length (once per setting)
            memo.clear()
            memo[key] = recipe_config(new_head_bases(cur)[base_label][1](), task, chosen, cur.seed)
        cfg = memo[key]
    n = len(task.train_words) if hasattr(task, "train_words") else len(task.train)
    train = {"n": n, "base": "bundled" if base_label == BUNDLED_LABEL else cur.model_key,
             "recipe": dataclasses.asdict(cfg), "steps": steps}
    offer(view_of(cur, page, text, **settings, head="train", train=train), f"{page}-run", slot="-run")


def notebook_button(cur: Current, page: str, text: str | None = None, **settings) -> None:
    """"Open as a notebook": a .ipynb that recomputes this view (written only when clicked)."""
    offer(view_of(cur, page, text, **settings), page)


def offer(view: View, name: str, slot: str = "") -> None:
    """The download button for `view`'s notebook, `bert-explorer-<name>.ipynb` (`slot`: a page's second one)."""
    st.session_state.setdefault(VIEWS_KEY, {})[view.page + slot] = view
    download("Open as a notebook (.ipynb)", lambda: notebook_bytes(view), name, key=f"notebook-{view.page}{slot}",
             help="A Jupyter notebook that recomputes this view with bert_core: the same model, text and "
                  "settings, the same figures and numbers. Its first cell installs bert_core where it is missing.")


def download(label: str, data, name: str, **kwargs) -> None:
    """A notebook's download button: `data` builds the .ipynb only when clicked; `bert-explorer-<name>.ipynb`."""
    st.download_button(label, data, file_name=f"bert-explorer-{re.sub('[^a-z0-9]+', '-', name)}.ipynb",
                       mime="application/x-ipynb+json", on_click="ignore", icon=":material/download:", **kwargs)
