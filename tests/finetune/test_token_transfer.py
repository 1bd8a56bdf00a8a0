"""Head only, fit exactly, for taggers and QA readers; pretrained vs fresh weights; sample efficiency.

The cached-vector numbers are checked against the plain path: the finished model run end to end by the
ordinary `TokenFineTuner` / `QAFineTuner` evaluation (fp32, 1e-5), so what the page reports is what the
exported model does. The fit is checked at its optimum (gradient of the convex loss ~ 0).
"""

from __future__ import annotations

import pytest
import torch
from support.toy_tasks import qa_task as toy_task
from support.toy_tasks import tagging_conll as toy_conll

import bert_core
from bert_core.errors import BertCoreError
from bert_core.finetune.cached_head import FIT_STEPS, CachedHeadReader, CachedHeadTagger, HeadFit, SampleEfficiency
from bert_core.finetune.finetuning import FineTuneConfig
from bert_core.finetune.qa import QATask
from bert_core.finetune.tagging import first_sentences, most_frequent_tag_baseline, task_from_conll
from bert_core.finetune.token_finetuning import (
    QAFineTuner,
    TokenFineTuner,
    head_only_by_default,
    qa_lr,
    token_finetune_defaults,
)
from bert_core.runs.finetune_run import FineTuneSession, finetune_bytes, tuner_class
from bert_core.runs.status import FINISHED
from server.slots import SlotManager

ATOL = 1e-5


@pytest.fixture(scope="module")
def base(head_bases):
    return head_bases["nodrop"]


def run_to_end(t):
    while not t.done:
        t.step()
    return t


def test_head_fit_reaches_the_minimum_and_folds_the_standardisation_back():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(300, 8, generator=g) * torch.linspace(0.1, 30, 8) + 5  # badly scaled on purpose
    y = (X[:, 0] * 10 + X[:, 7] / 30 > 5).long() + (X[:, 3] > 15).long()
    raw = X.clone()
    Z, mu, sd = HeadFit.standardize(X)
    assert Z.data_ptr() == X.data_ptr()  # in place: the cache is kept once
    f = HeadFit(Z, y, 3, mu, sd, l2=1e-3).fit(200)
    assert f.converged
    loss, _ = f._objective()
    gW, gb = torch.autograd.grad(loss, [f.W, f.b])
    assert gW.abs().max() < 1e-3 and gb.abs().max() < 1e-3  # the convex loss's minimum
    W, b = f.raw()
    torch.testing.assert_close(raw @ W.T + b, f.logits(Z).detach(), atol=ATOL * 100, rtol=ATOL)


def test_tagger_head_fit_on_cached_vectors_equals_the_model_run_end_to_end(base):
    task = task_from_conll(toy_conll(), seed=0)
    t = CachedHeadTagger(base, task, token_finetune_defaults(base, task))
    C = len(task.labels)
    zero = t.evals[0]  # the zero head: every logit 0, before any vector is read
    assert zero.loss == pytest.approx(torch.log(torch.tensor(float(C))).item(), abs=ATOL)
    assert zero.accuracy == pytest.approx(TokenFineTuner.evaluate(t).accuracy, abs=ATOL)
    run_to_end(t)
    assert t.fit.converged and t.step_count < t.feature_steps + FIT_STEPS
    assert t.cache == {"train": {}, "valid": {}}  # one copy of the vectors: the fit's
    cached, plain = t.evals[-1], TokenFineTuner.evaluate(t)  # plain: the encoder + the fitted classifier layer
    assert cached.accuracy == pytest.approx(plain.accuracy, abs=ATOL) and (cached.confusion == plain.confusion).all()
    assert cached.loss == pytest.approx(plain.loss, abs=ATOL)
    assert cached.accuracy > most_frequent_tag_baseline(task)["accuracy"] - 0.2
    for p in base.model.parameters():
        assert not p.requires_grad or p.grad is None  # the shared encoder is untouched


