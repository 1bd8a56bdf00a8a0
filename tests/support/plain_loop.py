"""A plain transformers training step to check our loops against: the same weights, clipping and AdamW."""

from __future__ import annotations

import torch

from bert_core.model.token_heads_io import save_token_model


def hf_twin(ft, auto_cls, folder):
    """`ft`'s model as transformers loads it from our export (every key in place), in train mode."""
    save_token_model(ft.as_loaded(), folder)
    hf, info = auto_cls.from_pretrained(folder, attn_implementation="eager", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    return hf.train()


def clip_and_adamw_step(hf, cfg, lr: float) -> None:
    """Clip the gradient norm and take one AdamW step as BERT's recipe does (no decay on biases / LayerNorms)."""
    params = list(hf.parameters())
    torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.98), eps=1e-6)
    opt.step()


def assert_same_weights(ft, hf, auto_cls, folder, atol: float) -> None:
    """Every weight of `ft`'s model (exported, read by transformers) equals `hf`'s within atol."""
    save_token_model(ft.as_loaded(), folder)
    ours = auto_cls.from_pretrained(folder, attn_implementation="eager")
    theirs = dict(hf.named_parameters())
    for name, p in ours.named_parameters():
        assert (p - theirs[name]).abs().max().item() <= atol, name
