"""Extractive QA: the WordNet task, SQuAD's metrics, the heuristic baseline, the QA loop and its export.

One step of `QAFineTuner` is checked against a plain loop on transformers' BertForQuestionAnswering with the
same weights and batch (fp32, 1e-5); the exported folder loads in transformers with the same logits.
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
import torch
from support.plain_loop import assert_same_weights, clip_and_adamw_step, hf_twin
from support.toy_tasks import qa_task as toy_task

import bert_core
from bert_core.finetune.finetuning import FineTuneConfig
from bert_core.finetune.qa import (
    builtin_qa_task,
    exact_match,
    heuristic_answer,
    heuristic_baseline,
    normalize_answer,
    token_f1,
)
from bert_core.finetune.token_finetuning import QAFineTuner, answer_tokens
from bert_core.model.token_heads_io import save_token_model
from bert_core.runs.finetune_run import FineTuneSession
from bert_core.runs.status import FINISHED
from server.slots import SlotManager

ATOL = 1e-5
@pytest.fixture(scope="module")
def bases(head_bases):
    return head_bases


# --- the task, metrics, baseline ------------------------------------------------------------------


def test_builtin_task_answers_sit_at_their_offsets_once_and_splits_are_disjoint():
    import re

    task = builtin_qa_task()
    assert (len(task.train), len(task.valid)) == (5_000, 400)  # scripts/build_qa.py
    for e in task.train + task.valid:
        assert e.context[e.answer_start:e.answer_start + len(e.answer_text)] == e.answer_text
        assert e.question.startswith("Which word here means ") and e.question.endswith("?")
        hits = re.findall(rf"(?<![\w-]){re.escape(e.answer_text)}(?![\w-])", e.context, flags=re.I)
        assert len(hits) == 1, e
    assert not {e.question for e in task.valid} & {e.question for e in task.train}


def test_squad_normalisation_exact_match_and_f1_by_hand():
    assert normalize_answer("The  Cat's, a pet!") == "cats pet"
    assert exact_match("the Bank", "bank") == 1.0 and exact_match("banks", "bank") == 0.0
    assert token_f1("the river bank", "bank") == pytest.approx(2 * 0.5 * 1 / 1.5)  # P = 1/2, R = 1
    assert token_f1("sat on the mat", "on a mat today") == pytest.approx(2 * (2 / 3) * (2 / 3) / (4 / 3))
    assert token_f1("", "bank") == 0.0 and token_f1("cat", "dog") == 0.0


def test_heuristic_reads_the_best_overlapping_sentence():
    q = "Which word here means in a horizontal direction?"
    c = "a vacant mind. space used vertically as well as horizontally. the summer was sultry."
    assert heuristic_answer(q, c) == "horizontally"


def test_heuristic_baseline_is_what_the_readme_says():
    b = heuristic_baseline(builtin_qa_task())
    assert (round(100 * b["exact_match"], 1), round(100 * b["f1"], 1)) == (28.2, 29.4)


def test_answer_tokens_cover_the_answer_characters(bases):
    tok = bases["mlm"].tokenizer
    enc = tok.encode("which is the cat ?", "the unaffable cat sat.")
    s, e = answer_tokens(enc.offsets, enc.sequence_ids, 4, 13)  # "unaffable": un ##aff ##able
    assert enc.tokens[s:e + 1] == ["un", "##aff", "##able"]
    assert answer_tokens(enc.offsets, enc.sequence_ids, 14, 17) == (e + 1, e + 1)
    cut = tok.encode("which is the cat ?", "the unaffable cat sat.", max_length=10)
    assert answer_tokens(cut.offsets, cut.sequence_ids, 18, 21) is None  # "sat" was cut off


# --- the loop ----------------------------------------------------------------------------------------


def test_one_step_equals_a_plain_loop_on_transformers_with_the_same_weights(bases, tmp_path):
    """Same batch, answer tokens found by hand, (CE(start) + CE(end)) / 2 with padding out of the softmax,
    clipping, AdamW: the loss and every weight after the step agree with transformers (fp32, 1e-5)."""
    from transformers import AutoModelForQuestionAnswering

    base, task = bases["nodrop"], toy_task()
    cfg = FineTuneConfig(lr=1e-3, epochs=1, batch_size=4, max_len=64, seed=5)
    ft = QAFineTuner(base, task, cfg)
    hf = hf_twin(ft, AutoModelForQuestionAnswering, tmp_path / "before")
    g = torch.Generator().manual_seed(cfg.seed)
    idx = torch.randperm(len(task.train), generator=g)[: cfg.batch_size].tolist()
    encs = [base.tokenizer.encode(task.train[j].question, task.train[j].context) for j in idx]
    starts, ends = [], []
    for j, enc in zip(idx, encs):  # the answer's tokens: the context tokens inside its characters
        ex = task.train[j]
        inside = [t for t, (sid, off) in enumerate(zip(enc.sequence_ids, enc.offsets)) if sid == 1
                  and off[0] >= ex.answer_start and off[1] <= ex.answer_start + len(ex.answer_text)]
        starts.append(inside[0])
        ends.append(inside[-1])
    T = max(len(e.input_ids) for e in encs)

    def pad(x, v):
        return torch.tensor([list(r) + [v] * (T - len(r)) for r in x])

    ids = pad([e.input_ids for e in encs], base.tokenizer.pad_token_id)
    types = pad([e.token_type_ids for e in encs], 0)
    mask = pad([[1] * len(e.input_ids) for e in encs], 0)
    out = hf(input_ids=ids, token_type_ids=types, attention_mask=mask)
    neg = torch.finfo(torch.float32).min
    s_log = out.start_logits.masked_fill(mask == 0, neg)
    e_log = out.end_logits.masked_fill(mask == 0, neg)
    loss = (torch.nn.functional.cross_entropy(s_log, torch.tensor(starts))
            + torch.nn.functional.cross_entropy(e_log, torch.tensor(ends))) / 2
    loss.backward()
    clip_and_adamw_step(hf, cfg, ft.lr_at(0))
    step = ft.step()
    assert abs(step.loss - loss.item()) <= ATOL
    assert_same_weights(ft, hf, AutoModelForQuestionAnswering, tmp_path / "after", ATOL)


@pytest.mark.parametrize("fam", ["bert", "roberta", "distilbert"])
def test_exported_reader_loads_in_transformers_and_scores_as_answer_does(bases, tmp_path, fam):
    """HF's logits = ours on each validation example; evaluate's exact match and F1 (padded batches) = those of
    bert_core.answer's best span, one example at a time; the base model is left alone."""
    from transformers import AutoModelForQuestionAnswering

    if fam == "bert":
        base = bases["mlm"]
    else:
        from support.family import write_family_checkpoint

        write_family_checkpoint(tmp_path / "base", fam, "mlm")
        base = bert_core.load_model(str(tmp_path / "base"))
    before = {k: v.clone() for k, v in base.model.state_dict().items()}
    task = toy_task()
    ft = QAFineTuner(base, task, FineTuneConfig(lr=3e-3, epochs=3, batch_size=4))
    ft.run(steps=8)
    ev = ft.evaluate()
    for k, v in base.model.state_dict().items():
        assert torch.equal(v, before[k]), k
    save_token_model(ft.as_loaded(), tmp_path / "out")
    hf, info = AutoModelForQuestionAnswering.from_pretrained(tmp_path / "out", attn_implementation="eager",
                                                             output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    hf.eval()
    back = bert_core.load_model(str(tmp_path / "out"))
    em, f1, spans = [], [], []
    for ex in task.valid:
        enc = base.tokenizer.encode(ex.question, ex.context)
        kw = {"token_type_ids": torch.from_numpy(enc.token_type_ids)[None]} if fam == "bert" else {}
        with torch.no_grad():
            theirs = hf(input_ids=torch.from_numpy(enc.input_ids)[None], **kw)
        r = bert_core.answer(back, ex.question, ex.context, top_k=1)
        assert np.abs(r.start_logits - theirs.start_logits[0].numpy()).max() <= ATOL
        assert np.abs(r.end_logits - theirs.end_logits[0].numpy()).max() <= ATOL
        em.append(exact_match(r.spans[0][0], ex.answer_text))
        f1.append(token_f1(r.spans[0][0], ex.answer_text))
        spans.append(r.spans[0][0])
    assert ev.accuracy == pytest.approx(np.mean(em)) and ev.f1 == pytest.approx(np.mean(f1))
    assert ft.last_predictions == spans  # each question's own span (evaluate batches them by length)


def test_reader_learns_the_toy_task(bases):
    ft = QAFineTuner(bases["mlm"], toy_task(36), FineTuneConfig(lr=3e-3, epochs=15, batch_size=6, evals_per_epoch=1))
    ft.run()
    assert ft.evals[-1].loss < ft.evals[0].loss / 2  # (a random tiny encoder: exact spans stay hit and miss)
    first, last = ft.history[:ft.steps_per_epoch], ft.history[-ft.steps_per_epoch:]
    assert np.mean([m.accuracy for m in last]) >= np.mean([m.accuracy for m in first]) + 0.25


def test_session_answers_and_exports_a_reader_hf_reads(bases, tmp_path):
    from transformers import AutoModelForQuestionAnswering

    fs = FineTuneSession(slots=SlotManager(capacity=1))
    fs.setup(bases["mlm"], toy_task(), FineTuneConfig(lr=3e-3, epochs=1, batch_size=6))
    fs.start()
    while fs.state != FINISHED:
        fs.advance(1.0)
    assert len([e for e in fs.trainer.evals if e.step == fs.step]) == 1
    r = fs.answer("which is the cat ?", "the dog sat. the cat sat on the mat.", top_k=2)
    assert len(r.spans) == 2 and r.spans[0][3] >= r.spans[1][3]
    with zipfile.ZipFile(io.BytesIO(fs.checkpoint_zip())) as z:
        z.extractall(tmp_path)
    assert json.loads((tmp_path / "training_report.json").read_text())["steps"] == fs.step
    hf = AutoModelForQuestionAnswering.from_pretrained(tmp_path, attn_implementation="eager").eval()
    enc = fs.trainer.tok.encode("which is the cat ?", "the dog sat. the cat sat on the mat.")
    with torch.no_grad():
        out = hf(input_ids=torch.from_numpy(enc.input_ids)[None],
                 token_type_ids=torch.from_numpy(enc.token_type_ids)[None])
    assert np.abs(r.start_logits - out.start_logits[0].numpy()).max() <= ATOL
