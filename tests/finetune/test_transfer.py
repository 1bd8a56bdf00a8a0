"""Transfer learning's shared pieces: the page's recipe (finetune_defaults), what a run costs (bytes, time),
the frozen word-embedding matrix, mean pooling and the head-only run on cached features."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from support.toy_tasks import classification_task as toy_task

import bert_core
from bert_core.finetune.budget import activation_bytes, saved_tensor_bytes, step_seconds
from bert_core.finetune.finetuning import FineTuneConfig, FineTuner, finetune_defaults, run_cost
from bert_core.finetune.tasks import ClassificationTask, builtin_tasks
from bert_core.model.classifiers import BertForSequenceClassification
from bert_core.model.config import BertConfig


@pytest.fixture(scope="module")
def bases(tiny_dirs):
    return {k: bert_core.load_model(str(tiny_dirs[k][0])) for k in ("pretraining", "mlm")}


def _saved_bytes(model, B: int, T: int) -> int:
    """What autograd really keeps for the backward pass of one forward, counted by torch's saved-tensor hooks."""
    x = torch.randint(5, 90, (B, T))
    return saved_tensor_bytes(lambda: model.logits(x, None, torch.ones_like(x)), model.parameters())


@pytest.mark.parametrize("H,ff,nh,L", [(32, 37, 4, 2), (64, 300, 4, 3), (96, 384, 12, 1)])
@pytest.mark.parametrize("B,T", [(2, 16), (3, 64)])
def test_activation_bytes_match_what_autograd_saves(H, ff, nh, L, B, T):
    cfg = BertConfig(vocab_size=100, hidden_size=H, num_hidden_layers=L, num_attention_heads=nh,
                     intermediate_size=ff, max_position_embeddings=128)
    torch.manual_seed(0)
    model = BertForSequenceClassification(cfg, ["a", "b"]).train()
    measured = _saved_bytes(model, B, T)
    assert abs(activation_bytes(cfg, B, T) / measured - 1) < 0.06


def test_step_time_grows_with_batch_length_and_all_weights():
    cfg = BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256)
    assert step_seconds(cfg, 16, 32) == pytest.approx(2 * step_seconds(cfg, 8, 32))
    assert step_seconds(cfg, 8, 64) > 2 * step_seconds(cfg, 8, 32) * 0.99
    assert step_seconds(cfg, 8, 32, trainable_encoder=False) == pytest.approx(step_seconds(cfg, 8, 32) / 3)


def test_defaults_follow_the_model_and_the_task_size(bases):
    big = toy_task()
    small = ClassificationTask("small", big.labels, big.train_texts[:6], big.train_labels[:6], big.valid_texts,
                               big.valid_labels)
    base = bases["pretraining"]
    a, b = finetune_defaults(base, big), finetune_defaults(base, big)
    assert a == b and a.pooling == "cls" and not a.freeze_encoder  # BERT: [CLS] + pooler
    assert finetune_defaults(base, small).epochs >= a.epochs  # a smaller task gets at least as many epochs
    assert finetune_defaults(base, big, seconds=1e-6).epochs == 1
    a.validate()
    minilm = bert_core.load_model()
    topic = builtin_tasks()["topic"]
    d = finetune_defaults(minilm, topic)
    assert d.pooling == "mean" and d.freeze_word_embeddings and d.batch_size == 16 and 16 <= d.max_len <= 64
    cost = run_cost(minilm, topic, d)
    assert 60 <= cost["seconds"] <= 180  # about two minutes on the reference machine
    assert cost["trainable"] < sum(p.numel() for p in minilm.model.bert.parameters()) - 11_000_000


def test_the_recipe_fits_a_servers_budget_freezing_words_then_the_encoder(bases):
    m, task = bases["mlm"], toy_task()
    free = finetune_defaults(m, task)
    assert not free.freeze_encoder and not free.freeze_word_embeddings  # a tiny vocabulary: a small matrix
    need = run_cost(m, task, free)["bytes"]
    assert finetune_defaults(m, task, max_bytes=need) == free
    fewer = finetune_defaults(m, task, max_bytes=need - 1)
    assert fewer == replace(free, freeze_word_embeddings=True) and run_cost(m, task, fewer)["bytes"] < need
    assert finetune_defaults(m, task, max_bytes=1) == finetune_defaults(m, task, freeze_encoder=True)


