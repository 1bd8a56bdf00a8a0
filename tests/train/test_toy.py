"""The farm corpus: its tokenizer and lines, and a real fixed-seed run that learns its probes (a fresh one does not)."""

from __future__ import annotations

import pytest
import torch

from bert_core.runs.settings import CORPUS_CHOICES
from bert_core.train.toy import (
    ANIMALS,
    FARM_ANSWERS,
    FARM_CLOZE,
    FARM_PROBES,
    NAMES,
    cloze_accuracy,
    farm_lines,
    farm_tokenizer,
    farm_words,
)
from bert_core.train.trainer import PRESETS, Trainer, new_model

FARM = CORPUS_CHOICES["farm"]
LEARNT_BY = 250  # steps of the page's farm settings (seed 0) after which every probe is right (measured: 250)


@pytest.fixture
def one_thread():
    """Runs repeat exactly, and the test takes one core of the shared machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def trainer(objective: str = "mlm", seed: int = 0) -> Trainer:
    """A run exactly as the Training page starts it on the farm corpus."""
    s = FARM.settings(seed=seed, objective=objective)
    tok = FARM.tokenizer()
    model = new_model(tok, PRESETS[s.preset], seed=seed, causal=objective == "clm")
    return Trainer(model, tok, FARM.lines(), s.train_config(), probes=FARM_PROBES)


def top_guesses(t: Trainer) -> list[str]:
    return [top[min(top)][0][0] for top in t.probe().predictions.values()]


def test_the_vocabulary_is_small_whole_words_and_spells_out_the_rest():
    tok = farm_tokenizer()
    assert tok.vocab_size == 110  # ln 110 = 4.7: where the loss starts
    for w in farm_words():
        assert tok.encode(w).tokens[1:-1] == [w]  # every corpus word is one piece
    assert tok.encode("the zebra [MASK] .").tokens == ["[CLS]", "the", "z", "##e", "##b", "##r", "##a", "[MASK]",
                                                       ".", "[SEP]"]  # an unknown word is spelled, not [UNK]


def test_lines_repeat_for_a_seed_and_the_named_probes_never_occur():
    lines = farm_lines()
    assert lines == farm_lines() and lines != farm_lines(seed=1) and len(lines) == 4000
    assert all(line.split()[1] in ANIMALS for line in lines)  # every pattern starts "the <animal>"
    assert {w for line in lines for w in line.split()} <= set(farm_words())
    named = [p.replace("[MASK]", a) for p, a in zip(FARM_PROBES, FARM_ANSWERS) if set(p.split()) & set(NAMES)]
    named += [c.sentence.replace("[MASK]", c.answer) for c in FARM_CLOZE if set(c.sentence.split()) & set(NAMES)]
    assert len(named) == 3 and not set(named) & set(lines)
    assert "the dog barks at tom ." not in lines and "the dog barks at anna ." in lines  # other names: there


def test_a_fresh_model_gets_no_probe_right(one_thread):
    t = trainer()
    guesses = top_guesses(t)
    assert not any(g == a for g, a in zip(guesses, FARM_ANSWERS)), guesses
    assert cloze_accuracy(t.as_loaded())["all"] == 0.0


def test_the_quick_preset_learns_every_probe_on_the_farm_corpus(one_thread):
    """The Training page's default run, real and seeded: right answers after LEARNT_BY steps, not at a quarter."""
    t = trainer()
    t.run(steps=LEARNT_BY // 4)
    early = top_guesses(t)
    assert early != list(FARM_ANSWERS)
    first_loss = t.history[0].loss
    t.run(steps=LEARNT_BY - LEARNT_BY // 4)
    assert top_guesses(t) == list(FARM_ANSWERS)
    assert cloze_accuracy(t.as_loaded()) == {"left": 1.0, "right": 1.0, "all": 1.0}  # both sides' blanks
    last = sum(m.loss for m in t.history[-10:]) / 10
    assert first_loss > 4.0 and last < 0.6  # from about ln V = 4.7


def test_a_causal_model_learns_the_left_blanks_but_not_the_right_ones(one_thread):
    """GPT's objective on the same corpus: a blank only the right context decides stays a guess among animals."""
    t = trainer("clm")
    t.run(steps=100)
    acc = cloze_accuracy(t.as_loaded())
    assert acc["left"] >= 0.8 and acc["right"] <= 0.4, acc
