"""Every page's training run shares this server process's slot cap and byte ledger (server/slots.py,
server/ledger.py); bert_core's runs only know the protocols (`bert_core.runs.sharing`)."""

from __future__ import annotations

from server import ledger, slots


def shared() -> dict:
    """The keywords that put a run (`TrainingSession`, `FineTuneSession`, `ObjectiveComparison.build`) under this
    process's slots and ledger. Read at each call, so that a test's own slot manager or ledger takes their place."""
    return {"slots": slots.SLOTS, "memory": ledger.MEMORY}
