"""Random transformers tagging and QA models of every family, saved with their tokenizer, to load as heads."""

from __future__ import annotations

import torch

from support.checkpoints import write_tiny_checkpoint
from support.family import write_family_checkpoint

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "<b>I-LOC</b>"]  # one label holds markup: it must reach pages escaped


def hf_head_folder(tmp_path, family: str, kind: str):
    """A random transformers tagging / QA model of `family` (biases perturbed), saved with its tokenizer."""
    import transformers as T

    base = tmp_path / "base"
    if family == "bert":
        write_tiny_checkpoint(base, "base")
    else:
        write_family_checkpoint(base, family, "base")
    cfg = T.AutoConfig.from_pretrained(base)
    cls = T.AutoModelForTokenClassification if kind == "token" else T.AutoModelForQuestionAnswering
    if kind == "token":
        cfg.num_labels = len(LABELS)
        cfg.id2label = dict(enumerate(LABELS))
        cfg.label2id = {lab: i for i, lab in enumerate(LABELS)}
    torch.manual_seed(1)
    model = cls.from_config(cfg, attn_implementation="eager").eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() or name.endswith("bias") or "classifier" in name or "qa_outputs" in name:
                p.add_(torch.randn_like(p) * 0.1)
    out = tmp_path / kind
    model.save_pretrained(out)
    T.AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return out, model, T.AutoTokenizer.from_pretrained(out)
