"""The settings a page opens with for a model: its widgets start there, and a Lesson step's notebook reproduces
the step's full page with them (ui/notebook_ui.py), so the page and the notebook read one source."""

from __future__ import annotations

BVG_TOKEN_CAP = 48  # BERT vs GPT's mask maps draw at most this many tokens (the first ones)


def of(page: str, cfg) -> dict:
    """`page`'s opening settings on a model of config `cfg` (0-based layers and heads; {} for a page without)."""
    last = cfg.num_hidden_layers - 1
    return {
        "tokenization": {},
        "embeddings": {"n_dims": min(64, cfg.hidden_size),
                       "n_pos": min(64, cfg.max_position_embeddings - cfg.position_offset)},
        "masking": {"p": 0.15, "whole_word": False, "draw": 1, "n_draws": 1000},
        "predictions": {"k": 5, "word": None},
        "layers": {"state": last + 1, "k": 5},
        "attention": {"layer": 0, "head": 0, "average": False, "fixed": False},
        "heads": {"layer": last, "head": 0, "clean": None, "corrupt": None, "target": None},
        "bert_vs_gpt": {"layer": 0, "head": 0, "token_cap": BVG_TOKEN_CAP},
    }.get(page, {})
