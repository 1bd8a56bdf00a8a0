"""Fine-tuning: CSV tasks and their errors, built-in tasks, the baseline, the loop, its session, its figures.

The loop's validation numbers are checked against transformers on the exported weights (fp32, 1e-5).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from support.toy_tasks import ANIMAL, SHOP
from support.toy_tasks import classification_task as toy_task

import bert_core
from bert_core.errors import BertCoreError
from bert_core.figures.finetuning import confusion_figure, pca_figure, probabilities_figure
from bert_core.finetune.finetuning import FineTuneConfig, FineTuner, pca_2d
from bert_core.finetune.tasks import (
    MAX_CSV_ROWS,
    BagOfWords,
    bow_baseline,
    builtin_tasks,
    parse_labelled_csv,
    task_from_csv,
)
from bert_core.runs.finetune_run import FineTuneSession
from bert_core.runs.status import FINISHED, PAUSED, QUEUED, RUNNING
from bert_core.train.trainer import warmup_linear_lr
from server.slots import SlotManager

ATOL = 1e-5


# --- your CSV ----------------------------------------------------------------------------------


def test_csv_parses_header_quotes_and_blank_lines():
    text = 'text,label\n\n"a dog, barking",animal\nan apple,food\n  \n' + "".join(
        f"word {i},{'animal' if i % 2 else 'food'}\n" for i in range(10))
    texts, labels = parse_labelled_csv(text)
    assert texts[:2] == ["a dog, barking", "an apple"] and labels[:2] == ["animal", "food"]
    assert len(texts) == 12  # header and blank lines skipped


@pytest.mark.parametrize("text,message", [
    ("", "empty"),
    ("\n\n   \n\n", "empty"),
    ("text,label\n" + "the cat,animal\n" * 20, "two classes"),
    ("the cat sat\n" * 20, "row 1 has no label"),
    ("a,b,c\n" * 20, "row 1 has 3 fields"),
    ("".join(f"{i},{'a' if i % 2 else 'b'}\n" for i in range(20)), "only numbers"),
    ("".join(f"{'x' if i % 2 else 'y'},{i}.5\n" for i in range(20)), "label column"),
    ("the cat,animal\nan apple,food\n", "at least 10"),
    ('"an unclosed quote,animal\n' * 12, "examples"),
    ("a\x00b,c\n" * 20, "NUL"),
    ("".join(f"text {i},{'animal' if i else 'food'}\n" for i in range(20)), "single example"),
])
def test_bad_csv_gets_a_clear_message(text, message):
    with pytest.raises(BertCoreError, match=message):
        parse_labelled_csv(text)


def test_numbers_then_words_hint_at_swapped_columns():
    with pytest.raises(BertCoreError, match="swapped"):
        parse_labelled_csv("".join(f"{i},{'cat' if i % 2 else 'dog'}\n" for i in range(20)))


def test_too_many_rows_or_bytes_are_refused():
    rows = "".join(f"example {i},{'a' if i % 2 else 'b'}\n" for i in range(100_000))  # 100k rows, ~1.7 MB
    with pytest.raises(BertCoreError, match="larger than"):
        parse_labelled_csv(rows)
    rows = "".join(f"x{i},{'a' if i % 2 else 'b'}\n" for i in range(MAX_CSV_ROWS + 1))  # small, but too many
    with pytest.raises(BertCoreError, match=f"more than {MAX_CSV_ROWS:,} rows"):
        parse_labelled_csv(rows)


def test_a_label_with_html_is_kept_as_text_and_escaped_in_figures():
    text = "".join(f"text {i},{'<b>bold</b>' if i % 2 else '<script>x</script>'}\n" for i in range(20))
    task = task_from_csv(text)
    assert task.labels == ("<b>bold</b>", "<script>x</script>")
    figs = [confusion_figure(np.eye(2, dtype=int), list(task.labels)),
            pca_figure([("before", np.zeros((4, 2)), np.array([0.5, 0.5]))], np.array([0, 1, 0, 1]),
                       list(task.labels)),
            probabilities_figure([(lab, 0.5) for lab in task.labels])]
    for fig in figs:
        js = fig.to_json()
        assert "<script>" not in js and "<b>" not in js and "&lt;script&gt;" in js


def test_csv_split_is_stratified_and_seeded():
    task = toy_task()
    assert task.labels == ("animal", "shop")
    for c in range(2):
        assert task.train_labels.count(c) == 7 and task.valid_labels.count(c) == 3
    assert not set(task.train_texts) & set(task.valid_texts)
    assert toy_task() == task
    assert task_from_csv("text,label\n" + "\n".join(f"{t},animal" for t in ANIMAL) + "\n"
                         + "\n".join(f"{t},shop" for t in SHOP), valid_fraction=0.3, seed=1) != task


# --- built-in tasks and the baseline -----------------------------------------------------------


def test_builtin_tasks_have_fixed_balanced_disjoint_splits():
    tasks = builtin_tasks()
    assert set(tasks) == {"topic", "word class"}
    t = tasks["topic"]
    assert t.labels == ("animal", "artifact", "food", "location", "person", "plant")
    assert all(c == (500, 50) for c in t.counts().values())
    assert tasks["word class"].labels == ("adjective", "adverb", "noun", "verb")
    assert all(c == (500, 50) for c in tasks["word class"].counts().values())
    for task in tasks.values():
        assert not set(task.train_texts) & set(task.valid_texts)
    assert t.train_texts[0] == "small pelagic fish often accompanying sharks or mantas"  # the file is fixed


def test_no_validation_text_was_in_the_bundled_models_pretraining_text():
    """Every validation definition, cleaned as the corpus cleans it, is a line pretraining held out."""
    from bert_core.train.corpus import clean_gloss, load_pretraining_corpus

    train_lines, train_docs, heldout, _ = load_pretraining_corpus(seed=0)
    seen = set(train_lines) | {s for d in train_docs for s in d.sentences}
    heldout = set(heldout)
    for task in builtin_tasks().values():
        cleaned = [clean_gloss(t) for t in task.valid_texts]
        leaked = [t for t in cleaned if t in seen]
        assert not leaked, f"{task.name}: {len(leaked)} validation texts were pretraining text, e.g. {leaked[0]!r}"
        assert all(t in heldout for t in cleaned), task.name
        assert not set(cleaned) & {clean_gloss(t) for t in task.train_texts}, task.name


def test_bag_of_words_products_match_dense_numpy():
    texts = ["the cat sat", "a dog", "the the dog cat", "nothing known"]
    vocab = {"the": 0, "cat": 1, "dog": 2, "sat": 3}
    x = BagOfWords.features(texts, vocab)
    dense = np.zeros((4, 5))
    np.add.at(dense, (x[0], x[1]), x[2])
    assert np.allclose(dense[:, :4], [[3**-.5, 3**-.5, 0, 3**-.5], [0, 0, 1, 0], [3**-.5, 3**-.5, 3**-.5, 0],
                                      [0, 0, 0, 0]], atol=1e-12)
    assert (dense[:, 4] == 1).all()  # bias column
    rng = np.random.default_rng(0)
    w, g = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    assert np.allclose(BagOfWords._xw(x, w), dense @ w)
    assert np.allclose(BagOfWords._xtg(x, g, 5), dense.T @ g)


def test_bag_of_words_learns_a_word_rule_and_its_loss_falls():
    task = toy_task()
    m = BagOfWords.fit(task.train_texts, task.train_labels, 2, l2=1e-4)
    assert m.history[-1] < m.history[0] / 5
    assert (m.predict(task.train_texts) == np.array(task.train_labels)).all()
    r = bow_baseline(task, l2_grid=(1e-4,))
    assert 0.5 < r["accuracy"] <= 1.0 and r["l2"] == 1e-4


# --- the loop --------------------------------------------------------------------------------------


def test_warmup_then_linear_decay_example():
    assert [warmup_linear_lr(s, 1.0, 2, 6) for s in range(6)] == [0.5, 1.0, 1.0, 0.75, 0.5, 0.25]


@pytest.fixture(scope="module")
def bases(tiny_dirs):
    """A base with a pooler (BertForPreTraining) and one without (BertForMaskedLM)."""
    return {k: bert_core.load_model(str(tiny_dirs[k][0])) for k in ("pretraining", "mlm")}


def state_copy(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("kind", ["pretraining", "mlm"])
@pytest.mark.parametrize("freeze", [True, False])
def test_fine_tuning_never_touches_the_base_model(bases, kind, freeze):
    base = bases[kind]
    before = state_copy(base.model)
    ft = FineTuner(base, toy_task(), FineTuneConfig(freeze_encoder=freeze, lr=1e-3, epochs=2, batch_size=4))
    head0 = ft.model.classifier.weight.detach().clone()
    ft.run(steps=5)
    assert not base.model.training
    for k, v in base.model.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert not torch.equal(ft.model.classifier.weight, head0)  # the head did learn
    assert any("NEW pooler" in n for n in ft.notes) == (kind == "mlm")
    n_head = sum(p.numel() for p in ft.model.classifier.parameters())
    if freeze:
        extra = sum(p.numel() for p in ft.model.bert.pooler.parameters()) if kind == "mlm" else 0
        assert ft.trainable_parameters == n_head + extra
    else:
        assert ft.trainable_parameters == sum(p.numel() for p in ft.model.parameters())
        moved = ft.model.bert.embeddings.word_embeddings.weight
        assert not torch.equal(moved, base.model.bert.embeddings.word_embeddings.weight)


def test_fine_tuning_learns_the_toy_task_and_repeats_exactly(bases):
    cfg = FineTuneConfig(lr=3e-3, epochs=15, batch_size=4, evals_per_epoch=1)
    a = FineTuner(bases["pretraining"], toy_task(), cfg)
    a.run()
    assert a.done and a.step_count == 15 * 4
    assert a.evals[0].step == 0 and a.evals[-1].step == a.step_count
    assert a.evals[-1].loss < a.evals[0].loss / 2
    assert a.evals[-1].accuracy == 1.0
    b = FineTuner(bases["pretraining"], toy_task(), cfg)
    b.run(steps=7)
    assert [m.loss for m in b.history] == [m.loss for m in a.history[:7]]  # seeded: order, dropout, head


def test_lr_warms_up_then_decays_to_zero(bases):
    ft = FineTuner(bases["mlm"], toy_task(), FineTuneConfig(lr=1e-3, epochs=5, batch_size=4))
    steps = ft.run()
    assert ft.warmup_steps == 2 and ft.max_steps == 20
    assert steps[0].lr == pytest.approx(5e-4) and steps[1].lr == pytest.approx(1e-3)
    assert steps[-1].lr == pytest.approx(1e-3 / 18)
    with pytest.raises(BertCoreError, match="finished"):
        ft.step()


@pytest.mark.parametrize("kind", ["pretraining", "mlm"])
def test_validation_numbers_match_transformers_on_the_exported_weights(bases, tmp_path, kind):
    """Loss, confusion matrix and pooled vectors of `evaluate` (padded batches) = HF, one unpadded text at a time.

    After fused AdamW steps: this caught the attention's [W_q; W_k; W_v] cache going stale (training.adamw).
    """
    from transformers import AutoModelForSequenceClassification

    from bert_core.model.classifier_io import save_classifier

    task = toy_task()
    ft = FineTuner(bases[kind], task, FineTuneConfig(lr=1e-3, epochs=2, batch_size=4))
    ft.run(steps=5)
    ev = ft.evaluate(pooled=True)
    save_classifier(ft.as_loaded(), tmp_path)
    hf = AutoModelForSequenceClassification.from_pretrained(tmp_path, attn_implementation="eager").eval()
    losses, preds, pooled = [], [], []
    with torch.no_grad():
        for text, y in zip(task.valid_texts, task.valid_labels):
            ids = torch.from_numpy(ft.tok.encode(text).input_ids)[None]
            out = hf(input_ids=ids, output_hidden_states=True)
            losses.append(torch.nn.functional.cross_entropy(out.logits, torch.tensor([y])).item())
            preds.append(out.logits.argmax(-1).item())
            pooled.append(hf.bert.pooler(out.hidden_states[-1])[0].numpy())
    assert abs(ev.loss - np.mean(losses)) <= ATOL
    C = len(task.labels)
    assert (ev.confusion == np.bincount(np.array(task.valid_labels) * C + preds, minlength=C * C).reshape(C, C)).all()
    assert ev.accuracy == np.mean(np.array(preds) == np.array(task.valid_labels))
    assert np.abs(ev.pooled - np.stack(pooled)).max() <= ATOL


def test_settings_out_of_range_are_refused(bases):
    with pytest.raises(BertCoreError, match="learning rate"):
        FineTuner(bases["mlm"], toy_task(), FineTuneConfig(lr=5.0))
    with pytest.raises(BertCoreError, match="epochs"):
        FineTuner(bases["mlm"], toy_task(), FineTuneConfig(epochs=0))
    with pytest.raises(BertCoreError, match="pooling"):
        FineTuner(bases["mlm"], toy_task(), FineTuneConfig(pooling="max"))


def test_pca_2d_projects_on_the_top_two_principal_axes():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 5)) * np.array([5.0, 3.0, 1.0, 0.5, 0.1]) + 7
    coords, var = pca_2d(x)
    assert coords.shape == (200, 2)
    assert np.allclose(coords.mean(0), 0, atol=1e-4)
    ev = np.linalg.eigvalsh(np.cov(x.T))[::-1]
    assert np.allclose(coords.var(0, ddof=1), ev[:2], rtol=1e-4)
    assert np.allclose(var, ev[:2] / ev.sum(), rtol=1e-4)
    flipped, _ = pca_2d(-x)  # signs are pinned (the largest loading is positive), so -x lands on -coords
    assert np.allclose(flipped, -coords, atol=1e-3)
    assert pca_2d(np.ones((3, 1)))[0].shape == (3, 2)  # fewer than two dimensions: padded


# --- the session: slots, budgets, export ---------------------------------------------------------


def test_session_shares_the_slot_cap_and_exports_a_checkpoint_hf_reads(bases, tmp_path):
    import io
    import zipfile

    from transformers import AutoModelForSequenceClassification

    slots = SlotManager(capacity=1)
    fs = FineTuneSession(slots=slots)
    fs.setup(bases["pretraining"], toy_task(), FineTuneConfig(lr=1e-3, epochs=2, batch_size=4))
    assert fs.state == PAUSED and fs.trainer.evals[0].pooled is not None
    assert slots.request("someone training") == 0  # the only slot is taken
    assert fs.run_steps(3) is None
    fs.start()
    assert fs.state == QUEUED and fs.advance(0.1) == []
    slots.release("someone training")
    fs.advance(0.01)
    assert fs.state == RUNNING and fs.step >= 1
    assert slots.position(fs.id) == 0
    while fs.state == RUNNING:
        fs.advance(1.0)
    assert fs.state == FINISHED and "2 epochs done" in fs.finish_reason
    assert slots.position(fs.id) is None  # a finished run gives its slot back
    assert fs.trainer.evals[-1].pooled is not None and fs.trainer.evals[-1].step == fs.step == 8
    probs = fs.classify("the cat sat")
    assert [lab for lab, _ in probs] == ["animal", "shop"] and abs(sum(p for _, p in probs) - 1) < 1e-6
    with zipfile.ZipFile(io.BytesIO(fs.checkpoint_zip())) as z:
        z.extractall(tmp_path)
        assert {"config.json", "model.safetensors", "training_report.json", "vocab.txt"} <= set(z.namelist())
    report = json.loads((tmp_path / "training_report.json").read_text())
    assert report["steps"] == 8 and report["labels"] == ["animal", "shop"]
    hf = AutoModelForSequenceClassification.from_pretrained(tmp_path, attn_implementation="eager").eval()
    with torch.no_grad():
        theirs = hf(input_ids=torch.from_numpy(fs.trainer.tok.encode("the cat sat").input_ids)[None]).logits
    assert (torch.tensor([p for _, p in probs]) - theirs.softmax(-1)[0]).abs().max().item() <= ATOL
    back = bert_core.classify(bert_core.load_model(str(tmp_path)), "the cat sat")
    assert [lab for lab, _ in back] == ["animal", "shop"]
    assert np.abs(np.array([p for _, p in back]) - [p for _, p in probs]).max() <= ATOL


def test_session_stops_at_the_time_budget(bases):
    fs = FineTuneSession(slots=SlotManager(capacity=1), max_seconds=0.0)
    fs.setup(bases["mlm"], toy_task(), FineTuneConfig(epochs=3, batch_size=4))
    fs.start()
    fs.advance(0.5)
    assert fs.state == FINISHED and "minute training limit" in fs.finish_reason and fs.step == 0


def test_trainer_inference_after_fused_adamw_steps_sees_the_new_weights(tiny_dirs):
    """The pretraining Trainer shares training.adamw: its probes must not run on cached pre-step Q/K/V weights."""
    import copy

    from bert_core.train.trainer import TrainConfig, Trainer

    base = bert_core.load_model(str(tiny_dirs["mlm"][0]))
    model = copy.deepcopy(base.model)
    tr = Trainer(model, base.tokenizer, ANIMAL + SHOP, TrainConfig(batch_size=4, seq_len=16, lr=1e-2, max_steps=5,
                                                                    warmup_steps=1))
    ids = torch.from_numpy(base.tokenizer.encode("the cat sat on the mat").input_ids)[None]
    model.eval()
    with torch.no_grad():
        model.bert(ids)  # fills the inference cache
    model.train()
    for _ in range(3):
        tr.step()
    model.eval()
    with torch.no_grad():
        assert torch.equal(model.bert(ids), copy.deepcopy(model).bert(ids))  # a copy has no cache


# --- fine-tuning a RoBERTa, DistilBERT or ALBERT base ------------------------------------------------


@pytest.fixture(scope="module")
def family_bases(tmp_path_factory):
    """{family: loaded MLM checkpoint} (tests/family_util.py: random tiny HF models, tokenizers trained here)."""
    from support.family import write_family_checkpoint

    out = {}
    for fam in ("roberta", "distilbert", "albert"):
        d = tmp_path_factory.mktemp(f"ft-{fam}")
        write_family_checkpoint(d, fam, "mlm")
        out[fam] = bert_core.load_model(str(d))
    return out


@pytest.mark.parametrize("freeze", [True, False])
@pytest.mark.parametrize("fam", ["roberta", "distilbert", "albert"])
def test_fine_tuned_family_model_exports_what_transformers_computes(family_bases, tmp_path, fam, freeze):
    """Steps on a family base leave the base alone, train the head's new layers, and export the family's
    HF class with every key in place: HF's logits on the validation texts = ours (1e-5)."""
    from transformers import AutoModelForSequenceClassification

    from bert_core.model.classifier_io import save_classifier

    base = family_bases[fam]
    before = state_copy(base.model)
    ft = FineTuner(base, toy_task(), FineTuneConfig(freeze_encoder=freeze, lr=3e-3, epochs=2, batch_size=4))
    pool0 = ft.model.pooling_layer().weight.detach().clone()
    ft.run(steps=5)
    for k, v in base.model.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert not base.model.training
    assert not torch.equal(ft.model.pooling_layer().weight, pool0)  # the new pooling layer learned
    n_head = sum(p.numel() for n, p in ft.model.named_parameters() if not n.startswith("bert."))
    n_pool = sum(p.numel() for p in ft.model.pooling_layer().parameters())
    expected = n_head + (n_pool if fam == "albert" else 0) if freeze else ft.model.num_parameters()
    assert ft.trainable_parameters == expected  # ALBERT's MLM checkpoint has no pooler: a new one trains too
    save_classifier(ft.as_loaded(), tmp_path)
    hf, info = AutoModelForSequenceClassification.from_pretrained(tmp_path, attn_implementation="eager",
                                                                  output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    hf.eval()
    task = toy_task()
    ev = ft.evaluate()
    losses = []
    for text, y in zip(task.valid_texts, task.valid_labels):
        ids = torch.tensor([ft.valid_rows[task.valid_texts.index(text)]])
        with torch.no_grad():
            theirs = hf(input_ids=ids).logits
            ours = ft.model.logits(ids)
        assert (ours - theirs).abs().max().item() <= ATOL, text
        losses.append(torch.nn.functional.cross_entropy(theirs, torch.tensor([y])).item())
    assert abs(ev.loss - np.mean(losses)) <= ATOL  # evaluate's padded batches agree with HF one by one
