"""The training loop, its checkpoints, and per-session training runs (slots, budgets, snapshots)."""

from __future__ import annotations

import io
import math
import zipfile

import numpy as np
import pytest
import torch

import bert_core
from bert_core.errors import BertCoreError
from bert_core.figures.training import attention_heatmap, loss_figure
from bert_core.objectives.masking import mask_tokens
from bert_core.runs.settings import (
    MAX_STEPS,
    TrainSettings,
    builtin_lines,
    bundled_tokenizer,
    decode_upload,
    ema,
    preset_parameters,
    probe_sentences,
    user_lines,
)
from bert_core.runs.status import FINISHED, IDLE, PAUSED, QUEUED, RUNNING, probe_history_rows, probe_rows
from bert_core.runs.training_run import TrainingSession
from bert_core.train.batches import TextDataset, pad_rows
from bert_core.train.corpus import MAX_USER_CORPUS_BYTES, parse_user_corpus
from bert_core.train.trainer import MAX_TRAIN_PARAMS, PRESETS, TrainConfig, Trainer, evaluate_mlm, new_model
from server.slots import SlotManager

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
LINES = [
    "the cat sat on the mat .",
    "a dog ran across the green field .",
    "she wrote a long letter to her mother .",
    "the sea is a large body of salt water .",
]
TINY_PRESET = "tiny (2 layers, 64 wide)"


@pytest.fixture(scope="module")
def tok():
    return bundled_tokenizer()


def make_trainer(tok, lines=LINES, seed=0, dropout=0.1, **cfg) -> Trainer:
    kw = dict(batch_size=8, seq_len=32, lr=3e-3, warmup_steps=10, max_steps=200, seed=seed, probe_every=10)
    kw.update(cfg)
    return Trainer(new_model(tok, TINY, seed=seed, dropout=dropout), tok, lines, TrainConfig(**kw))


def settings(**kw) -> TrainSettings:
    base = dict(preset=TINY_PRESET, lr=1e-3, seed=0, max_steps=40, batch_size=8, seq_len=32, probe_every=5)
    base.update(kw)
    return TrainSettings(**base)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


# --- the Trainer -----------------------------------------------------------------------------


def test_overfits_a_few_lines(tok):
    t = make_trainer(tok, LINES * 2, dropout=0.0, mlm_probability=0.3, max_steps=120)
    before = evaluate_mlm(t.model, tok, LINES, seed=1, mlm_probability=0.3)["loss"]
    losses = [m.loss for m in t.run(steps=120)]
    first, last = np.mean(losses[:5]), np.mean(losses[-20:])
    assert first > 7.0  # about ln(8000) = 9.0 from random weights
    assert last < 0.5 * first, (first, last)
    after = evaluate_mlm(t.model, tok, LINES, seed=1, mlm_probability=0.3)["loss"]
    assert after < 0.5 * before


def test_same_seed_same_losses_other_seed_other_losses(tok):
    a = [m.loss for m in make_trainer(tok, seed=3).run(steps=5)]
    b = [m.loss for m in make_trainer(tok, seed=3).run(steps=5)]
    c = [m.loss for m in make_trainer(tok, seed=4).run(steps=5)]
    assert a == b
    assert a != c


def test_run_does_not_move_the_global_rng(tok):
    t = make_trainer(tok)
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    t.run(steps=2)
    assert torch.equal(torch.rand(3), expected)


def test_checkpoint_round_trip(tok, tmp_path):
    t = make_trainer(tok)
    t.run(steps=5)
    t.save(tmp_path)
    loaded = bert_core.load_model(str(tmp_path))
    t.model.eval()  # analyze runs the model as it is: dropout must be off for an exact comparison
    text = "the cat [MASK] on the [MASK] ."
    ours, theirs = bert_core.analyze(t.as_loaded(), text), bert_core.analyze(loaded, text)
    assert np.array_equal(ours.hidden_states, theirs.hidden_states)
    assert np.array_equal(ours.attentions, theirs.attentions)
    assert ours.predictions == theirs.predictions and len(ours.predictions) == 2
    assert loaded.has_mlm and not loaded.has_nsp


