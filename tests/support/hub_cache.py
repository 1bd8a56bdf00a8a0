"""A bert-base-sized checkpoint placed in a Hugging Face cache under a hub id, as a download would leave it.

For tests and benchmarks on a machine with no hub: HF_HOME=<home> then finds `repo_id` in
<home>/hub/models--<repo_id>/snapshots/<rev>/, with refs/main naming <rev>. The weights are random
(BertForPreTraining, 12 layers x 768, 12 heads: bert-base's shapes, 110M parameters, safetensors); the vocabulary
is bert-base-uncased's own 30,522 pieces, from the bundled MiniLM (which shares it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

REVISION = "0" * 39 + "1"  # a commit hash's form; the cache layout only needs refs/main to name the folder


def hub_cache_checkpoint(home: Path, repo_id: str = "bert-base-uncased", seed: int = 0, **config) -> Path:
    """Put a random bert-base-sized checkpoint into the HF cache at `home` under `repo_id`; its snapshot folder.

    Kept when it is already there (writing 440 MB takes a while): a `done` file marks a complete one.
    `config` overrides BertConfig's sizes (a smaller model for quick tests).
    """
    import torch
    from transformers import BertConfig, BertForPreTraining

    import bert_core

    repo = Path(home) / "hub" / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / REVISION
    marker = repo / f"done-{seed}-{sorted(config.items())}".replace(" ", "")
    if marker.is_file() and (snap / "model.safetensors").is_file():
        return snap
    shutil.rmtree(repo, ignore_errors=True)
    snap.mkdir(parents=True)
    torch.manual_seed(seed)
    cfg = BertConfig(**config)  # defaults: bert-base-uncased's config
    BertForPreTraining(cfg).save_pretrained(snap)  # safetensors: transformers' default
    for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json"):  # bert-base-uncased's, lower-casing
        shutil.copy(bert_core.MINILM_DIR / f, snap / f)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    marker.write_text("")
    return snap
