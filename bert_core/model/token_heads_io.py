"""Token-classification and question-answering checkpoints: recognise, load, add a new head, save for HF.

A folder saved here is one `AutoModelForTokenClassification` / `AutoModelForQuestionAnswering` loads
with no missing or unexpected keys, and such a folder trained elsewhere loads through `load_model`.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..errors import BertCoreError
from .checkpoint import model_from_state_dict
from .classifier_io import (
    MAX_LABELS,
    check_labels,
    encoder_for_new_head,
    folder_zip,
    labels_from_config,
    save_hf_folder,
)
from .config import BertConfig
from .loaded import LoadedModel
from .token_heads import ARCHITECTURES, DROPOUT_KEYS, BertForQuestionAnswering, BertForTokenClassification

HEAD_KEYS = {"token": ("classifier.weight", "classifier.bias"), "qa": ("qa_outputs.weight", "qa_outputs.bias")}


def token_head_kind(raw_config: dict, state: dict) -> str | None:
    """"qa", "token", or None: which per-token head a checkpoint has (config's architectures, then its keys)."""
    archs = raw_config.get("architectures") or []
    if "qa_outputs.weight" in state and (not archs or any(a.endswith("ForQuestionAnswering") for a in archs)):
        return "qa"
    if "classifier.weight" in state and any(a.endswith("ForTokenClassification") for a in archs):
        return "token"
    return None


def token_model_from_state_dict(config: BertConfig, raw_config: dict, state: dict, kind: str,
                                name: str = "") -> tuple[BertForTokenClassification | BertForQuestionAnswering,
                                                          list[str]]:
    """Our tagging / QA model from a checkpoint's tensors: the head by its HF names, the encoder key by key."""
    state = dict(state)
    head = {}
    for k in HEAD_KEYS[kind]:
        if k not in state:
            raise BertCoreError(f"{name}: a {ARCHITECTURES[kind][config.model_type]} checkpoint needs {k}")
        head[k.split(".", 1)[1]] = state.pop(k)
    w = head["weight"]
    if w.dim() != 2 or w.shape[1] != config.hidden_size:
        raise BertCoreError(f"{name}: the head's weight has shape {tuple(w.shape)}; expected (outputs, "
                            f"{config.hidden_size})")
    base, _ = model_from_state_dict(config, state, name)  # asserts every encoder key and shape
    base.bert.pooler = None  # transformers builds these models without a pooler (and ignores one)
    dropout = raw_config.get(DROPOUT_KEYS.get((config.model_type, kind), ""))
    if kind == "token":
        if not 1 <= w.shape[0] <= MAX_LABELS:
            raise BertCoreError(f"{name}: {w.shape[0]} labels; at most {MAX_LABELS}")
        labels = labels_from_config(raw_config, w.shape[0], name)
        model = BertForTokenClassification(config, labels, bert=base.bert, dropout=dropout)
        layer = model.classifier
        notes = [f"A token classifier (tagger) with {len(labels)} labels ({', '.join(labels[:6])}"
                 f"{', ...' if len(labels) > 6 else ''}): one label per token; no MLM or NSP head."]
    else:
        if w.shape[0] != 2:
            raise BertCoreError(f"{name}: qa_outputs must have 2 outputs (start, end), not {w.shape[0]}")
        model = BertForQuestionAnswering(config, bert=base.bert, dropout=dropout)
        layer = model.qa_outputs
        notes = ["A question-answering model: a start and an end score per token pick the answer span; "
                 "no MLM or NSP head."]
    with torch.no_grad():
        for p in ("weight", "bias"):
            if head[p].shape != getattr(layer, p).shape:
                raise BertCoreError(f"{name}: the head's {p} has shape {tuple(head[p].shape)}")
            getattr(layer, p).copy_(head[p].float())
    model.eval()
    return model, notes


def new_token_model(base: LoadedModel, kind: str, labels: list[str] | None = None, *, seed: int = 0,
                    copy_encoder: bool = True) -> BertForTokenClassification | BertForQuestionAnswering:
    """A tagging (`kind="token"`, with `labels`) or QA model on `base`'s encoder, with a new head.

    copy_encoder=False shares the base's embedding and layer modules (for training the head only, the
    encoder frozen and never put in train mode); True gives the new model its own copy.
    """
    if kind not in HEAD_KEYS:
        raise BertCoreError(f"kind must be 'token' or 'qa', not {kind!r}")
    src = base.model.bert
    with torch.random.fork_rng():  # the new head's draw depends on our seed only
        torch.manual_seed(seed)
        bert = encoder_for_new_head(src, copy_encoder)
        bert.pooler = None  # transformers builds these models without a pooler
        if kind == "token":
            check_labels(list(labels or []))
            return BertForTokenClassification(bert.config, list(labels), bert=bert).eval()
        return BertForQuestionAnswering(bert.config, bert=bert).eval()


def token_model_config(model) -> dict:
    """config.json for transformers: the family's fields, the architecture, and the label names (tagging)."""
    family = model.config.model_type
    kind = "token" if isinstance(model, BertForTokenClassification) else "qa"
    cfg = {**model.config.to_hf_dict(), "model_type": family, "architectures": [ARCHITECTURES[kind][family]]}
    if kind == "token":
        cfg["id2label"] = {str(i): lab for i, lab in enumerate(model.labels)}
        cfg["label2id"] = {lab: i for i, lab in enumerate(model.labels)}
    if model.head_dropout is not None and (family, kind) in DROPOUT_KEYS:
        cfg[DROPOUT_KEYS[family, kind]] = model.head_dropout
    return cfg


def save_token_model(m: LoadedModel, out_dir: str | Path, extra: dict | None = None) -> Path:
    """Write config.json, model.safetensors (HF's names) and the tokenizer of a tagging or QA model.

    `extra` (e.g. a training report) goes to training_report.json beside them.
    """
    model = m.model
    if not isinstance(model, BertForTokenClassification | BertForQuestionAnswering):
        raise BertCoreError(f"{m.name} is not a token-classification or question-answering model")
    return save_hf_folder(m, token_model_config(model), out_dir, extra)

def token_model_zip(m: LoadedModel, extra: dict | None = None) -> bytes:
    """The saved folder as a zip, in memory (for a download button)."""
    return folder_zip(save_token_model, m, extra)
