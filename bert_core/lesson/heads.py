"""The Lesson's knock-out question: knock out the last layer's head the guess leans on most; does it change?

Computed from the model like every lesson answer (`questions.py`): `head_importance` ranks the last layer's
heads on the step's sentence (nh variants of one layer each: a Lesson rerun stays fast on any model; the
full page ranks all L x nh), `knock_out` runs it without the most important one. Through `run`, the step's
view reads the same two cached results.
"""

from __future__ import annotations

import numpy as np

from ..inspect.interventions import head_importance, knock_out
from ..model.loaded import LoadedModel
from .naming import model_name
from .questions import Question, Run, cap, direct

# How the guess can fare without the head; "less sure" means it keeps the top spot at under 90% of its probability.
KNOCKOUT_CHOICES = ("it stays the top guess, about as sure", "it stays the top guess, but clearly less sure",
                    "another word becomes the top guess")
LESS_SURE = 0.9
SMALL = 0.05  # nats: a head whose knock-out moves log p(guess) by less than this barely matters to it


def last_layer(m: LoadedModel) -> tuple[int]:
    """The layers the question ranks: the last one (0-based)."""
    return (m.config.num_hidden_layers - 1,)


def top_head(importance: np.ndarray) -> tuple[int, int]:
    """(layer, head), 0-based, of the largest importance, NaN (not ranked) left out; the first one on a tie."""
    layer, head = np.unravel_index(int(np.nanargmax(importance)), np.shape(importance))
    return int(layer), int(head)


def knockout_head(m: LoadedModel, text: str, text_pair: str | None = None, *, run: Run | None = None) -> Question:
    """Knock out the head the first [MASK]'s guess leans on most: does the guess change?"""
    run = run or direct(m)
    imp = run(head_importance, text, text_pair, layers=last_layer(m))  # (L, nh), NaN but the last layer
    layer, head = top_head(imp)
    nats = float(imp[layer, head])
    small = int((np.abs(imp[layer]) < SMALL).sum())
    ko = run(knock_out, text, text_pair, ((layer, head),))
    pos = min(ko.guesses)  # the first [MASK]
    tokens, p_full, p_without = ko.guesses[pos]
    guess, other = ko.top_full[pos], ko.top_without[pos]
    if other != guess:
        answer = 2
    else:
        answer = 1 if p_without[0] < LESS_SURE * p_full[0] else 0
    nh = m.config.num_attention_heads
    leans = "this guess leans on" if len(ko.guesses) == 1 else \
        f"the guesses at the {len(ko.guesses)} [MASK]s lean on (on average)"
    after = (f"the top guess becomes “{other}” ({p_without[tokens.index(other)]:.1%})" if answer == 2
             else f"“{guess}” stays on top")
    return Question(
        prompt=f"{cap(model_name(m).possessive)} guess at the [MASK] is “{guess}” ({p_full[0]:.1%}). Of the {nh} "
               f"heads of its last layer, head {head + 1} (layer {layer + 1}, head {head + 1}) is the one {leans} "
               "most. Knock that one head out (its output set to zero, every other head of every layer "
               "untouched): what happens to the guess?",
        choices=KNOCKOUT_CHOICES, answer=answer,
        reveal=f"Without layer {layer + 1}, head {head + 1}: p(“{guess}”) {p_full[0]:.1%} → {p_without[0]:.1%} "
               f"(log p falls by {nats:.2f}); {after}. Knocked out one at a time, {small} of the {nh} heads of "
               f"that layer move log p(“{guess}”) by less than {SMALL} either way.")


QUESTIONS = {"knockout_head": knockout_head}