def test_frozen_word_embeddings_are_shared_untouched_and_not_trained(bases):
    base = bases["mlm"]
    before = base.model.bert.embeddings.word_embeddings.weight.clone()
    ft = FineTuner(base, toy_task(), FineTuneConfig(freeze_word_embeddings=True, lr=1e-2, epochs=1, batch_size=4))
    w = ft.model.bert.embeddings.word_embeddings.weight
    assert w.data_ptr() == base.model.bert.embeddings.word_embeddings.weight.data_ptr()  # shared, not a copy
    assert all(p is not w for p in ft.trainable)
    layer = ft.model.bert.encoder.layer[0].attention.self.query.weight
    q0 = layer.clone()
    ft.run(steps=2)
    assert torch.equal(base.model.bert.embeddings.word_embeddings.weight, before) and w.grad is None
    assert not torch.equal(layer, q0)  # the rest trains


def test_mean_pooling_is_the_mean_of_the_real_tokens(bases):
    ft = FineTuner(bases["mlm"], toy_task(), FineTuneConfig(pooling="mean", epochs=1, batch_size=4))
    ft.run(steps=2)
    ev = ft.evaluate(pooled=True)
    m = ft.model.eval()
    with torch.no_grad():  # a plain loop, one text at a time (no padding)
        for i, row in enumerate(ft.valid_rows[:4]):
            h = m.bert(torch.tensor([row]))[0]  # (T, H)
            assert torch.allclose(torch.from_numpy(ev.pooled[i]), h.mean(0), atol=1e-5)
    probs = bert_core.classify(ft.as_loaded(), ft.task.valid_texts[0])  # the same pooling outside the loop
    with torch.no_grad():
        p = m.head(m.bert(torch.tensor([ft.valid_rows[0]]))[0].mean(0)[None]).softmax(-1)[0]
    assert [round(x, 5) for _, x in probs] == [round(x, 5) for x in p.tolist()]
    with pytest.raises(bert_core.BertCoreError, match="mean of the tokens"):
        from bert_core.model.classifier_io import classifier_zip
        classifier_zip(ft.as_loaded())


@pytest.mark.parametrize("kind,pooling", [("pretraining", "cls"), ("mlm", "cls"), ("mlm", "mean")])
def test_head_only_on_cached_features_matches_running_the_encoder(bases, kind, pooling):
    """A head-only run reads features cached once per text; they equal the frozen encoder's output."""
    ft = FineTuner(bases[kind], toy_task(), FineTuneConfig(freeze_encoder=True, pooling=pooling, epochs=3,
                                                           batch_size=4, lr=1e-2))
    ft.run()
    assert len(ft._features["train"]) == len(ft.train_rows)
    ev = ft.evaluate()
    m = ft.model.eval()
    uncached = []
    with torch.no_grad():
        for row in ft.valid_rows:
            h = m.bert(torch.tensor([row]))
            p = h[0].mean(0)[None] if pooling == "mean" else m.pooled(h)
            uncached.append(torch.nn.functional.cross_entropy(m.head(p), ft.valid_y[len(uncached)][None]).item())
    assert abs(ev.loss - sum(uncached) / len(uncached)) < 1e-5


def test_run_cost_covers_what_a_run_holds_after_a_step(bases):
    from bert_core.runs.memory import tensor_bytes

    base, task = bases["mlm"], toy_task()
    cfg = FineTuneConfig(epochs=1, batch_size=4)
    cost = run_cost(base, task, cfg)
    ft = FineTuner(base, task, cfg)
    ft.run(steps=1)
    held = tensor_bytes(ft.opt) + 2 * tensor_bytes([p.detach() for p in ft.trainable])  # moments, weights, grads
    assert held <= cost["bytes"] <= held + 2 * activation_bytes(base.config, 4, cfg.max_len) + 20 * 2**20
