"""BERT as a sentence classifier: build a head on a base model, load and save HF checkpoints, classify.

The layout is Hugging Face's `BertForSequenceClassification` (see `model.py`), so a folder this
module writes is one `AutoModelForSequenceClassification.from_pretrained` reads, and a classifier
fine-tuned elsewhere loads here through `bert_core.load_model(folder)`:

    m = bert_core.load_model("my-classifier")      # config.json says id2label
    bert_core.classify(m, "a small domesticated cat")
    # [("animal", 0.91), ("artifact", 0.02), ...]   in label-id order, softmax of the logits
"""

from __future__ import annotations

import copy
import io
import json
import tempfile
import zipfile
from pathlib import Path

import torch
from safetensors.torch import save_file

from .errors import BertCoreError
from .model import BertConfig, BertForSequenceClassification, BertModel, BertPooler
from .pretrained import LoadedModel, model_from_state_dict

MAX_LABELS = 50
MAX_LABEL_CHARS = 60
POOLER_NOTE = ("This base model has no pooler (it was pretrained without next-sentence prediction), so the "
               "classifier reads the [CLS] vector through a NEW pooler, tanh(W h_[CLS] + b), initialised "
               "at random and trained with the classifier (as transformers does).")


def is_sequence_classifier(raw_config: dict, state: dict) -> bool:
    """A checkpoint with a `classifier` head that sits on the pooled vector (not per token, not multiple choice)."""
    if "classifier.weight" not in state or "pre_classifier.weight" in state:
        return False  # DistilBERT's pre_classifier needs that family first (not supported yet)
    archs = raw_config.get("architectures") or []
    return not archs or any(a.endswith("ForSequenceClassification") for a in archs)


def labels_from_config(raw_config: dict, num_labels: int, name: str = "") -> list[str]:
    """Class names from `id2label` (keys "0".."C-1"), or transformers' defaults LABEL_0..LABEL_{C-1}."""
    id2label = raw_config.get("id2label")
    if not id2label:
        return [f"LABEL_{i}" for i in range(num_labels)]
    try:
        by_id = {int(k): str(v) for k, v in id2label.items()}
    except (AttributeError, TypeError, ValueError) as e:
        raise BertCoreError(f"{name}: id2label in config.json must map class numbers to names") from e
    if sorted(by_id) != list(range(num_labels)):
        raise BertCoreError(
            f"{name}: id2label names classes {sorted(by_id)[:5]}..., but the classifier has {num_labels} outputs"
        )
    return [by_id[i] for i in range(num_labels)]


def classifier_from_state_dict(config: BertConfig, raw_config: dict, state: dict,
                               name: str = "") -> tuple[BertForSequenceClassification, list[str]]:
    """Our classifier from a checkpoint's tensors: the encoder key by key (pretrained.py), then the head."""
    state = dict(state)
    w, b = state.pop("classifier.weight"), state.pop("classifier.bias", None)
    if w.dim() != 2 or w.shape[1] != config.hidden_size or b is None or b.shape != w.shape[:1]:
        raise BertCoreError(f"{name}: the classifier's weights have unexpected shapes {tuple(w.shape)}")
    if not 1 <= w.shape[0] <= MAX_LABELS:
        raise BertCoreError(f"{name}: {w.shape[0]} classes; at most {MAX_LABELS} are supported")
    labels = labels_from_config(raw_config, w.shape[0], name)
    base, _ = model_from_state_dict(config, state, name)  # asserts every encoder key and shape
    if base.bert.pooler is None:
        raise BertCoreError(f"{name}: a sequence classifier needs the pooler's weights (bert.pooler.dense)")
    model = BertForSequenceClassification(config, labels, raw_config.get("classifier_dropout"), bert=base.bert)
    with torch.no_grad():
        model.classifier.weight.copy_(w.float())
        model.classifier.bias.copy_(b.float())
    model.eval()
    shown = ", ".join(labels[:6]) + (", ..." if len(labels) > 6 else "")
    notes = [f"A sentence classifier with {len(labels)} classes ({shown}); it has no MLM or NSP head, so "
             "masked-word predictions are unavailable. The Fine-tuning page classifies with it."]
    if len(labels) == 1:
        notes.append("It has a single output (a regression head): class probabilities mean nothing for it.")
    if raw_config.get("problem_type") == "multi_label_classification":
        notes.append("It was trained for multi-label classification (a sigmoid per class); "
                     "bert_core.classify reports the softmax over classes.")
    return model, notes