def test_reader_head_fit_on_cached_vectors_equals_the_model_run_end_to_end(base):
    task = toy_task()
    t = run_to_end(CachedHeadReader(base, task, token_finetune_defaults(base, task, freeze_encoder=True)))
    cached, plain = t.evals[-1], QAFineTuner.evaluate(t)
    assert cached.f1 == pytest.approx(plain.f1, abs=ATOL) and cached.accuracy == pytest.approx(plain.accuracy)
    assert cached.loss == pytest.approx(plain.loss, abs=1e-4)
    assert t.feature_bytes() == 4 * base.config.hidden_size * (sum(map(len, t.train_rows)) +
                                                                sum(map(len, t.valid_rows)))


def test_a_cached_head_needs_a_frozen_encoder(base):
    with pytest.raises(BertCoreError, match="frozen encoder"):
        CachedHeadTagger(base, task_from_conll(toy_conll()), FineTuneConfig(freeze_encoder=False))


def test_sample_efficiency_pretrained_fresh_and_baseline(base):
    task = task_from_conll(toy_conll(), seed=0)
    cfg = token_finetune_defaults(base, task)
    pre = run_to_end(CachedHeadTagger(base, task, cfg))
    fresh = CachedHeadTagger(bert_core.untrained_copy(base, seed=0), task, cfg)  # not read yet: the job reads it
    job = SampleEfficiency({"pre": pre, "fresh": fresh}, [2, 4, 10**6],
                           lambda n: most_frequent_tag_baseline(first_sentences(task, n))["accuracy"])
    n_all = len(pre.train_rows)
    assert job.sizes == [2, 4, n_all] and job.total == fresh.feature_steps + 6
    out = job.run()
    assert job.progress == 1.0 and list(out) == ["pre", "fresh", "baseline"]
    assert all(sizes == [2, 4, n_all] for sizes, _ in out.values())
    assert out["pre"][1][-1] == pytest.approx(pre.evals[-1].accuracy, abs=0.02)  # all n: the run's own fit
    assert out["baseline"][1][-1] == pytest.approx(most_frequent_tag_baseline(task)["accuracy"])
    with pytest.raises(BertCoreError):
        job.step()


def test_the_pages_defaults_tagging_head_only_qa_all_weights(base):
    tag, qa = task_from_conll(toy_conll()), toy_task()
    assert head_only_by_default(tag) and not head_only_by_default(qa)
    assert token_finetune_defaults(base, tag).freeze_encoder
    c = token_finetune_defaults(base, qa)
    assert not c.freeze_encoder and c.epochs >= 1 and c.max_len >= 64
    assert c.lr == qa_lr(base.config) == 3e-4 and c.evals_per_epoch == 2  # the reader's rate (docs/models.md's runs)
    assert tuner_class(tag, token_finetune_defaults(base, tag)) is CachedHeadTagger
    assert tuner_class(qa, token_finetune_defaults(base, qa, True)) is CachedHeadReader
    assert tuner_class(qa, c) is QAFineTuner and tuner_class(tag) is TokenFineTuner


def test_a_session_charges_the_cached_vectors_and_an_untrained_copys_encoder(base):
    task = task_from_conll(toy_conll(), seed=0)
    cfg = token_finetune_defaults(base, task)
    words = sum(map(len, task.train_words)) + sum(map(len, task.valid_words))
    fresh = bert_core.untrained_copy(base, seed=0)
    enc = sum(p.numel() * 4 for p in fresh.model.parameters())
    assert finetune_bytes(fresh, task, cfg) - finetune_bytes(base, task, cfg) == enc
    s = FineTuneSession(slots=SlotManager(1))
    s.setup(fresh, task, cfg)
    s.run_steps(100)
    assert s.state == FINISHED
    feats = s.trainer.feature_bytes()
    assert feats == 4 * base.config.hidden_size * words
    assert s._held_bytes() >= feats + enc
    s.reset()


def test_qa_task_without_room_for_answers_is_refused(base):
    t = toy_task()
    tiny = QATask("toy", t.train[:1], t.valid)
    with pytest.raises(BertCoreError):
        CachedHeadReader(base, tiny, token_finetune_defaults(base, tiny, True))