def test_step_metrics_and_outcome_keys(tok):
    m = make_trainer(tok).step()
    assert set(m.loss_by_outcome) == {"[MASK]", "random", "kept"}
    assert m.step == 1 and m.tokens > 0 and m.tokens_per_sec > 0 and m.nsp_loss is None
    assert m.loss == m.mlm_loss and 0.0 <= m.accuracy <= 1.0
    finite = [v for v in m.loss_by_outcome.values() if not math.isnan(v)]
    assert finite and all(v > 0 for v in finite)


def test_lr_schedule(tok):
    t = make_trainer(tok, lr=1e-3, warmup_steps=10, max_steps=110)
    assert t.lr_at(0) == pytest.approx(1e-4)
    assert t.lr_at(4) == pytest.approx(5e-4)
    assert t.lr_at(9) == pytest.approx(1e-3)
    assert t.lr_at(10) == pytest.approx(1e-3)
    assert t.lr_at(60) == pytest.approx(5e-4)
    assert t.lr_at(110) == 0.0 and t.lr_at(500) == 0.0
    assert [m.lr for m in t.run(steps=3)] == pytest.approx([1e-4, 2e-4, 3e-4])


def test_evaluate_mlm_sane(tok):
    model = new_model(tok, TINY, seed=0)
    lines = builtin_lines()[:60]
    r = evaluate_mlm(model, tok, lines, seed=0)
    assert r["lines"] == 60 and r["masked_tokens"] > 0
    assert 0.0 <= r["top1"] <= r["top5"] <= 1.0
    assert r["perplexity"] == pytest.approx(math.exp(r["loss"]))
    assert abs(r["loss"] - math.log(tok.vocab_size)) < 1.0  # random weights: close to uniform guessing
    assert evaluate_mlm(model, tok, lines, seed=0) == r  # one fixed draw per seed
    assert evaluate_mlm(model, tok, lines, seed=1) != r


def test_evaluate_mlm_equals_a_plain_loop_over_lines_in_their_order(tok):
    """Length-sorted batches give the numbers of the plain loop: each batch of lines drawn in order, every line
    then scored alone (no padding), fp32."""
    model = new_model(tok, TINY, seed=0)
    lines = builtin_lines()[:40] + [" ".join(builtin_lines()[40:46])]  # one long line among short ones
    got = evaluate_mlm(model, tok, lines, seed=3, batch_size=7)
    g = torch.Generator().manual_seed(3)
    data = TextDataset(lines, tok, 128)
    cls, sep, pad = tok.cls_token_id, tok.sep_token_id, tok.pad_token_id
    loss, n, top1, top5 = 0.0, 0, 0, 0
    with torch.no_grad():
        for start in range(0, len(data.lines), 7):
            ids, attn = pad_rows([[cls, *x, sep] for x in data.lines[start:start + 7]], pad)
            special = ((ids == cls) | (ids == sep) | (attn == 0)).long()
            draw = mask_tokens(ids, special, vocab_size=model.config.vocab_size, mask_token_id=tok.mask_token_id,
                               generator=g, mlm_probability=0.15, special_ids=tok.all_special_ids)
            for r in range(len(ids)):
                k = int(attn[r].sum())
                x, y = draw.input_ids[r:r + 1, :k], draw.labels[r, :k]
                logits = model.mlm_logits(model(x, None, torch.ones_like(x))[0][y != -100])
                target = y[y != -100]
                loss += float(torch.nn.functional.cross_entropy(logits, target, reduction="sum"))
                best = logits.topk(5, -1).indices
                top1 += int((best[:, 0] == target).sum())
                top5 += int((best == target[:, None]).any(-1).sum())
                n += len(target)
    assert got["masked_tokens"] == n > 0
    assert got["loss"] == pytest.approx(loss / n, rel=1e-5)
    assert (got["top1"], got["top5"]) == (top1 / n, top5 / n)


