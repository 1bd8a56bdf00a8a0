"""ELECTRA's replaced-token detection (Clark et al. 2020), in one place: the generator, the corruption, the loss.

1. Mask ~15% of the tokens (85% of those become [MASK], 15% stay themselves, ELECTRA's recipe).
2. A small generator (the discriminator's depth, a quarter of its width) is trained with MLM on them and
   *samples* a replacement at each masked position from its softmax (no gradient through the sample).
3. The discriminator (our encoder + `discriminator_predictions`) reads the corrupted text and says, for
   every real token, whether it was replaced. A sample that happens to equal the original counts as original.

    loss = L_MLM(generator) + lambda * mean_i BCE(sigmoid(d_i), replaced_i),  lambda = 50
           (the BCE is over every real token, [CLS] and [SEP] included, as ELECTRA and transformers' loss)

The generator and the discriminator share the embeddings (token, position and segment tables and their
LayerNorm), as ELECTRA does; the generator's MLM decoder is tied to the shared token table. Only the
discriminator is kept after training: it saves as transformers' ElectraForPreTraining.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from ..model.config import BertConfig
from ..model.heads import BertForPreTraining
from .masking import MaskingDraw, mask_tokens

RTD_LAMBDA = 50.0  # the discriminator's weight in ELECTRA's loss (the paper's lambda)
GENERATOR_FRACTION = 4  # generator width = discriminator width / 4 (the paper: 1/4 to 1/2 works best)
MASK_FRACTION = 0.85  # of the selected tokens, these become [MASK]; the rest stay themselves (no random swap)


def generator_config(discriminator: BertConfig) -> BertConfig:
    """The generator's config: the discriminator's depth and embedding width E, a quarter of its hidden width.

    Example: a 4-layer 128-wide discriminator (E = 128) -> a 4-layer 32-wide generator with one head, FFN 128,
    reading the shared 128-wide embeddings through a 128 -> 32 projection.
    """
    h = max(discriminator.hidden_size // GENERATOR_FRACTION, 16)
    heads = max(1, discriminator.num_attention_heads // GENERATOR_FRACTION)
    while h % heads:
        heads -= 1
    return replace(discriminator, hidden_size=h, num_attention_heads=heads, intermediate_size=4 * h,
                   embedding_size=discriminator.E, architectures=[])


def new_generator(discriminator: BertForPreTraining, seed: int = 0) -> BertForPreTraining:
    """A fresh ELECTRA generator (an MLM model) that shares `discriminator`'s embedding module."""
    with torch.random.fork_rng():  # initialise from our seed without moving anyone's global RNG
        torch.manual_seed(seed + 1)
        gen = BertForPreTraining(generator_config(discriminator.config), mlm=True, nsp=False)
    gen.bert.embeddings = discriminator.bert.embeddings  # one module, two readers
    gen.tie_weights()  # the decoder reads the shared token table
    return gen


def electra_mask(ids: torch.Tensor, special: torch.Tensor, vocab_size: int, mask_token_id: int,
                 generator: torch.Generator, mlm_probability: float = 0.15, special_ids=None) -> MaskingDraw:
    """ELECTRA's masking of a batch: BERT's draw with 85% [MASK] / 15% kept and no random tokens."""
    return mask_tokens(ids, special, vocab_size=vocab_size, mask_token_id=mask_token_id, generator=generator,
                       mlm_probability=mlm_probability, mask_fraction=MASK_FRACTION, random_fraction=0.0,
                       special_ids=special_ids)


@dataclass
class RtdStep:
    """One forward pass of replaced-token detection: the losses and what they were computed on."""

    loss: torch.Tensor  # gen_loss + lambda * disc_loss (scalar, with gradients)
    gen_loss: torch.Tensor  # generator MLM cross-entropy at the masked positions
    disc_loss: torch.Tensor  # discriminator BCE over every real token
    gen_logits: torch.Tensor  # (N, V) at the N selected positions
    target: torch.Tensor  # (N,) original ids there
    corrupted: torch.Tensor  # (B, T) what the discriminator read
    replaced: torch.Tensor  # (B, T) bool: differs from the original (padding False)
    disc_logits: torch.Tensor  # (B, T)
    real: torch.Tensor  # (B, T) bool: non-padding


def rtd_forward(generator: BertForPreTraining, discriminator: BertForPreTraining, ids: torch.Tensor,
                types: torch.Tensor, attn: torch.Tensor, draw: MaskingDraw, sampler: torch.Generator,
                lam: float = RTD_LAMBDA) -> RtdStep:
    """ELECTRA's loss for a batch (B, T) masked by `draw`; replacements are sampled with `sampler`."""
    sel = draw.labels != -100  # (B, T)
    hidden = generator(draw.input_ids, types, attn, rows=sel)  # (N, Hg): the masked rows only
    gen_logits = generator.mlm_logits(hidden)  # (N, V)
    target = draw.labels[sel]  # (N,)
    gen_loss = F.cross_entropy(gen_logits, target) if target.numel() else gen_logits.sum() * 0.0
    corrupted = ids.clone()
    if target.numel():
        with torch.no_grad():  # a sample is discrete: no gradient reaches the generator through it
            probs = torch.softmax(gen_logits.detach().float(), -1)  # (N, V)
            corrupted[sel] = torch.multinomial(probs, 1, generator=sampler).squeeze(1)
    real = attn.bool()
    replaced = (corrupted != ids) & real  # (B, T)
    disc_logits = discriminator.rtd_logits(discriminator(corrupted, types, attn))  # (B, T)
    disc_loss = F.binary_cross_entropy_with_logits(disc_logits[real], replaced[real].float())
    return RtdStep(gen_loss + lam * disc_loss, gen_loss, disc_loss, gen_logits, target, corrupted, replaced,
                   disc_logits, real)
