"""BERT as a sentence classifier: build a head on a base model, load and save HF checkpoints.

The layouts are Hugging Face's `BertForSequenceClassification` and its RoBERTa, DistilBERT and ALBERT
siblings (see `classifiers.py`: each is BERT's class with the lines that differ), so a folder this module
writes is one `AutoModelForSequenceClassification.from_pretrained` reads, and a classifier
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

from ..errors import BertCoreError
from .checkpoint import IGNORED_HEAD_PREFIXES, map_key, model_from_state_dict
from .classifiers import SEQUENCE_CLASSIFIERS, BertForSequenceClassification
from .config import BertConfig
from .encoder import BertModel
from .layers import BertPooler
from .loaded import LoadedModel

MAX_LABELS = 50
MAX_LABEL_CHARS = 60
POOLER_NOTE = ("This base model has no pooler (its checkpoint has no pooler weights: pretrained without "
               "next-sentence prediction, or saved with the MLM head only), so the classifier reads the [CLS] "
               "vector through a NEW pooler, tanh(W h_[CLS] + b), initialised at random and trained with the "
               "classifier (as transformers does).")
OWN_POOLER_NOTE = {
    "distilbert": "DistilBERT has no pooler: as transformers' DistilBertForSequenceClassification, the classifier "
                  "reads the first token's vector through a NEW layer, ReLU(W h_[CLS] + b) (pre_classifier), "
                  "initialised at random and trained with the classifier.",
    "roberta": "RoBERTa's encoder has no pooler: as transformers' RobertaForSequenceClassification, the head "
               "reads the <s> vector through its own NEW layer, tanh(W h_<s> + b) (classifier.dense), "
               "initialised at random and trained with the classifier.",
}
# The classification head's layers in each family's checkpoint, input side first (HF's names, and ours).
HEAD_LAYERS = {
    "bert": ("classifier",),
    "albert": ("classifier",),
    "distilbert": ("pre_classifier", "classifier"),
    "roberta": ("classifier.dense", "classifier.out_proj"),
}
# config.json's name for the head's dropout, per family (HF's configs differ).
DROPOUT_KEYS = {"bert": "classifier_dropout", "roberta": "classifier_dropout", "albert": "classifier_dropout_prob",
                "distilbert": "seq_classif_dropout"}


def is_sequence_classifier(raw_config: dict, state: dict) -> bool:
    """A checkpoint with a sentence-level classifier head (not per token, not multiple choice)."""
    if not any(k.startswith(("classifier.", "pre_classifier.")) for k in state):
        return False
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
    labels = [by_id[i] for i in range(num_labels)]
    if any(not lab.strip() or len(lab) > MAX_LABEL_CHARS for lab in labels):
        raise BertCoreError(f"{name}: id2label in config.json has an empty class name or one longer than "
                            f"{MAX_LABEL_CHARS} characters")
    return labels


def classifier_from_state_dict(config: BertConfig, raw_config: dict, state: dict,
                               name: str = "") -> tuple[BertForSequenceClassification, list[str]]:
    """Our classifier from a checkpoint's tensors: the head by its HF names, then the encoder key by key."""
    family = config.model_type
    layers = HEAD_LAYERS[family]
    state = dict(state)
    head = {}
    for layer in layers:
        for p in ("weight", "bias"):
            if f"{layer}.{p}" not in state:
                raise BertCoreError(f"{name}: a {family} sentence classifier's head is {' -> '.join(layers)}, "
                                    f"but the checkpoint has no {layer}.{p}")
            head[f"{layer}.{p}"] = state.pop(f"{layer}.{p}")
    stray = sorted(k for k in state if k.startswith(IGNORED_HEAD_PREFIXES))
    if stray:
        raise BertCoreError(f"{name}: {stray[0]} is not part of a {family} sentence classifier's head "
                            f"({' -> '.join(layers)})")
    w = head[f"{layers[-1]}.weight"]
    if w.dim() != 2 or not 1 <= w.shape[0] <= MAX_LABELS:
        raise BertCoreError(f"{name}: the classifier's weight has shape {tuple(w.shape)}; expected "
                            f"(classes, {config.hidden_size}) with 1 to {MAX_LABELS} classes")
    labels = labels_from_config(raw_config, w.shape[0], name)
    base, _ = model_from_state_dict(config, state, name)  # asserts every encoder key and shape
    cls = SEQUENCE_CLASSIFIERS[family]
    if cls.encoder_pooler and base.bert.pooler is None:
        raise BertCoreError(f"{name}: a sequence classifier needs the pooler's weights "
                            f"({map_key(family, 'bert.pooler.dense.weight', to='theirs')})")
    if not cls.encoder_pooler:
        base.bert.pooler = None  # transformers ignores a RoBERTa classifier's encoder pooler too
    model = cls(config, labels, raw_config.get(DROPOUT_KEYS[family]), bert=base.bert)
    ours = model.state_dict()
    with torch.no_grad():
        for k, v in head.items():
            if v.shape != ours[k].shape:
                raise BertCoreError(f"{name}: {k} has shape {tuple(v.shape)}; a {family} classifier with "
                                    f"hidden size {config.hidden_size} and {len(labels)} classes needs "
                                    f"{tuple(ours[k].shape)}")
            ours[k].copy_(v.float())
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
                   dropout: float | None = None,
                   share_words: bool = False) -> tuple[BertForSequenceClassification, list[str]]:
    """A classifier for `labels` on `base`'s encoder, with a new randomly initialised head.

    copy_encoder=False shares the base's embedding and layer modules (no copy: for training the head
    only, with the encoder frozen and never put in train mode); True gives the classifier its own copy,
    but for the word-embedding matrix when `share_words` (the base's tensor, frozen: never copied).
    """
    check_labels(labels)
    src = base.model.bert
    cls = SEQUENCE_CLASSIFIERS[src.config.model_type]
    notes = []
    if isinstance(base.model, BertForSequenceClassification):
        notes.append(f"{base.name} was already a classifier ({', '.join(base.model.labels[:4])}...): "
                     "its encoder" + (" and pooler are" if cls.encoder_pooler else " is")
                     + " kept, its classifier head is replaced by a new one.")
    with torch.random.fork_rng():  # a new head from our seed, without moving anyone's global RNG
        torch.manual_seed(seed)
        bert = encoder_for_new_head(src, copy_encoder, share_words)
        if not cls.encoder_pooler:
            bert.pooler = None  # RoBERTa and DistilBERT classifiers pool in their head (a new layer)
            notes.append(OWN_POOLER_NOTE[src.config.model_type])
        elif bert.pooler is None:
            bert.pooler = BertPooler(src.config)
            torch.nn.init.normal_(bert.pooler.dense.weight, std=src.config.initializer_range)
            torch.nn.init.zeros_(bert.pooler.dense.bias)
            notes.append(POOLER_NOTE)
        model = cls(src.config, labels, dropout, bert=bert)
    return model, notes


