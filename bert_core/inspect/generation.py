"""Left-to-right generation from a causal model (GPT's way), with the probability of every step.

A model whose config says `is_decoder` (transformers' BertLMHeadModel) runs BERT's layers under the
causal mask: position i sees positions <= i, so the vocabulary distribution at the last position is
a guess of the NEXT token. Generation appends it and runs again:

    p(x_{t+1} | x_1..x_t) = softmax(W_e LN(gelu(W h_t + b)) + b_v)        (the MLM head, read at the last position)
    greedy: x_{t+1} = argmax p;   top-k / temperature: sample from softmax(logits / T) over the k best.

A bidirectional BERT cannot do this: it was trained to fill a [MASK] from both sides, and it has never
had to predict what comes after the last word.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..errors import BertCoreError
from ..model.loaded import LoadedModel

STRATEGIES = ("greedy", "sample")
MAX_NEW_TOKENS = 200


@dataclass
class Generation:
    """What a causal model wrote after a prompt, token by token."""

    text: str  # the new tokens, joined back into text
    steps: list[tuple[str, float]]  # (token, probability under the distribution it was chosen from)
    prompt_ids: list[int]  # [CLS] + the prompt's pieces (no final [SEP])
    new_ids: list[int]
    notes: list[str] = field(default_factory=list)


def _join(tokens: list[str]) -> str:
    """WordPiece tokens back to text: "##" pieces glue to the previous one (RoBERTa's "Ġ" marks a space)."""
    out = ""
    for t in tokens:
        if t.startswith("##"):
            out += t[2:]
        elif t.startswith("Ġ"):
            out += " " + t[1:]
        else:
            out += (" " if out else "") + t
    return out.strip()


@torch.no_grad()
def generate(m: LoadedModel, prompt: str, max_new_tokens: int = 20, strategy: str = "greedy",
             top_k: int | None = None, temperature: float = 1.0, seed: int = 0) -> Generation:
    """Continue `prompt` with `m` (a causal model), `max_new_tokens` at most, stopping at the end token."""
    if not m.config.is_decoder:
        raise BertCoreError(f"{m.name} is bidirectional (a BERT): it fills a [MASK] from both sides and cannot "
                            "continue a text. Load a causal model (config is_decoder: true, e.g. a "
                            "BertLMHeadModel) or train one with the clm objective.")
    if not m.has_mlm:
        raise BertCoreError(f"{m.name} has no language-model head to predict the next token")
    if strategy not in STRATEGIES:
        raise BertCoreError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    if not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
        raise BertCoreError(f"max_new_tokens must be between 1 and {MAX_NEW_TOKENS}")
    if temperature <= 0 or (top_k is not None and top_k < 1):
        raise BertCoreError("temperature must be above 0 and top_k at least 1")
    enc = m.tokenizer.encode(prompt, max_length=m.max_length)
    ids = [int(i) for i in enc.input_ids[:-1]]  # [CLS] + pieces: the model continues after the last piece
    prompt_ids, new, steps, notes = list(ids), [], [], []
    end = m.tokenizer.sep_token_id
    gen = torch.Generator().manual_seed(seed)
    for _ in range(max_new_tokens):
        if len(ids) >= m.max_length:
            notes.append(f"Stopped at the model's {m.max_length} positions.")
            break
        hidden = m.model.bert(torch.as_tensor([ids]))  # (1, T, H)
        logits = m.model.mlm_logits(hidden[0, -1]).double()  # (V,): the next token's scores
        if strategy == "greedy":
            probs = torch.softmax(logits, -1)
            tok = int(torch.argmax(logits))
        else:
            scaled = logits / temperature
            if top_k is not None:
                kth = torch.topk(scaled, min(top_k, scaled.numel())).values[-1]
                scaled = scaled.masked_fill(scaled < kth, float("-inf"))
            probs = torch.softmax(scaled, -1)
            tok = int(torch.multinomial(probs.float(), 1, generator=gen))
        ids.append(tok)
        new.append(tok)
        steps.append((m.tokenizer.id_to_token(tok), float(probs[tok])))
        if tok == end:
            break
    words = [m.tokenizer.id_to_token(i) for i in new if i != end]
    return Generation(_join(words), steps, prompt_ids, new, notes)