def new_classifier(base: LoadedModel, labels: list[str], *, seed: int = 0, copy_encoder: bool = True,
                   dropout: float | None = None) -> tuple[BertForSequenceClassification, list[str]]:
    """A classifier for `labels` on `base`'s encoder, with a new randomly initialised head.

    copy_encoder=False shares the base's embedding and layer modules (no copy: for training the head
    only, with the encoder frozen and never put in train mode); True gives the classifier its own copy.
    """
    check_labels(labels)
    src = base.model.bert
    notes = []
    if isinstance(base.model, BertForSequenceClassification):
        notes.append(f"{base.name} was already a classifier ({', '.join(base.model.labels[:4])}...): "
                     "its encoder and pooler are kept, its classifier head is replaced by a new one.")
    with torch.random.fork_rng():  # a new head from our seed, without moving anyone's global RNG
        torch.manual_seed(seed)
        if copy_encoder:
            bert = copy.deepcopy(src)
            for p in bert.parameters():
                p.requires_grad_(True)
        else:
            with torch.device("meta"):  # an empty shell: its modules are the base's own, not copies
                bert = BertModel(src.config, add_pooling_layer=False)
            bert.embeddings, bert.encoder, bert.pooler = src.embeddings, src.encoder, src.pooler
        if bert.pooler is None:
            bert.pooler = BertPooler(src.config)
            torch.nn.init.normal_(bert.pooler.dense.weight, std=src.config.initializer_range)
            torch.nn.init.zeros_(bert.pooler.dense.bias)
            notes.append(POOLER_NOTE)
        model = BertForSequenceClassification(src.config, labels, dropout, bert=bert)
    return model, notes


def check_labels(labels: list[str]) -> None:
    """2..MAX_LABELS distinct, non-empty, short names (they become id2label in config.json)."""
    if len(labels) < 2:
        raise BertCoreError(f"a classifier needs at least two classes, got {len(labels)}")
    if len(labels) > MAX_LABELS:
        raise BertCoreError(f"at most {MAX_LABELS} classes, got {len(labels)}")
    if len(set(labels)) != len(labels):
        raise BertCoreError("class names must be distinct")
    for lab in labels:
        if not isinstance(lab, str) or not lab.strip() or len(lab) > MAX_LABEL_CHARS:
            raise BertCoreError(f"class names must be non-empty text of at most {MAX_LABEL_CHARS} characters")


def classifier_of(m: LoadedModel) -> BertForSequenceClassification:
    """`m`'s classifier, or a clear message when `m` is not one."""
    if not isinstance(m.model, BertForSequenceClassification):
        raise BertCoreError(f"{m.name} is not a sentence classifier: fine-tune it first (Fine-tuning page)")
    return m.model


@torch.no_grad()
def classify(m: LoadedModel, text: str, text_pair: str | None = None) -> list[tuple[str, float]]:
    """[(label, probability)] in label-id order: softmax of the classifier's logits (dropout off).

    p(c | x) = exp(z_c) / sum_c' exp(z_c'),  z = W_c tanh(W_p h_[CLS] + b_p) + b_c
    """
    model = classifier_of(m)
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    ids = torch.from_numpy(enc.input_ids)[None]  # (1, T)
    types = torch.from_numpy(enc.token_type_ids)[None]
    was_training = model.training
    model.eval()
    try:
        probs = model.logits(ids, types).softmax(-1)[0]  # (C,)
    finally:
        model.train(was_training)
    return list(zip(model.labels, probs.tolist()))


def classifier_config(model: BertForSequenceClassification) -> dict:
    """config.json for HF: the BERT fields, the architecture and the label names both ways."""
    cfg = {**model.config.to_dict(), "model_type": "bert", "architectures": ["BertForSequenceClassification"],
           "id2label": {str(i): lab for i, lab in enumerate(model.labels)},
           "label2id": {lab: i for i, lab in enumerate(model.labels)},
           "problem_type": "single_label_classification"}
    if model.classifier_dropout is not None:
        cfg["classifier_dropout"] = model.classifier_dropout
    return cfg


def save_classifier(m: LoadedModel, out_dir: str | Path, extra: dict | None = None) -> Path:
    """Write config.json, model.safetensors and the tokenizer: a folder HF's AutoModelFor... loads.

    `extra` (e.g. a training report) goes to training_report.json beside them.
    """
    model = classifier_of(m)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(classifier_config(model), indent=2))
    sd = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    m.tokenizer.save(out)
    if extra is not None:
        (out / "training_report.json").write_text(json.dumps(extra, indent=2) + "\n")
    return out


def classifier_zip(m: LoadedModel, extra: dict | None = None) -> bytes:
    """The saved folder as a zip, in memory (for a download button)."""
    with tempfile.TemporaryDirectory() as d:
        save_classifier(m, d, extra)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(Path(d).iterdir()):
                z.write(f, f.name)
    return buf.getvalue()


__all__ = [
    "MAX_LABELS",
    "classifier_config",
    "classifier_from_state_dict",
    "classifier_of",
    "classifier_zip",
    "classify",
    "is_sequence_classifier",
    "new_classifier",
    "save_classifier",
]
