"""Tiny random BERT, RoBERTa, DistilBERT, ALBERT and ELECTRA checkpoints, tokenizers made here, saved as HF does."""

from __future__ import annotations

import json

CORPUS = [
    "The cat sat on the mat, playing.",
    "She sent the letter to her mother.",
    "Paris is a city in France, and the cafe was open.",
    "He went to the store and bought milk.",
    "They were happy; it was a sunny day!",
    "I like dogs, you like cats, we like birds.",
] * 20
SIZES = dict(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=37,
             max_position_embeddings=40)


def hf_tokenizer(family: str, workdir):
    """Train the family's tokenizer on CORPUS with `tokenizers` and wrap it in the HF class."""
    import transformers as T
    from tokenizers import ByteLevelBPETokenizer, SentencePieceUnigramTokenizer

    if family == "roberta":
        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(CORPUS, vocab_size=320, min_frequency=1,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        vocab = json.loads(bpe._tokenizer.to_str())["model"]["vocab"]
        merges = json.loads(bpe._tokenizer.to_str())["model"]["merges"]
        merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]
        return T.RobertaTokenizer(vocab=vocab, merges=merges)
    if family == "albert":
        uni = SentencePieceUnigramTokenizer()
        uni.train_from_iterator(CORPUS, vocab_size=150, unk_token="<unk>",
                                special_tokens=["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"])
        vocab = [tuple(x) for x in json.loads(uni._tokenizer.to_str())["model"]["vocab"]]
        return T.AlbertTokenizer(vocab=vocab)
    from support.checkpoints import VOCAB

    (workdir / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    cls = {"distilbert": T.DistilBertTokenizer, "electra": T.ElectraTokenizer}.get(family, T.BertTokenizer)
    return cls(vocab=str(workdir / "vocab.txt"))


def write_family_checkpoint(path, family: str, kind: str = "mlm", seed: int = 0, **overrides):
    """Save a random tiny HF model of `family` (`mlm` head, `base` encoder or `cls`, its
    XForSequenceClassification; ELECTRA also `disc`, ElectraForPreTraining) and its tokenizer to `path`.
    `overrides` go into the config first."""
    import torch
    import transformers as T

    path.mkdir(parents=True, exist_ok=True)
    tok = hf_tokenizer(family, path)
    V = len(tok) + 3  # a few unused rows, as real checkpoints often have
    torch.manual_seed(seed)
    kw = dict(SIZES, vocab_size=V, attn_implementation="eager")
    if family == "roberta":
        kw.update(pad_token_id=tok.pad_token_id, type_vocab_size=1, layer_norm_eps=1e-5)
        cfg = T.RobertaConfig(**kw)
        cls = {"mlm": T.RobertaForMaskedLM, "base": T.RobertaModel, "cls": T.RobertaForSequenceClassification}[kind]
    elif family == "distilbert":
        cfg = T.DistilBertConfig(vocab_size=V, dim=32, n_layers=3, n_heads=4, hidden_dim=37,
                                 max_position_embeddings=40, attn_implementation="eager")
        cls = {"mlm": T.DistilBertForMaskedLM, "base": T.DistilBertModel,
               "cls": T.DistilBertForSequenceClassification}[kind]
    elif family == "bert":
        cfg = T.BertConfig(**kw)
        cls = {"mlm": T.BertForMaskedLM, "base": T.BertModel, "cls": T.BertForSequenceClassification,
               "pretraining": T.BertForPreTraining}[kind]
    elif family == "electra":  # E = 16 < H: the embeddings are projected, as in ELECTRA-small
        cfg = T.ElectraConfig(**kw, embedding_size=16)
        cls = {"mlm": T.ElectraForMaskedLM, "base": T.ElectraModel, "cls": T.ElectraForSequenceClassification,
               "disc": T.ElectraForPreTraining}[kind]
    elif family == "albert":
        cfg = T.AlbertConfig(**kw, embedding_size=16, pad_token_id=tok.pad_token_id)
        cls = {"mlm": T.AlbertForMaskedLM, "base": T.AlbertModel, "cls": T.AlbertForSequenceClassification}[kind]
    else:
        raise ValueError(f"no tiny checkpoint for family {family!r}")
    for k, v in overrides.items():
        setattr(cfg, k, v)
    model = cls(cfg).eval()
    # Random init leaves LayerNorms at identity and biases at zero: perturb them so a LayerNorm
    # or bias copied to the wrong place would show.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() or name.endswith("bias") or "classifier" in name:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return model


def edited_copy(src, dst, drop=(), **config):
    """Copy the checkpoint folder `src` to `dst` with `config` written into its config.json and `drop` files gone."""
    import shutil

    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg.update(config)
    (dst / "config.json").write_text(json.dumps(cfg))
    for f in drop:
        (dst / f).unlink()
    return dst
