"""Token classification: the Brown POS task and its build, CoNLL files, the baseline, the tagging loop and its export.

One step of `TokenFineTuner` is checked against a plain loop on transformers' BertForTokenClassification with
the same weights and batch (fp32, 1e-5); the exported folder loads in transformers with every key in place.
"""

from __future__ import annotations

import copy
import io
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from support.plain_loop import assert_same_weights, clip_and_adamw_step, hf_twin
from support.toy_tasks import tagging_conll as toy_conll

import bert_core
from bert_core.errors import BertCoreError
from bert_core.finetune.finetuning import FineTuneConfig
from bert_core.finetune.tagging import (
    IGNORE,
    UNIVERSAL_TAGS,
    builtin_pos_task,
    most_frequent_tag_baseline,
    parse_conll,
    per_label_accuracy,
    task_from_conll,
)
from bert_core.finetune.token_finetuning import TokenFineTuner, encode_words
from bert_core.inspect.token_tasks import first_pieces, split_words, tag_words
from bert_core.model.token_heads_io import save_token_model
from bert_core.runs.finetune_run import FineTuneSession
from bert_core.runs.status import FINISHED, PAUSED
from server.slots import SlotManager

ROOT = Path(__file__).resolve().parents[2]
ATOL = 1e-5
@pytest.fixture(scope="module")
def bases(head_bases):
    return head_bases


# --- the built-in task and its build ---------------------------------------------------------------