def test_corpus_smaller_than_a_batch_gives_a_smaller_batch(tok):
    data = TextDataset(LINES, tok, seq_len=32)
    ids, types, attn, special, nsp = data.batch(32, torch.Generator().manual_seed(0), nsp=False)
    assert ids.shape[0] == len(LINES) and bool((attn.sum(1) > 0).all())
    with pytest.raises(BertCoreError, match="two non-empty lines"):
        TextDataset(["only one line"], tok, seq_len=32)


def test_model_size_bounded(tok):
    big = dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, intermediate_size=2048)
    with pytest.raises(BertCoreError, match="parameters"):
        new_model(tok, big)
    for name in PRESETS:
        n = preset_parameters(name, tok.vocab_size)
        assert n <= MAX_TRAIN_PARAMS
        if name == TINY_PRESET:
            assert n == new_model(tok, PRESETS[name]).num_parameters()


# --- corpora ---------------------------------------------------------------------------------


def test_corpus_size_bound():
    big = "word " * (MAX_USER_CORPUS_BYTES // 5 + 1)
    with pytest.raises(BertCoreError, match="bytes"):
        parse_user_corpus(big)
    with pytest.raises(BertCoreError, match="bytes"):
        user_lines(big)
    with pytest.raises(BertCoreError, match="bytes"):
        decode_upload(big.encode())
    with pytest.raises(BertCoreError, match="UTF-8"):
        decode_upload(b"caf\xe9 au lait\n" * 3)
    with pytest.raises(BertCoreError, match="words"):
        user_lines("too few words here")
    with pytest.raises(BertCoreError, match="two lines"):
        user_lines("one line with more than ten words in it, so only the line count fails")
    assert user_lines(decode_upload(("\ufeff" + "\n".join(LINES)).encode())) == LINES


def test_builtin_sample_is_fixed_and_bounded():
    a = builtin_lines()
    assert a == builtin_lines() and 5000 <= len(a) <= 10_000
    assert sum(len(s.encode()) for s in a) < MAX_USER_CORPUS_BYTES


def test_probe_sentences():
    assert probe_sentences("the [MASK] barked .")[0] == "the [MASK] barked ."
    assert "no mask here" not in probe_sentences("no mask here")
    assert len(probe_sentences("[MASK] " * 100)) == len(probe_sentences(None))


# --- slots --------------------------------------------------------------------------------------


def test_slots_fifo_queue():
    slots = SlotManager(capacity=1, clock=Clock())
    assert slots.request("a") == 0
    assert slots.request("b") == 1 and slots.request("c") == 2
    assert slots.request("b") == 1  # asking again keeps the place
    assert slots.counts() == (1, 2)
    slots.release("a")
    assert slots.request("c") == 1  # the free slot is b's (first in line): c may not jump the queue
    assert slots.counts() == (0, 2)
    assert slots.request("b") == 0
    assert slots.position("c") == 1 and slots.position("a") is None


def test_slot_lease_expires():
    clock = Clock()
    slots = SlotManager(capacity=1, lease_seconds=30, clock=clock)
    assert slots.request("a") == 0 and slots.request("b") == 1 and slots.request("c") == 2
    clock.t += 20
    slots.request("a")
    slots.request("c")  # b stops asking (its tab was closed)
    clock.t += 20
    assert slots.position("b") is None  # b's place lapsed
    assert slots.position("c") == 1
    clock.t += 31  # a stops asking too
    assert slots.request("c") == 0


def test_sessions_queue_with_cap_one(tok):
    clock = Clock()
    slots = SlotManager(capacity=1, clock=clock)
    a, b = TrainingSession(slots), TrainingSession(slots)
    for s in (a, b):
        s.setup(tok, LINES, settings())
    assert a.start() == 0 and a.state == RUNNING
    assert b.start() == 1 and b.state == QUEUED and b.queue_position() == 1
    assert b.advance(0.05) == [] and b.step == 0
    assert len(a.advance(0.05)) >= 1
    a.pause()
    assert a.state == PAUSED and a.queue_position() is None
    assert len(b.advance(0.05)) >= 1 and b.state == RUNNING
    assert a.start() == 1 and a.state == QUEUED
    assert a.run_steps(3) is None  # no slot: nothing ran
    b.reset()
    assert b.state == IDLE and b.trainer is None
    assert len(a.advance(0.05)) >= 1 and a.state == RUNNING


def test_session_lease_expiry_frees_the_slot(tok):
    clock = Clock()
    slots = SlotManager(capacity=1, lease_seconds=30, clock=clock)
    a, b = TrainingSession(slots), TrainingSession(slots)
    for s in (a, b):
        s.setup(tok, LINES, settings())
    a.start()
    b.start()
    clock.t += 31  # a's tab closed: it stopped calling advance; b kept asking
    b.advance(0.01)
    assert b.state == RUNNING and b.queue_position() == 0
    assert a.advance(0.01) == [] and a.state == QUEUED  # a came back: now it waits


def test_run_steps_exact_and_releases(tok):
    slots = SlotManager(capacity=1, clock=Clock())
    s = TrainingSession(slots)
    s.setup(tok, LINES, settings())
    assert len(s.run_steps(7)) == 7 and s.step == 7
    assert s.state == PAUSED and slots.counts() == (0, 0)


def test_step_budget(tok):
    slots = SlotManager(capacity=1, clock=Clock())
    s = TrainingSession(slots)
    s.setup(tok, LINES, settings(max_steps=12))
    s.start()
    for _ in range(100):
        s.advance(0.2)
        if s.state == FINISHED:
            break
    assert s.state == FINISHED and s.step == 12 and "12 steps" in s.finish_reason
    assert slots.counts() == (0, 0)  # finishing frees the slot
    assert s.advance(0.2) == []
    with pytest.raises(BertCoreError, match="finished"):
        s.start()
    assert [p.step for p in s.probes] == [0, 5, 10, 12]  # every probe_every steps, and at the end


def test_time_budget(tok):
    slots = SlotManager(capacity=1, clock=Clock())
    s = TrainingSession(slots, max_seconds=0.05)
    s.setup(tok, LINES, settings(max_steps=MAX_STEPS))
    s.start()
    for _ in range(100):
        s.advance(0.05)
        if s.state == FINISHED:
            break
    assert s.state == FINISHED and "minute" in s.finish_reason
    assert s.step < MAX_STEPS and s.trainer.elapsed >= 0.05


@pytest.mark.parametrize("bad, match", [
    (dict(max_steps=MAX_STEPS + 1), "max steps"),
    (dict(max_steps=0), "max steps"),
    (dict(preset="huge"), "unknown model size"),
    (dict(lr=5.0), "learning rate"),
    (dict(mlm_probability=0.0), "mask probability"),
])
def test_settings_outside_budgets_refused(tok, bad, match):
    s = TrainingSession(SlotManager(capacity=1, clock=Clock()))
    with pytest.raises(BertCoreError, match=match):
        s.setup(tok, LINES, settings(**bad))
    assert s.state == IDLE and s.trainer is None
    with pytest.raises(BertCoreError, match="set up"):
        s.start()


def test_oversized_corpus_refused(tok):
    s = TrainingSession(SlotManager(capacity=1, clock=Clock()))
    with pytest.raises(BertCoreError, match="bytes"):
        s.setup(tok, ["x" * 1000] * (MAX_USER_CORPUS_BYTES // 1000 + 1), settings())


# --- reading a run: status, curves, probes, snapshots, zips ---------------------------------------


def test_status_curves_and_probe_tables(tok):
    s = TrainingSession(SlotManager(capacity=1, clock=Clock()))
    s.setup(tok, LINES, settings(), probes=probe_sentences("the [MASK] sat on the mat ."))
    assert s.status().step == 0 and dict(s.status().display())["Loss (smoothed)"] == "–"
    s.run_steps(10)
    st = s.status()
    assert st.step == 10 and st.state == PAUSED and st.tokens_per_sec > 0 and st.lr > 0 and st.loss > 0
    labels = [k for k, _ in st.display()]
    assert {"Step", "Learning rate", "Tokens / s", "Training time"} <= set(labels)
    c = s.curves(0.0)
    assert list(c["step"]) == list(range(1, 11))
    assert set(c) == {"step", "loss", "[MASK]", "random", "kept", "accuracy"}
    assert all(len(v) == 10 for v in c.values())
    raw = [m.loss for m in s.trainer.history]
    assert np.allclose(c["loss"], raw)  # smoothing 0 is the raw series
    rows = probe_rows(s.last_probe)
    assert rows[0]["sentence"] == "the [MASK] sat on the mat ." and len(rows) == 4  # one [MASK] each
    assert all(0 <= r["probability"] <= 1 for r in rows)
    hist = probe_history_rows(s.probes)
    assert [h["step"] for h in hist] == [0, 5, 10]
    assert s.last_probe.attentions.shape[:2] == (2, 2)  # tiny preset: 2 layers x 2 heads


def test_snapshot_independent_of_further_training(tok):
    s = TrainingSession(SlotManager(capacity=1, clock=Clock()))
    s.setup(tok, LINES, settings())
    s.run_steps(5)
    snap = s.snapshot()
    assert isinstance(snap, bert_core.LoadedModel) and snap.source == "session"
    assert not snap.model.training and not any(p.requires_grad for p in snap.model.parameters())
    assert snap.notes and "5 steps" in snap.notes[0]
    text = "the cat [MASK] on the mat ."
    before = bert_core.analyze(snap, text)
    w = snap.model.bert.embeddings.word_embeddings.weight.clone()
    s.run_steps(5)
    after = bert_core.analyze(snap, text)
    assert torch.equal(w, snap.model.bert.embeddings.word_embeddings.weight)
    assert np.array_equal(before.hidden_states, after.hidden_states)
    assert not torch.equal(w, s.trainer.model.bert.embeddings.word_embeddings.weight)  # the run did move on
    s.reset()
    assert bert_core.analyze(snap, text).predictions == before.predictions  # reset leaves the copy alone


def test_checkpoint_zip_loads(tok, tmp_path):
    s = TrainingSession(SlotManager(capacity=1, clock=Clock()))
    s.setup(tok, LINES, settings())
    s.run_steps(3)
    data = s.checkpoint_zip()
    assert s.checkpoint_zip() is data  # cached until the next step
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = set(z.namelist())
        z.extractall(tmp_path)
    assert {"config.json", "model.safetensors", "training_report.json"} <= names
    loaded = bert_core.load_model(str(tmp_path))
    text = "a [MASK] is a large body of water ."
    assert np.array_equal(bert_core.analyze(loaded, text).hidden_states,
                          bert_core.analyze(s.snapshot(), text).hidden_states)


def test_ema():
    assert np.allclose(ema([1, 3], 0.5), [1.0, 7 / 3])
    out = ema([math.nan, 2.0, math.nan, 2.0], 0.9)
    assert math.isnan(out[0]) and np.allclose(out[1:], 2.0)


# --- figures --------------------------------------------------------------------------------------


def test_loss_figure_and_heatmap():
    curves = {"step": np.arange(1, 4), "loss": np.array([9.0, 8.0, 7.0]), "[MASK]": np.ones(3),
              "random": np.full(3, np.nan), "kept": np.ones(3), "accuracy": np.array([0.0, 0.1, 0.2])}
    fig = loss_figure(curves)
    assert [t.name for t in fig.data] == ["total MLM loss", "loss at [MASK]", "loss at random", "loss at kept",
                                          "masked-token accuracy"]
    attn = np.full((3, 3), 1 / 3)
    fig = attention_heatmap(attn, ["[CLS]", "<b>x</b>", "[CLS]"], "layer 0")
    assert list(fig.layout.yaxis.ticktext) == ["[CLS]", "&lt;b&gt;x&lt;/b&gt;", "[CLS]"]  # duplicates kept
    assert np.asarray(fig.data[0].z).shape == (3, 3)


DOCS = [["the dog ran to the park.", "it chased a red ball.", "then it slept under a tree."],
        ["she wrote a long letter.", "her mother read it twice.", "they both smiled."]]


def test_document_batches_pair_real_successors_and_random_sentences(tok):
    """Document mode: single lines carry NSP label -100; pairs are (sentence, its successor) or random."""
    data = TextDataset(LINES, tok, seq_len=32, documents=DOCS)
    assert len(data.sents) == 6 and data.anchors == [0, 1, 3, 4] and data.next_of[1] == 2
    g = torch.Generator().manual_seed(0)
    seen = set()
    for _ in range(40):
        ids, types, attn, special, nsp = data.batch(8, g, nsp=True)
        assert ids.shape[0] == nsp.shape[0] <= 8
        seen.update(nsp.tolist())
        for r in range(ids.shape[0]):
            has_b = bool(types[r].any())
            assert has_b == (nsp[r].item() != -100)  # a pair has a B segment and a label
    assert seen == {-100, 0, 1}


def test_resume_takes_the_same_steps_as_an_uninterrupted_run(tok, tmp_path):
    """3 steps, save, load into a fresh trainer, 3 more == 6 steps straight (weights bit-identical)."""
    cfg = TrainConfig(batch_size=4, seq_len=32, max_steps=6, warmup_steps=2, nsp=True, seed=3)

    def fresh():
        return Trainer(new_model(tok, PRESETS["tiny (2 layers, 64 wide)"], 32, nsp=True, seed=3), tok, LINES, cfg,
                       documents=DOCS)

    straight = fresh()
    straight.run(steps=6)
    first = fresh()
    first.run(steps=3)
    torch.save(first.state_dict(), tmp_path / "state.pt")
    resumed = fresh()
    resumed.load_state_dict(torch.load(tmp_path / "state.pt", weights_only=True))
    resumed.run(steps=3)
    assert resumed.step_count == 6
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert [m.loss for m in straight.history[3:]] == [m.loss for m in resumed.history]


def test_init_from_an_encoder_only_folder_gives_new_tied_heads_and_a_faster_head_rate(tiny_dirs):
    """`pretrain --init-from`: the encoder (and pooler) copied, new MLM (tied) and NSP heads, heads at lr x scale."""
    from bert_core.train.pretrain import encoder_with_new_heads

    path, hf = tiny_dirs["base"]  # an HF BertModel: encoder + pooler, no heads
    model = encoder_with_new_heads(path, seed=0)
    assert model.has_mlm and model.has_nsp
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    theirs = hf.state_dict()
    for k, v in model.bert.state_dict().items():
        assert torch.equal(v, theirs[k]), k  # every encoder and pooler tensor is the folder's
    m = bert_core.load_model(str(path))
    cfg = TrainConfig(batch_size=4, seq_len=16, lr=1e-4, warmup_steps=1, max_steps=10, nsp=True, head_lr_scale=10)
    tr = Trainer(model, m.tokenizer, ["the cat sat on the mat", "a dog ran in the park", "she wrote a letter"] * 3,
                 cfg)
    tr.step()
    head = {id(p) for n, p in model.named_parameters() if n.startswith(("cls.", "bert.pooler."))}
    rates = {(any(id(p) in head for p in g["params"]), g["lr"]) for g in tr.opt.param_groups}
    assert rates == {(False, 1e-4), (True, 1e-4 * 10)}


PIECES = ["unaffable hyperparameters don't misunderstand", "the cat sat on the mat", "a tokenizer's pieces"]


def test_batch_word_ids_match_the_tokenizers_own_words(tok):
    """Our vectorised word numbering == the tokenizer's word_ids (pieces of one word share one; A and B apart)."""
    from bert_core.inspect.masking_view import unique_word_ids
    from bert_core.train.batches import batch_word_ids, continuation_table

    table = continuation_table(tok)
    for a, b in [(PIECES[0], PIECES[1]), (PIECES[2], None), (PIECES[1], PIECES[0])]:
        e = tok.encode(a, b)
        ids = torch.as_tensor(np.asarray(e.input_ids))[None]  # (1, T)
        special = torch.as_tensor(np.asarray(e.special_tokens_mask))[None]
        ours = batch_word_ids(ids, special, table)[0]
        theirs = unique_word_ids(e.word_ids, e.sequence_ids)
        assert ours.tolist() == list(theirs), (e.tokens, ours.tolist(), list(theirs))
    assert any(t.startswith("##") for t in tok.encode(PIECES[0]).tokens)  # the check above saw split words


def test_whole_word_training_selects_every_piece_of_a_word_or_none(tok, monkeypatch):
    """TrainConfig(whole_word=True): each step's draw takes all pieces of a word or none; off, words get split."""
    import bert_core.train.trainer as trainer_module
    from bert_core.train.batches import batch_word_ids, continuation_table

    draws, original = [], trainer_module.mask_tokens

    def recording(ids, special, **kw):
        draw = original(ids, special, **kw)
        draws.append((ids, special, draw.labels))
        return draw

    monkeypatch.setattr(trainer_module, "mask_tokens", recording)
    lines = [PIECES[0], PIECES[2], "misunderstandings of unaffable tokenizers"] * 4
    table = continuation_table(tok)

    def split_words(whole: bool) -> int:
        draws.clear()
        make_trainer(tok, lines, whole_word=whole, mlm_probability=0.5).run(steps=6)
        split = 0
        for ids, special, labels in draws:
            words = batch_word_ids(ids, special, table)
            for r in range(ids.shape[0]):
                for w in words[r].unique().tolist():
                    if w >= 0:
                        chosen = (labels[r][words[r] == w] != -100).tolist()
                        split += len(set(chosen)) > 1
        return split

    assert split_words(True) == 0
    assert split_words(False) > 0


def test_whole_word_masking_is_refused_where_it_means_nothing(tok, tmp_path):
    """Whole words come from WordPiece's "##" pieces and belong to mlm: a clm run or a BPE tokenizer is told so."""
    from support.family import hf_tokenizer

    from bert_core.model.tokenization import WordPieceTokenizer
    from bert_core.train.batches import continuation_table

    with pytest.raises(BertCoreError, match="belongs to BERT's masked words"):
        Trainer(new_model(tok, TINY, causal=True), tok, LINES, TrainConfig(objective="clm", whole_word=True))
    hf_tokenizer("roberta", tmp_path).save_pretrained(tmp_path)
    bpe = WordPieceTokenizer.from_dir(tmp_path, family="roberta")
    with pytest.raises(BertCoreError, match="this tokenizer is bpe"):
        continuation_table(bpe)
    assert int(continuation_table(tok).sum()) == sum(p.startswith("##") for p in tok.vocab)


def test_freeze_below_keeps_the_embeddings_and_lower_layers_and_trains_the_rest(tok):
    """freeze_below=1: embeddings (so the tied decoder) and layer 0 stay bit-equal; layer 1 and the heads move."""
    t = make_trainer(tok, freeze_below=1, nsp=False)
    before = {n: p.detach().clone() for n, p in t.model.named_parameters()}
    for _ in range(3):
        t.step()
    after = dict(t.model.named_parameters())
    frozen = [n for n in before if n.startswith(("bert.embeddings.", "bert.encoder.layer.0."))]
    moving = [n for n in before if n.startswith(("bert.encoder.layer.1.", "cls."))]
    assert frozen and moving
    assert all(torch.equal(before[n], after[n]) for n in frozen)
    assert all(not torch.equal(before[n], after[n]) for n in moving if after[n].requires_grad)
    assert t.model.cls.predictions.decoder.weight is t.model.bert.embeddings.word_embeddings.weight  # still tied
    with pytest.raises(BertCoreError, match="freeze_below must be 0..2"):
        make_trainer(tok, freeze_below=3)


def _not_next_draws(data: TextDataset, g: torch.Generator, rounds: int = 1) -> list[tuple[int, int]]:
    """(A, B) of every NotNext row in `rounds` queue fills of batches of 8."""
    draws = []
    for _ in range(rounds):
        data._fill_queue(8, g, nsp=True)
        draws += [(i, j) for batch in data.queue for kind, i, j in batch if kind == 2]
    return draws


def test_same_text_negatives_come_from_as_own_text_and_are_never_a_or_its_successor(tok):
    """nsp_same_text=1: every NotNext B is another sentence of A's text, never A or A's next; all others occur."""
    docs = [[f"{w} sentence number {k} of this text ." for k in range(6)] for w in ("first", "second", "third")]
    data = TextDataset([], tok, seq_len=32, documents=docs, same_text_negatives=1.0)
    g = torch.Generator().manual_seed(0)
    picked: dict[int, set[int]] = {}
    for i, j in _not_next_draws(data, g, rounds=20):
        lo, hi = data.doc_span[i]
        assert lo <= j < hi and j not in (i, i + 1), (i, j)
        picked.setdefault(i, set()).add(j)
    for i, js in picked.items():  # uniform over the text minus A and its successor: each of the 4 shows up
        lo, hi = data.doc_span[i]
        assert js == set(range(lo, hi)) - {i, i + 1}, (i, js)
    plain = TextDataset([], tok, seq_len=32, documents=docs)  # BERT's: B from anywhere, other texts included
    assert any(not (plain.doc_span[i][0] <= j < plain.doc_span[i][1]) for i, j in _not_next_draws(plain, g))


def test_same_genre_negatives_come_from_another_text_of_as_genre(tok):
    """nsp_same_genre=1: every NotNext B is a sentence of another text of A's genre; every such sentence occurs."""
    words = ("first", "second", "third", "fourth", "fifth")
    docs = [[f"{w} sentence number {k} of this text ." for k in range(4)] for w in words]
    genres = ["news", "fiction", "news", "fiction", "news"]
    data = TextDataset([], tok, seq_len=32, documents=docs, genres=genres, same_genre_negatives=1.0)
    doc_of = [d for d, doc in enumerate(docs) for _ in doc]
    g = torch.Generator().manual_seed(0)
    picked: dict[int, set[int]] = {}
    for i, j in _not_next_draws(data, g, rounds=40):
        assert doc_of[j] != doc_of[i] and genres[doc_of[j]] == genres[doc_of[i]], (i, j)
        picked.setdefault(doc_of[i], set()).add(j)
    for d, js in picked.items():  # uniform over the genre's other texts: all their sentences show up
        assert js == {j for j in range(len(doc_of)) if doc_of[j] != d and genres[doc_of[j]] == genres[d]}, (d, js)
    # Half from the same text, half from the genre's other texts: both kinds occur, nothing from the other genre.
    mixed = TextDataset([], tok, seq_len=32, documents=docs, genres=genres, same_text_negatives=0.5,
                        same_genre_negatives=0.5)
    draws = _not_next_draws(mixed, g)
    kinds = [doc_of[j] == doc_of[i] for i, j in draws]
    assert any(kinds) and not all(kinds)
    assert all(genres[doc_of[j]] == genres[doc_of[i]] for i, j in draws)
    with pytest.raises(BertCoreError, match="one genre per document"):
        TextDataset([], tok, seq_len=32, documents=docs, same_genre_negatives=0.5)
    with pytest.raises(BertCoreError, match="add up to <= 1"):
        TextDataset([], tok, seq_len=32, documents=docs, genres=genres, same_text_negatives=0.6,
                    same_genre_negatives=0.6)
