"""The three pre-training objectives this project trains, in words and formulas (for pages and docs/models.md).

mlm (BERT), clm (GPT) and rtd (ELECTRA) run on the same encoder layers; they differ in one mask (causal or
not) and one loss. The code is `masking.py` (mlm), `train/trainer.py` (clm: next-token targets) and `rtd.py`.
"""

from __future__ import annotations

OBJECTIVES = {
    "mlm": "BERT: predict the ~15% masked tokens from both sides",
    "clm": "GPT: predict every next token from the ones before it (causal mask)",
    "rtd": "ELECTRA: say for every token whether a small generator replaced it",
}
OBJECTIVE_NAMES = {"mlm": "masked words (BERT)", "clm": "next token (GPT)", "rtd": "replaced tokens (ELECTRA)"}
# Each objective's loss in LaTeX (x̃: the corrupted line; S: the selected positions).
OBJECTIVE_LOSSES = {
    "mlm": r"\mathcal{L}_{\text{MLM}} = -\frac{1}{|S|}\sum_{i \in S} \log p_\theta\big(x_i \mid \tilde{x}\big)",
    "clm": r"\mathcal{L}_{\text{CLM}} = -\frac{1}{T-1}\sum_{t=1}^{T-1} "
           r"\log p_\theta\big(x_{t+1} \mid x_1, \dots, x_t\big)",
    "rtd": r"\mathcal{L} = \mathcal{L}_{\text{MLM}}(G) + 50 \cdot \frac{1}{T}\sum_{t=1}^{T} "
           r"\text{BCE}\big(\sigma(D(\hat{x})_t),\ [\hat{x}_t \neq x_t]\big)",
}
OBJECTIVE_NOTES = {
    "mlm": "BERT's objective: each token is selected with probability p; of those 80% → [MASK], 10% → a random "
           "token, 10% kept; the loss is read at the selected positions only (about 15% of the tokens).",
    "clm": "GPT's objective on the same layers: the causal mask lets position t see positions ≤ t only, and the "
           "loss asks every position for the NEXT token. No masking draw: every token is a target.",
    "rtd": "ELECTRA's objective: a small generator (a quarter as wide, sharing the embeddings) fills the masked "
           "positions by sampling from its own MLM guess; the discriminator, the model you keep, says for EVERY "
           "token x̂_t whether it was replaced. Both learn at once; only the discriminator is saved.",
}
