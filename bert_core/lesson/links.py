"""Where a Lesson step's link to its full page opens: the head its slide showed, or the page's section. Computed
from the model as the step's question is, through the same `run` (the step's shared cache), so the link and the
notebook name the head the slide drew."""

from __future__ import annotations

from ..inspect.interventions import head_importance
from ..model.loaded import LoadedModel
from . import attention, heads
from .questions import Run, attention_head, direct


def page_view(m: LoadedModel, question: str, text: str, text_pair: str | None = None, *,
              run: Run | None = None) -> dict:
    """What the full page of the step whose question is `question` opens on besides the sentence: the layer and head
    the slide showed, 1-based as every page shows them ({"layer": 4, "head": 1}: layer 4, head 1), the NSP section
    ({"section": "nsp"}), or nothing ({}). Raises BertCoreError where the sentence does not fit the step."""
    run = run or direct(m)
    if question == "attention_target":
        layer, head = attention_head(m, text, text_pair, run=run)
    elif question == "knockout_head":
        layer, head = heads.top_head(run(head_importance, text, text_pair, layers=heads.last_layer(m)))
    elif question == "learning_signal":
        layer, head = attention.attention_layer_head(m)
    elif question == "next_sentence":
        return {"section": "nsp"}
    else:
        return {}
    return {"layer": layer + 1, "head": head + 1}
