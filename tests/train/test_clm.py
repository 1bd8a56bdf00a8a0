"""GPT's objective on BERT's layers: next-token targets, one step against a plain computation, export, learning."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from support.checkpoints import VOCAB

import bert_core
from bert_core.model.tokenization import WordPieceTokenizer
from bert_core.train.trainer import TrainConfig, Trainer, new_model, next_token_labels

PRESET = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
LINES = ["the cat sat on the mat", "she went to the store and bought milk"] * 40


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    d = tmp_path_factory.mktemp("clm-tok")
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return WordPieceTokenizer.from_dir(d, model_max_length=32)


def test_next_token_labels():
    ids = torch.tensor([[2, 10, 11, 3, 0], [2, 12, 3, 0, 0]])
    attn = (ids != 0).long()
    assert next_token_labels(ids, attn).tolist() == [[10, 11, 3, -100, -100], [12, 3, -100, -100, -100]]


def test_one_clm_step_is_the_plain_next_token_loss(tok):
    model = new_model(tok, PRESET, max_position_embeddings=32, dropout=0.0, causal=True)
    tr = Trainer(model, tok, LINES, TrainConfig(batch_size=4, seq_len=16, lr=1e-3, objective="clm"))
    g = torch.Generator()
    g.set_state(tr.g.get_state())
    ids, types, attn, _, _ = tr.data.batch(4, g, False)  # the batch the step will draw
    with torch.no_grad():
        logits = model.mlm_logits(model(ids, types, attn))  # (B, T, V)
    plain, n = 0.0, 0  # a plain loop: -log p(x_{t+1} | x_<=t) over every real next token
    for b in range(ids.shape[0]):
        for t in range(ids.shape[1] - 1):
            if attn[b, t + 1]:
                plain += float(F.cross_entropy(logits[b, t][None], ids[b, t + 1][None]))
                n += 1
    m = tr.step()
    assert m.loss == pytest.approx(plain / n, abs=1e-5)
    with pytest.raises(bert_core.BertCoreError, match="causal"):
        Trainer(new_model(tok, PRESET, max_position_embeddings=32), tok, LINES, TrainConfig(objective="clm"))


def test_a_trained_causal_model_continues_its_prompt_and_exports_to_transformers(tok, tmp_path):
    model = new_model(tok, PRESET, max_position_embeddings=32, dropout=0.0, causal=True, seed=1)
    tr = Trainer(model, tok, LINES, TrainConfig(batch_size=16, seq_len=16, lr=3e-3, warmup_steps=5, max_steps=120,
                                                objective="clm"))
    first = tr.step().loss
    for _ in range(119):
        last = tr.step().loss
    assert last < first / 3
    tr.save(tmp_path)
    m = bert_core.load_model(tmp_path)
    assert m.config.is_decoder
    g = bert_core.generate(m, "the cat", max_new_tokens=6)
    assert g.text.startswith("sat on the mat"), g.text
    g = bert_core.generate(m, "she went", max_new_tokens=8)
    assert g.text.startswith("to the store and bought milk"), g.text
    from transformers import BertLMHeadModel

    hf, info = BertLMHeadModel.from_pretrained(tmp_path, output_loading_info=True, attn_implementation="eager")
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    ids = torch.as_tensor([g.prompt_ids + g.new_ids])
    with torch.no_grad():
        ours, theirs = m.model.mlm_logits(m.model.bert(ids)), hf.eval()(input_ids=ids).logits
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-5)
