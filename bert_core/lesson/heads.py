"""The Lesson's knock-out question: knock out the head the guess leans on most; does the guess change?

Computed from the model like every lesson answer (`questions.py`): `head_importance` ranks the heads of
the step's sentence, `knock_out` runs it without the most important one. Through `run`, the step's view
reads the same two cached results.
"""

from __future__ import annotations

import numpy as np

from ..inspect.interventions import head_importance, knock_out
from ..model.loaded import LoadedModel
from .questions import Question, Run, _first_mask, direct

# How the guess can fare without the head; "less sure" means it keeps the top spot at under 90% of its probability.
KNOCKOUT_CHOICES = ("it stays the top guess, about as sure", "it stays the top guess, but clearly less sure",
                    "another word becomes the top guess")
LESS_SURE = 0.9
SMALL = 0.05  # nats: a head whose knock-out moves log p(guess) by less than this barely matters to it


def top_head(importance: np.ndarray) -> tuple[int, int]:
    """(layer, head), 0-based, of the largest importance (the first one on a tie)."""
    layer, head = np.unravel_index(int(np.argmax(importance)), np.shape(importance))
    return int(layer), int(head)


def knockout_head(m: LoadedModel, text: str, text_pair: str | None = None, *, run: Run | None = None) -> Question:
    """Knock out the head the first [MASK]'s guess leans on most: does the guess change?"""
    run = run or direct(m)
    t, pos = _first_mask(m, text, text_pair, run)
    imp = run(head_importance, text, text_pair)  # (L, nh)
    layer, head = top_head(imp)
    nats = float(imp[layer, head])
    small = int((np.abs(imp) < SMALL).sum())
    ko = run(knock_out, text, text_pair, ((layer, head),))
    tokens, p_full, p_without = ko.guesses[pos]
    guess, other = ko.top_full[pos], ko.top_without[pos]
    if other != guess:
        answer = 2
    else:
        answer = 1 if p_without[0] < LESS_SURE * p_full[0] else 0
    L, nh = m.config.num_hidden_layers, m.config.num_attention_heads
    leans = "this guess leans on" if len(t.mask_positions) == 1 else \
        f"the guesses at the {len(t.mask_positions)} [MASK]s lean on (on average)"
    after = (f"the top guess becomes “{other}” ({p_without[tokens.index(other)]:.1%})" if answer == 2
             else f"“{guess}” stays on top")
    return Question(
        prompt=f"The model's guess at the [MASK] is “{guess}” ({p_full[0]:.1%}). Of its {L * nh} heads, layer "
               f"{layer + 1}, head {head + 1} is the one {leans} most. Knock that one head out "
               f"(its output set to zero, the other {L * nh - 1} untouched): what happens to the guess?",
        choices=KNOCKOUT_CHOICES, answer=answer,
        reveal=f"Without layer {layer + 1}, head {head + 1}: p(“{guess}”) {p_full[0]:.1%} → {p_without[0]:.1%} "
               f"(log p falls by {nats:.2f}); {after}. Knocked out one at a time, {small} of the {L * nh} heads "
               f"move log p(“{guess}”) by less than {SMALL} either way.")


QUESTIONS = {"knockout_head": knockout_head}