def _script(name: str):
    """A module of scripts/ (build_pos, build_corpus)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return __import__(name)
    finally:
        sys.path.pop(0)


@pytest.mark.parametrize("brown, universal", [
    ("nn", "NOUN"), ("np$-tl", "NOUN"), ("pp$", "DET"), ("pp$$", "PRON"), ("ppss", "PRON"), ("at", "DET"),
    ("in-hl", "ADP"), ("cs", "ADP"), ("to", "PRT"), ("rp", "PRT"), ("ppss+md", "PRT"), ("ex", "PRT"),
    ("ber*", "VERB"), ("*", "ADV"), ("fw-nn", "X"), ("fw-in+at-tl", "X"), ("od", "ADJ"), ("cd", "NUM"),
    ("``", "."), ("--", "."), ("wdt", "DET"), ("wrb", "ADV"), ("cc", "CONJ"), ("uh", "PRT"), ("md*", "VERB"),
])
def test_brown_tags_map_to_the_universal_tagset(brown, universal):
    assert _script("build_pos").universal_tag(brown) == universal


def test_an_unknown_brown_tag_is_refused_not_guessed():
    with pytest.raises(KeyError):
        _script("build_pos").universal_tag("zz")


def test_builtin_pos_task_has_a_fixed_split_of_held_out_sentences():
    from bert_core.train.corpus import load_pretraining_corpus

    task = builtin_pos_task()
    assert task.labels == UNIVERSAL_TAGS
    assert (len(task.train_words), len(task.valid_words)) == (12_000, 1_106)  # scripts/build_pos.py
    assert all(len(w) == len(t) and 3 <= len(w) <= 60 for w, t in zip(task.train_words, task.train_tags))
    assert all(len(w) == len(t) for w, t in zip(task.valid_words, task.valid_tags))
    assert not set(task.valid_texts) & set(task.train_texts)
    # Validation sentences are ones the pretraining corpus holds out: never read by the bundled models.
    detok = _script("build_corpus").detokenize
    _, train_docs, _, held_docs = load_pretraining_corpus(seed=0)
    held = {s for d in held_docs for s in d.sentences}
    trained = {s for d in train_docs for s in d.sentences}

    def brown_quotes(words):  # the build turned Brown's `` and '' into ": guess them back, opening first
        out, k = [], 0
        for w in words:
            out.append(("``", "''")[k % 2] if w == '"' else w)
            k += w == '"'
        return out

    texts = [detok(brown_quotes(ws)) for ws in task.valid_words]
    assert sum(t in held for t in texts) >= 0.96 * len(texts)  # the rest: a quote that closes a sentence's
    assert not any(t in trained for t in texts)                # text opened in the previous one
    counts = task.counts()
    assert counts["NOUN"][0] > counts["X"][0] > 0


# --- CoNLL files ---------------------------------------------------------------------------------


def test_conll_reads_tabs_spaces_blank_lines_and_docstart():
    text = "-DOCSTART- -X- O O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n\nPeter NNP B-NP B-PER\n"
    assert parse_conll(text * 5)[:2] == [(["EU", "rejects"], ["B-ORG", "O"]), (["Peter"], ["B-PER"])]


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("the\tO\ncat\n", "line 2 .* no label"),
    ("the\tDT\tO\ncat\tNN\n", "line 2 has 2 columns"),
    ("a\tO\n\n" * 12, "at least two labels"),
    ("a\tO\nb\tX\n", "1 sentence"),
    ("a\tO\x00\n", "NUL"),
])
def test_bad_conll_gets_a_clear_message(text, message):
    with pytest.raises(BertCoreError, match=message):
        parse_conll(text)


def test_a_label_with_html_is_kept_as_text():
    text = "\n\n".join(f"w{i}\t<b>X</b>\nv{i}\tO" for i in range(12))
    task = task_from_conll(text)
    assert "<b>X</b>" in task.labels and len(task.valid_words) + len(task.train_words) == 12


def test_conll_split_is_seeded_and_keeps_both_sides():
    a, b = task_from_conll(toy_conll(), seed=0), task_from_conll(toy_conll(), seed=0)
    c = task_from_conll(toy_conll(), seed=1)
    assert a == b and len(a.valid_words) == 2 and len(a.train_words) == 10
    assert a.labels == ("ANIMAL", "O", "PLACE")
    assert set(a.valid_words) != set(c.valid_words) or a.valid_words == c.valid_words  # a seed picks a split


# --- first pieces, the baseline ----------------------------------------------------------------------


def test_labels_go_on_the_first_piece_of_each_word(bases):
    tok = bases["mlm"].tokenizer
    rows, ys = encode_words(tok, [("the", "unaffable", "cat", ".")], [(0, 1, 2, 3)], 64)
    assert tok.convert_ids_to_tokens(rows[0]) == ["[CLS]", "the", "un", "##aff", "##able", "cat", ".", "[SEP]"]
    assert ys[0] == [IGNORE, 0, 1, IGNORE, IGNORE, 2, 3, IGNORE]
    rows, ys = encode_words(tok, [("the", "unaffable", "cat")], [(0, 1, 2)], 5)  # cut: "cat" loses its label
    assert ys[0] == [IGNORE, 0, 1, IGNORE, IGNORE] and len(rows[0]) == 5


def test_first_pieces_with_spaces_inside_byte_level_offsets():
    # a BPE token's offsets may start at the space before its word: the space belongs to the next word
    assert first_pieces([None, (0, 3), (3, 7), (7, 9), None], ["the", "cat", "s"]) == [None, 0, 1, 2, None]
    assert first_pieces([None, (0, 3), (4, 7), (7, 9), (10, 11), None], ["the", "catty", "s"]) == [
        None, 0, 1, None, 2, None]


def test_split_words_keeps_contractions_and_numbers_whole():
    assert [w for w, _, _ in split_words("Don't stop, Mr. Smith: 3.5 or 1,000!")] == [
        "Don't", "stop", ",", "Mr", ".", "Smith", ":", "3.5", "or", "1,000", "!"]
    text = "a  <b>cat</b>"
    assert all(text[a:b] == w for w, a, b in split_words(text))


def test_most_frequent_tag_baseline_by_hand():
    conll = "\n\n".join(["the\tD\ncat\tN", "the\tD\nrun\tV", "a\tD\nrun\tN", "a\tD\nrun\tN", "run\tV\nthe\tD",
                         "the\tD\ncat\tN", "a\tD\ncat\tN", "the\tD\ncat\tN", "a\tD\ncat\tN", "the\tD\nnew\tX"])
    task = task_from_conll(conll, valid_fraction=0.2, seed=0)
    base = most_frequent_tag_baseline(task)
    train = [w for s in task.train_words for w in s]
    # recompute: majority per word over the training side (ties: lower label id), else the majority tag
    from collections import Counter
    pairs = [(w, t) for ws, ts in zip(task.train_words, task.train_tags) for w, t in zip(ws, ts)]
    overall = Counter(t for _, t in pairs).most_common(1)[0][0]
    expect = []
    for ws, ts in zip(task.valid_words, task.valid_tags):
        for w, t in zip(ws, ts):
            c = Counter(tt for ww, tt in pairs if ww == w)
            p = min(c, key=lambda k: (-c[k], k)) if w in train else overall
            expect.append(p == t)
    assert base["accuracy"] == pytest.approx(np.mean(expect))
    assert base["confusion"].sum() == base["words"] == len(expect)
    acc = per_label_accuracy(base["confusion"])
    assert acc.shape == (len(task.labels),)


def test_pos_baseline_is_what_the_readme_says():
    base = most_frequent_tag_baseline(builtin_pos_task())
    assert round(100 * base["accuracy"], 1) == 93.5 and base["fallback"] == "NOUN"


# --- the loop ----------------------------------------------------------------------------------------


def _hf_params(hf):
    return dict(hf.named_parameters())


def test_one_step_equals_a_plain_loop_on_transformers_with_the_same_weights(bases, tmp_path):
    """Same batch (the loop's seeded order), labels on first pieces built word by word, CE over labelled pieces,
    clipping, AdamW: the loss and every weight after the step agree with transformers (fp32, 1e-5)."""
    from transformers import AutoModelForTokenClassification

    base = bases["nodrop"]
    task = task_from_conll(toy_conll(), seed=0)
    cfg = FineTuneConfig(lr=1e-3, epochs=1, batch_size=4, max_len=64, seed=3)
    ft = TokenFineTuner(base, task, cfg)
    hf = hf_twin(ft, AutoModelForTokenClassification, tmp_path / "before")
    # the plain batch: the loop's generator draws the epoch's order first
    g = torch.Generator().manual_seed(cfg.seed)
    idx = torch.randperm(len(task.train_words), generator=g)[: cfg.batch_size].tolist()
    tok = base.tokenizer
    rows, labels = [], []
    for j in idx:
        ids, ys = [tok.cls_token_id], [-100]
        for w, t in zip(task.train_words[j], task.train_tags[j]):
            pieces = tok.encode_plain(w)
            ids += pieces
            ys += [t] + [-100] * (len(pieces) - 1)
        rows.append(ids + [tok.sep_token_id])
        labels.append(ys + [-100])
    T = max(map(len, rows))
    input_ids = torch.tensor([r + [tok.pad_token_id] * (T - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in rows])
    y = torch.tensor([r + [-100] * (T - len(r)) for r in labels])
    out = hf(input_ids=input_ids, attention_mask=mask, token_type_ids=torch.zeros_like(input_ids), labels=y)
    out.loss.backward()
    clip_and_adamw_step(hf, cfg, ft.lr_at(0))
    step = ft.step()
    assert abs(step.loss - out.loss.item()) <= ATOL
    assert_same_weights(ft, hf, AutoModelForTokenClassification, tmp_path / "after", ATOL)


@pytest.mark.parametrize("freeze", [False, True])
def test_tagging_learns_the_toy_task_and_never_touches_the_base(bases, freeze):
    base = bases["mlm"]
    before = copy.deepcopy(base.model.state_dict())
    task = task_from_conll(toy_conll(), seed=0)
    ft = TokenFineTuner(base, task, FineTuneConfig(lr=3e-3 if not freeze else 3e-2, epochs=20, batch_size=4,
                                                   freeze_encoder=freeze, evals_per_epoch=1))
    ft.run()
    assert ft.evals[-1].loss < ft.evals[0].loss / 2  # (a random frozen encoder leaves some words ambiguous)
    assert ft.evals[-1].accuracy >= (0.8 if freeze else 0.9) > ft.evals[0].accuracy
    assert ft.evals[-1].confusion.sum() == sum(len(w) for w in task.valid_words)
    for k, v in base.model.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert not base.model.training
    n_head = sum(p.numel() for p in ft.model.classifier.parameters())
    assert ft.trainable_parameters == (n_head if freeze else ft.model.num_parameters())


@pytest.mark.parametrize("fam", ["bert", "roberta", "distilbert", "albert"])
def test_exported_tagger_loads_in_transformers_with_the_same_logits_and_loss(bases, tmp_path, fam):
    from transformers import AutoModelForTokenClassification

    if fam == "bert":
        base = bases["mlm"]
    else:
        from support.family import write_family_checkpoint

        write_family_checkpoint(tmp_path / "base", fam, "mlm")
        base = bert_core.load_model(str(tmp_path / "base"))
    task = task_from_conll(toy_conll(), seed=0)
    ft = TokenFineTuner(base, task, FineTuneConfig(lr=3e-3, epochs=2, batch_size=4))
    ft.run(steps=4)
    ev = ft.evaluate()
    save_token_model(ft.as_loaded(), tmp_path / "out")
    hf, info = AutoModelForTokenClassification.from_pretrained(tmp_path / "out", attn_implementation="eager",
                                                               output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert hf.config.id2label == dict(enumerate(task.labels))
    hf.eval()
    losses, right = [], []
    for row, ys in zip(ft.valid_rows, ft.valid_y):
        ids = torch.tensor([row])
        with torch.no_grad():
            theirs = hf(input_ids=ids).logits[0]  # (T, C)
            ours = ft.model.logits(ids)[0]
        assert (ours - theirs).abs().max().item() <= ATOL
        y = torch.tensor(ys)
        keep = y != IGNORE
        losses += torch.nn.functional.cross_entropy(theirs[keep], y[keep], reduction="none").tolist()
        right += (theirs[keep].argmax(-1) == y[keep]).tolist()
    assert abs(ev.loss - np.mean(losses)) <= ATOL  # evaluate's padded batches = HF one sentence at a time
    assert ev.accuracy == np.mean(right)
    back = bert_core.load_model(str(tmp_path / "out"))
    r = tag_words(back, "the cat sat in paris")
    assert [w for w, _, _ in r.words] == ["the", "cat", "sat", "in", "paris"]
    assert all(lab in task.labels for lab in r.labels)


def test_session_tags_and_exports_a_tagger_hf_reads(bases, tmp_path):
    from transformers import AutoModelForTokenClassification

    fs = FineTuneSession(slots=SlotManager(capacity=1))
    fs.setup(bases["mlm"], task_from_conll(toy_conll(), seed=0), FineTuneConfig(lr=3e-3, epochs=2, batch_size=4))
    assert fs.state == PAUSED and fs.trainer.evals[0].pooled is None
    fs.start()
    while fs.state != FINISHED:
        fs.advance(1.0)
    assert fs.trainer.evals[-1].step == fs.step == 6 and len([e for e in fs.trainer.evals if e.step == 6]) == 1
    r = fs.tag("the cat sat in paris.")
    assert len(r.labels) == 6 and r.probs.shape == (6, 3)
    assert np.allclose(r.probs.sum(1), 1, atol=1e-5)
    with zipfile.ZipFile(io.BytesIO(fs.checkpoint_zip())) as z:
        z.extractall(tmp_path)
    report = json.loads((tmp_path / "training_report.json").read_text())
    assert report["labels"] == ["ANIMAL", "O", "PLACE"] and report["steps"] == 6
    hf = AutoModelForTokenClassification.from_pretrained(tmp_path, attn_implementation="eager").eval()
    enc = fs.trainer.tok.encode("the cat sat in paris .")
    with torch.no_grad():
        theirs = hf(input_ids=torch.from_numpy(enc.input_ids)[None]).logits[0].softmax(-1)
    firsts = [t for t, w in enumerate(r.first) if w is not None]
    assert np.abs(theirs[firsts].numpy() - r.probs).max() <= ATOL


@pytest.mark.parametrize("task", ["pos", "qa"])
def test_evaluation_command_prints_the_readme_table(tmp_path, capsys, task):
    from support.checkpoints import write_tiny_checkpoint

    from bert_core.finetune import token_eval

    write_tiny_checkpoint(tmp_path, "mlm")
    token_eval.main(["--task", task, "--models", str(tmp_path), "--examples", "16", "--validation", "10",
                     "--train", "head", "--sample-efficiency"])
    out = capsys.readouterr().out
    assert "| model | trained | pretrained" in out and "same network, fresh weights" in out
    row = [line for line in out.splitlines() if line.startswith(f"| {tmp_path} |")]
    assert len(row) == 1 and "| head only, fit exactly |" in row[0]
    cells = [c.strip() for c in row[0].split("|")]
    assert cells[3].count("%") == cells[4].count("%") == (1 if task == "pos" else 2)  # pretrained, fresh
    assert cells[5].endswith("points")
    assert "| fresh weights |" in out and "| baseline |" in out  # the sample-efficiency table