def encoder_for_new_head(src: BertModel, copy_encoder: bool, share_words: bool = False) -> BertModel:
    """`src` for a new head: a trainable deep copy, or (copy_encoder=False) a shell holding `src`'s own modules.

    The shell shares the embeddings, layers and pooler (no copy: for training a head on a frozen encoder
    that stays in eval mode); the caller may replace its pooler. share_words: the copy's word-embedding
    matrix is `src`'s tensor, frozen (deepcopy's memo maps it to a no-grad view instead of copying it).
    """
    if copy_encoder:
        words = src.embeddings.word_embeddings.weight
        frozen = torch.nn.Parameter(words.detach(), requires_grad=False)
        bert = copy.deepcopy(src, memo={id(words): frozen} if share_words else None)
        for p in bert.parameters():
            p.requires_grad_(p is not frozen)
        return bert
    with torch.device("meta"):  # an empty shell: its modules are the base's own, not copies
        bert = BertModel(src.config, add_pooling_layer=False)
    bert.embeddings, bert.encoder, bert.pooler = src.embeddings, src.encoder, src.pooler
    return bert


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


def classifier_config(model: BertForSequenceClassification) -> dict:
    """config.json for HF: the family's fields, the architecture and the label names both ways."""
    family = model.config.model_type
    cfg = {**model.config.to_hf_dict(), "model_type": family, "architectures": [type(model).__name__],
           "id2label": {str(i): lab for i, lab in enumerate(model.labels)},
           "label2id": {lab: i for i, lab in enumerate(model.labels)},
           "problem_type": "single_label_classification"}
    if model.classifier_dropout is not None:
        cfg[DROPOUT_KEYS[family]] = model.classifier_dropout
    return cfg


def save_classifier(m: LoadedModel, out_dir: str | Path, extra: dict | None = None) -> Path:
    """Write config.json, model.safetensors and the tokenizer: a folder HF's AutoModelFor... loads.

    `extra` (e.g. a training report) goes to training_report.json beside them.
    """
    model = classifier_of(m)
    if model.pooling != "cls":
        raise BertCoreError("this classifier reads the mean of the tokens, and transformers' "
                            f"{type(model).__name__} reads the [CLS] vector: it cannot be saved in that layout. "
                            "Fine-tune with [CLS] pooling to download a transformers classifier.")
    return save_hf_folder(m, classifier_config(model), out_dir, extra)


def save_hf_folder(m: LoadedModel, config: dict, out_dir: str | Path, extra: dict | None = None) -> Path:
    """Write `config` as config.json, `m.model`'s weights as model.safetensors, `m`'s tokenizer and `extra` (if
    any) as training_report.json into `out_dir`: the folder layout every head's save shares."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config, indent=2))
    # The encoder under the family's key names (pretrained.KEY_MAPS); the head's names are already HF's.
    family = m.model.config.model_type
    sd = {map_key(family, k, to="theirs") if k.startswith("bert.") else k: v.detach().contiguous().cpu()
          for k, v in m.model.state_dict().items()}
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    m.tokenizer.save(out)
    if extra is not None:
        (out / "training_report.json").write_text(json.dumps(extra, indent=2) + "\n")
    return out


def classifier_zip(m: LoadedModel, extra: dict | None = None) -> bytes:
    """The saved folder as a zip, in memory (for a download button)."""
    return folder_zip(save_classifier, m, extra)


def folder_zip(save, m: LoadedModel, extra: dict | None = None) -> bytes:
    """What `save(m, folder, extra)` writes, as a zip in memory."""
    with tempfile.TemporaryDirectory() as d:
        save(m, d, extra)
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
    "is_sequence_classifier",
    "new_classifier",
    "save_classifier",
]
