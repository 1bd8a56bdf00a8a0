"""Tiny random Hugging Face BERTs with a WordPiece tokenizer, written to a folder for the loader to read."""

from __future__ import annotations

# A small vocabulary with real words, `##` pieces, accents and punctuation, so tokenization
# tests see every case; the parity models use it too.
VOCAB = list(dict.fromkeys(
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    + list(".,!?;:'\"()-")
    + list("abcdefghijklmnopqrstuvwxyz")
    + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    + "the a cat dog sat on mat was is it play ##ing ##ed ##s un ##aff ##able cafe paris".split()
    + "he she went to store bought milk i you we they and of in".split()
))


def save_perturbed(model, path, vocab=None):
    """Perturb a random HF model's LayerNorms and biases (init leaves them at identity / zero, where a tensor
    copied to the wrong place would not show), save it and a WordPiece tokenizer over `vocab` to `path`."""
    import torch

    from bert_core.model.tokenization import WordPieceTokenizer

    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(path)
    (path / "vocab.txt").write_text("\n".join(VOCAB if vocab is None else vocab) + "\n")
    WordPieceTokenizer.from_dir(path).save(path)
    return model


def write_tiny_checkpoint(path, kind="pretraining", seed=0, vocab=None, **config_overrides):
    """Save a random tiny HF BERT (`pretraining`, `mlm` or `base`) plus a tokenizer to `path`."""
    vocab = VOCAB if vocab is None else vocab
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertForPreTraining, BertModel

    from bert_core.model.tokenization import WordPieceTokenizer

    torch.manual_seed(seed)
    kw = dict(vocab_size=len(vocab) + 3, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=37, max_position_embeddings=64, attn_implementation="eager")
    kw.update(config_overrides)
    cfg = BertConfig(**kw)
    cls = {"pretraining": BertForPreTraining, "mlm": BertForMaskedLM, "base": BertModel}[kind]
    model = cls(cfg).eval()
    # Random init leaves LayerNorms at identity and biases at zero: perturb them so the test
    # would notice a LayerNorm or bias copied to the wrong place.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(path)
    # The tokenizer is built from vocab.txt alone (as old hub checkpoints ship it), then saved
    # with tokenizer.json too; HF's BertTokenizerFast reads the result (tests/model/test_tokenization.py).
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    WordPieceTokenizer.from_dir(path).save(path)
    return model


def write_base_sized_checkpoint(path):
    """A random bert-base-sized BertForMaskedLM (12 x 768) with a 30,522-entry vocabulary, saved to `path`."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from bert_core.model.tokenization import WordPieceTokenizer

    words = [f"w{i}" for i in range(30522 - 5)]
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    WordPieceTokenizer.from_dir(path).save(path)
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig()).save_pretrained(path)
