"""`BertModel`: the encoder a config describes, and the trace of everything one forward pass computed.

The building blocks are in `layers.py`, the family differences in `families.py`. The forward pass can
return every intermediate the explorer shows (embedding parts, each layer's hidden state, each attention
probability matrix), so what a page draws is what the model computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from .config import BertConfig
from .families import FAMILY_MODULES
from .layers import BertPooler


@dataclass
class EncoderTrace:
    """Everything one forward pass computed, as tensors (the explorer's raw material)."""

    word: torch.Tensor  # (B, T, E) token (word-piece) embeddings; E = H except for ALBERT
    position: torch.Tensor  # (B, T, E)
    segment: torch.Tensor  # (B, T, E) token-type embeddings; zeros for DistilBERT, which has no segment table
    sum: torch.Tensor  # (B, T, E) word + position + segment
    hidden_states: list[torch.Tensor]  # L+1 x (B, T, H): LayerNorm(sum) (ALBERT: projected to H), then each layer
    attentions: list[torch.Tensor]  # L x (B, nh, T, T)
    pooled: torch.Tensor | None  # (B, H) or None without a pooler
    normed: torch.Tensor | None = None  # (B, T, E) LayerNorm(sum) before ALBERT's E -> H projection (ALBERT only)


@dataclass
class Patch:
    """Activation patching as data: in batch row b, hidden state `layer[b]` at `position[b]` becomes `value[b]`.

    Hidden state 0 is the embeddings' output (what layer 1 reads), l is encoder layer l's output; the
    replaced vector is what every later layer reads (TransformerLens's `blocks.{l}.hook_resid_pre`).
    A row whose `layer` is -1 runs unpatched.
    Example: layer [2, -1], position [5, 0], value v (2, H): row 0 reads v[0] as layer 2's output at token 5.
    """

    layer: torch.Tensor  # (B,) long, 0..L, or -1: no patch in this row
    position: torch.Tensor  # (B,) long, 0..T-1
    value: torch.Tensor  # (B, H) the vector put there

    def apply(self, i: int, x: torch.Tensor) -> torch.Tensor:
        """Hidden state i, (B, T, H), with this patch's vectors put in the rows that patch it (a copy if any)."""
        rows = (self.layer == i).nonzero().flatten()  # (n,)
        if rows.numel() == 0:
            return x
        x = x.clone()  # the unpatched tensor may be another row's (or the caller's) too
        x[rows, self.position[rows]] = self.value[rows].to(x.dtype)
        return x


class BertModel(nn.Module):
    """The encoder: embeddings, L layers, optional pooler (HF's `BertModel`), with the config's family's modules."""

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        super().__init__()
        self.config = config
        embeddings, encoder = FAMILY_MODULES[config.model_type]
        self.embeddings = embeddings(config)
        self.encoder = encoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, trace: bool = False, rows=None,
                causal: bool | None = None, head_mask=None, patch: Patch | None = None, start=None,
                inputs_embeds=None):
        """Return the last hidden state (B, T, H), or an `EncoderTrace` when `trace` is set.

        `inputs_embeds` (B, T, E), when given, are the word vectors the embeddings read in place of the
        table's rows for `input_ids` (HF's `inputs_embeds`), e.g. a leaf to differentiate with respect to;
        the family adds its own position and segment terms (and ALBERT's/ELECTRA's E -> H projection).

        Two interventions, options of this same pass (so every trace field is the changed model's):
        `head_mask` (L, nh) or (B, L, nh), 1 = keep, 0 = knock out: head h of layer l has its context vector
        multiplied by head_mask[..., l, h] before `attention.output.dense` (transformers v4's `head_mask`);
        `patch` (a `Patch`) replaces chosen hidden states, one position per batch row. A batch of variants
        (one knocked-out head per row, one patched place per row) runs as one pass.
        `start` (l, h) resumes the pass at hidden state l = h, (1 or B, T, H), a state an earlier pass of the
        same input computed (0: the embeddings' output): layers 1..l are not run again, since variants that
        change nothing before layer l+1 share them (no trace; `input_ids` still gives the shape and mask).

        `causal` overrides the config's mask kind (None: `config.is_decoder`): the same weights read
        bidirectionally (BERT) or left to right (GPT), as the BERT vs GPT page shows.

        `rows`, a (B, T) bool mask, asks for the last hidden state at those positions only, (N, H),
        equal to `forward(...)[rows]`: the last layer's keys and values still read every token, but its
        output projection and feed-forward run on N rows, not B*T (training needs only masked rows).
        """
        if rows is not None and trace:
            raise ValueError("rows and trace cannot be combined: a trace holds every position")
        if start is not None and trace:
            raise ValueError("start and trace cannot be combined: a trace holds every layer")
        if start is not None and inputs_embeds is not None:
            raise ValueError("start and inputs_embeds cannot be combined: a resumed pass reads no embeddings")
        if rows is not None and patch is not None:
            raise ValueError("rows and patch cannot be combined: a patch may replace any position of the last layer")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        mask = None
        if attention_mask is not None:
            # 0 where a token may be attended to, the most negative float where it is padding:
            # softmax then gives padding exactly zero weight (HF does the same).
            keep = attention_mask[:, None, None, :].to(torch.bool)  # (B, 1, 1, T)
            dtype = self.embeddings.word_embeddings.weight.dtype
            mask = torch.zeros(keep.shape, dtype=dtype, device=input_ids.device)
            mask = mask.masked_fill(~keep, torch.finfo(dtype).min)
        if self.config.is_decoder if causal is None else causal:
            # GPT's mask, BERT's layers: query i may attend to keys j <= i only (the future gets no weight).
            t = input_ids.shape[1]
            dtype = self.embeddings.word_embeddings.weight.dtype
            future = torch.ones(t, t, dtype=torch.bool, device=input_ids.device).triu(1)[None, None]  # (1,1,T,T)
            mask = (torch.zeros(future.shape, dtype=dtype, device=input_ids.device) if mask is None else mask)
            mask = mask.masked_fill(future, torch.finfo(dtype).min)
        if start is None:
            first = 0
            x, parts = self.embeddings(input_ids, token_type_ids, parts=trace, word=inputs_embeds)
            x, normed = self.encoder.project_in(x)  # ALBERT: (B, T, E) -> (B, T, H); normed = its input
        else:
            first, x = start
            x = x.expand(input_ids.shape[0], -1, -1)  # (B, T, H)
        if head_mask is not None:
            head_mask = head_mask.to(x.dtype)
            head_mask = head_mask[None] if head_mask.dim() == 2 else head_mask  # (B or 1, L, nh)
        if patch is not None:
            x = patch.apply(first, x)
        hidden, attn = [x], []
        last = len(self.encoder.layer) - 1
        for i, block in enumerate(self.encoder.layer):
            if i < first:  # resumed at hidden state `first`: these layers' outputs were given
                continue
            x, probs = block(x, mask, need_probs=trace, rows=rows if i == last else None,
                             head_mask=None if head_mask is None else head_mask[:, i])  # (B or 1, nh)
            if patch is not None:
                x = patch.apply(i + 1, x)
            if trace:
                hidden.append(x)
                attn.append(probs)
        if not trace:
            return x if rows is None or last >= 0 else x[rows]
        pooled = self.pooler(x) if self.pooler is not None else None
        return EncoderTrace(*parts, hidden_states=hidden, attentions=attn, pooled=pooled, normed=normed)
