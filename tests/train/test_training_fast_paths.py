"""The training step's shortcuts compute the same numbers as the plain full forward pass (fp32, 1e-5)."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

import bert_core
from bert_core.model.config import BertConfig
from bert_core.model.heads import BertForPreTraining
from bert_core.runs.settings import bundled_tokenizer
from bert_core.train.trainer import TrainConfig, Trainer, new_model

ATOL = 1e-5
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
DOCS = [
    ["the cat sat on the mat .", "then it slept in the sun .", "a dog came by and barked ."],
    ["she wrote a letter to her mother .", "it was long and kind .", "her mother read it twice ."],
]


def tiny_model(dropout: float = 0.0, layers: int = 2) -> BertForPreTraining:
    cfg = BertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=32, hidden_dropout_prob=dropout,
                     attention_probs_dropout_prob=dropout)
    torch.manual_seed(0)
    return BertForPreTraining(cfg)


def padded_batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 120, (3, 11), generator=g)
    attn = torch.ones_like(ids)
    attn[1, 7:] = 0
    attn[2, 3:] = 0
    types = (torch.arange(11) > 5).long().expand(3, 11).contiguous()
    return ids, types, attn


@pytest.mark.parametrize("layers", [2, 0])
def test_rows_forward_equals_full_forward_at_those_rows(layers):
    m = tiny_model(layers=layers).eval()
    ids, types, attn = padded_batch()
    rows = torch.rand(ids.shape, generator=torch.Generator().manual_seed(2)) < 0.3
    rows[:, 0] = True
    with torch.no_grad():
        full = m(ids, types, attn)  # (B, T, H)
        part = m(ids, types, attn, rows=rows)  # (N, H)
        none = m(ids, types, attn, rows=torch.zeros_like(rows))
    assert part.shape == (int(rows.sum()), 32)
    assert (part - full[rows]).abs().max().item() <= ATOL
    assert none.shape == (0, 32)
    with pytest.raises(ValueError):
        m(ids, types, attn, trace=True, rows=rows)


def test_training_attention_path_equals_the_fused_kernel():
    # A dropout probability > 0 sends training through the explicit softmax(QK^T/sqrt(d) + mask) V
    # lines; at 1e-12 no element is dropped, so it must give what the fused kernel gives in eval.
    m = tiny_model(dropout=1e-12)
    ids, types, attn = padded_batch()
    real = attn.bool()
    m.train()
    trained = m(ids, types, attn)
    m.eval()
    with torch.no_grad():
        fused = m(ids, types, attn)
        traced = m(ids, types, attn, trace=True).hidden_states[-1]
    assert (trained.detach()[real] - fused[real]).abs().max().item() <= ATOL
    assert (traced[real] - fused[real]).abs().max().item() <= ATOL


def test_trainer_step_equals_the_full_forward_loss_and_gradients():
    """One MLM + NSP step: the loss and clipped gradients of the plain loop on the same batch."""
    tok = bundled_tokenizer()
    model = new_model(tok, TINY, nsp=True, seed=0, dropout=0.0)
    ref = copy.deepcopy(model)
    ref.tie_weights()
    cfg = TrainConfig(batch_size=6, seq_len=32, nsp=True, seed=5, warmup_steps=1, max_steps=10)
    t = Trainer(model, tok, [], cfg, documents=DOCS)  # document rows only: every row is an NSP pair
    # The batch and masking draw the step will take, from copies of the data and generator.
    data = copy.copy(t.data)
    data.queue = list(t.data.queue)
    g = torch.Generator()
    g.set_state(t.g.get_state())
    ids, types, attn, special, nsp_labels = data.batch(cfg.batch_size, g, True)
    draw = bert_core.mask_tokens(ids, special, vocab_size=tok.vocab_size, mask_token_id=tok.mask_token_id,
                                 generator=g, special_ids=tok.all_special_ids)
    assert bool((nsp_labels != -100).any()), "the test needs NSP pairs in its batch"

    ref.train()
    hidden = ref(draw.input_ids, types, attn)  # (B, T, H): every position
    sel = draw.labels != -100
    mlm = F.cross_entropy(ref.mlm_logits(hidden[sel]), draw.labels[sel])
    nsp = F.cross_entropy(ref.nsp_logits(ref.bert.pooler(hidden)), nsp_labels, ignore_index=-100)
    (mlm + nsp).backward()
    torch.nn.utils.clip_grad_norm_(ref.parameters(), cfg.grad_clip)

    # The Trainer frees gradients after its step (issue 14): read them as the optimizer sees them.
    names = {id(p): n for n, p in model.named_parameters()}
    grads = {}
    t.opt.register_step_pre_hook(
        lambda opt, args, kwargs: grads.update({names[id(p)]: p.grad.clone() for g in opt.param_groups
                                                for p in g["params"] if p.grad is not None}))
    m = t.step()
    assert m.mlm_loss == pytest.approx(mlm.item(), abs=ATOL)
    assert m.nsp_loss == pytest.approx(nsp.item(), abs=ATOL)
    assert len(grads) == len(names)
    for name, p in ref.named_parameters():
        err = (grads[name] - p.grad).abs().max().item()
        assert err <= ATOL, f"{name}: gradient differs by {err:.2e}"
