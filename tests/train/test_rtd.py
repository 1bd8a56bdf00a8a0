"""ELECTRA's objective: one rtd step against a plain loop, the generator sharing the embeddings, export, learning."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from support.checkpoints import VOCAB

import bert_core
from bert_core.model.tokenization import WordPieceTokenizer
from bert_core.objectives.masking import mask_tokens
from bert_core.objectives.rtd import RTD_LAMBDA, generator_config
from bert_core.train.trainer import TrainConfig, Trainer, new_model

PRESET = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
LINES = ["the cat sat on the mat", "she went to the store and bought milk", "he is a dog and it was unaffable",
         "we play in paris and they sat in the cafe"] * 20


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    d = tmp_path_factory.mktemp("rtd-tok")
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return WordPieceTokenizer.from_dir(d, model_max_length=32)


def rtd_trainer(tok, **cfg):
    model = new_model(tok, PRESET, max_position_embeddings=32, dropout=0.0, rtd=True)
    kw = dict(batch_size=4, seq_len=16, lr=1e-3, objective="rtd") | cfg
    return Trainer(model, tok, LINES, TrainConfig(**kw))


def test_generator_is_a_quarter_wide_and_shares_the_embeddings(tok):
    tr = rtd_trainer(tok)
    d, g = tr.model, tr.generator
    assert d.config.model_type == "electra" and d.has_rtd and not d.has_mlm
    assert g.config.hidden_size == 16 and g.config.E == d.config.E == 32  # 32 / 4 = 8, under the floor of 16
    assert g.config.num_attention_heads == 1 and g.config.intermediate_size == 64
    assert g.bert.embeddings is d.bert.embeddings
    assert g.cls.predictions.decoder.weight is d.bert.embeddings.word_embeddings.weight
    ids = {id(p) for grp in tr.opt.param_groups for p in grp["params"]}
    assert len(ids) == sum(1 for grp in tr.opt.param_groups for _ in grp["params"])  # every weight once
    assert ids == {id(p) for p in d.parameters()} | {id(p) for p in g.parameters()}
    assert generator_config(d.config).num_hidden_layers == d.config.num_hidden_layers


def test_one_rtd_step_is_the_plain_electra_loss(tok, tmp_path):
    """The step's loss = generator MLM + 50 x discriminator BCE, recomputed by a plain loop on the same draws;
    the BCE also equals transformers' ElectraForPreTraining loss on the same corrupted batch."""
    tr = rtd_trainer(tok)
    gen, disc = tr.generator, tr.model
    g = torch.Generator()
    g.set_state(tr.g.get_state())
    ids, types, attn, special, _ = tr.data.batch(4, g, False)  # the batch the step will draw
    draw = mask_tokens(ids, special, vocab_size=disc.config.vocab_size, mask_token_id=tok.mask_token_id, generator=g,
                       mlm_probability=0.15, mask_fraction=0.85, random_fraction=0.0,
                       special_ids=tok.all_special_ids)
    torch.randint(2**62, (), generator=g)  # the step's dropout seed
    assert set(draw.input_ids[draw.labels != -100].tolist()) <= {tok.mask_token_id, *ids[draw.labels != -100].tolist()}
    with torch.no_grad():
        gen_logits = gen.mlm_logits(gen(draw.input_ids, types, attn))  # (B, T, V)
    corrupted, gen_loss, n = ids.clone(), 0.0, 0
    for b in range(ids.shape[0]):
        for t in range(ids.shape[1]):
            if draw.labels[b, t] != -100:
                gen_loss += float(F.cross_entropy(gen_logits[b, t][None], draw.labels[b, t][None]))
                n += 1
    sel = draw.labels != -100
    corrupted[sel] = torch.multinomial(torch.softmax(gen_logits[sel], -1), 1, generator=g).squeeze(1)
    with torch.no_grad():
        d_logits = disc.rtd_logits(disc(corrupted, types, attn))  # (B, T)
    bce, m_real = 0.0, 0
    for b in range(ids.shape[0]):
        for t in range(ids.shape[1]):
            if attn[b, t]:
                y, p = float(corrupted[b, t] != ids[b, t]), 1 / (1 + math.exp(-float(d_logits[b, t])))
                bce -= y * math.log(p) + (1 - y) * math.log(1 - p)
                m_real += 1
    assert n > 0 and bool((corrupted != ids).any())
    from transformers import ElectraForPreTraining

    tr.save(tmp_path)
    hf = ElectraForPreTraining.from_pretrained(tmp_path, attn_implementation="eager").eval()
    with torch.no_grad():
        theirs = hf(input_ids=corrupted, attention_mask=attn, token_type_ids=types,
                    labels=(corrupted != ids).long()).loss
    m = tr.step()
    assert m.mlm_loss == pytest.approx(gen_loss / n, abs=1e-5)
    assert m.rtd_loss == pytest.approx(bce / m_real, abs=1e-5)
    assert m.rtd_loss == pytest.approx(float(theirs), abs=1e-5)
    assert m.loss == pytest.approx(gen_loss / n + RTD_LAMBDA * bce / m_real, abs=1e-4)
    assert m.replaced_fraction == pytest.approx(float((corrupted != ids)[attn.bool()].float().mean()), abs=1e-7)


def test_a_trained_discriminator_spots_replacements_and_exports_to_transformers(tok, tmp_path):
    tr = rtd_trainer(tok, batch_size=16, lr=3e-3, warmup_steps=10, max_steps=200, seed=1)
    ms = tr.run(steps=200)
    first = np.mean([m.rtd_loss for m in ms[:10]])
    last = np.mean([m.rtd_loss for m in ms[-20:]])
    assert last < 0.6 * first, (first, last)
    tr.save(tmp_path)
    m = bert_core.load_model(tmp_path)
    assert m.family == "electra" and m.model.has_rtd
    # A word swapped for one that never follows "the cat" in the corpus stands out.
    r = bert_core.replaced_token_probs(m, "the cat sat on the mat")
    odd = bert_core.replaced_token_probs(m, "the cat bought on the mat")
    i = odd.tokens.index("bought")
    assert odd.probs[i] > 0.5 > r.probs[i], (odd.probs, r.probs)
    from transformers import ElectraForPreTraining

    hf, info = ElectraForPreTraining.from_pretrained(tmp_path, output_loading_info=True, attn_implementation="eager")
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    ids = torch.as_tensor(m.tokenizer.encode("the cat bought on the mat").input_ids)[None]
    with torch.no_grad():
        np.testing.assert_allclose(odd.probs, torch.sigmoid(hf.eval()(input_ids=ids).logits[0]).numpy(), atol=1e-5)


def test_resume_continues_exactly(tok):
    a = rtd_trainer(tok)
    a.run(steps=3)
    b = rtd_trainer(tok)
    b.run(steps=1)
    c = rtd_trainer(tok)
    c.load_state_dict(b.state_dict())
    assert c.generator.bert.embeddings is c.model.bert.embeddings
    assert [m.loss for m in c.run(steps=2)] == pytest.approx([m.loss for m in a.history[1:]], abs=1e-6)


def test_every_objective_starts_from_the_same_encoder(tok):
    """Same seed, same initial encoder weights, whatever the objective: the comparison starts level."""
    mlm, clm, rtd = (new_model(tok, PRESET, max_position_embeddings=32, seed=5, **kw).bert.state_dict()
                     for kw in ({}, {"causal": True}, {"rtd": True}))
    assert mlm.keys() == clm.keys() == rtd.keys()
    assert all(torch.equal(mlm[k], clm[k]) and torch.equal(mlm[k], rtd[k]) for k in mlm)


def test_objective_and_model_must_agree(tok):
    with pytest.raises(bert_core.BertCoreError, match="rtd"):
        Trainer(new_model(tok, PRESET, max_position_embeddings=32), tok, LINES, TrainConfig(objective="rtd"))
    with pytest.raises(bert_core.BertCoreError, match="rtd"):
        Trainer(new_model(tok, PRESET, max_position_embeddings=32, rtd=True), tok, LINES, TrainConfig())


def test_the_memory_estimate_counts_the_generator(tok):
    from bert_core.runs.settings import preset_parameters
    from bert_core.train.trainer import PRESETS

    preset = "tiny (2 layers, 64 wide)"
    model = new_model(tok, PRESETS[preset], max_position_embeddings=128, rtd=True)
    tr = Trainer(model, tok, LINES, TrainConfig(objective="rtd"))
    both = {id(p): p.numel() for p in (*tr.model.parameters(), *tr.generator.parameters())}
    assert preset_parameters(preset, tok.vocab_size, "rtd") == sum(both.values())
    assert preset_parameters(preset, tok.vocab_size, "rtd") > model.num_parameters()


def test_pretrain_command_trains_an_electra_discriminator(tmp_path, capsys):
    """`python -m bert_core.train.pretrain --objective rtd` (a few steps): an ElectraForPreTraining folder,
    probe rows in the log; --objective rtd from a saved model is refused."""
    import json

    from transformers import ElectraForPreTraining

    from bert_core.train import pretrain

    args = ["--objective", "rtd", "--preset", "tiny", "--steps", "4", "--batch-size", "4", "--seq-len", "32",
            "--vocab-size", "2000", "--wordnet-fraction", "0.02", "--probe-every", "2", "--log-every", "2",
            "--out", str(tmp_path / "out"), "--checkpoint-dir", str(tmp_path / "ck"), "--threads", "1"]
    assert pretrain.main(args) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert {r["step"] for r in rows if "probe_accuracy" in r} == {1, 2, 4}
    assert all("rtd" in r and "rtd_acc" in r for r in rows if "loss" in r)
    m = bert_core.load_model(tmp_path / "out")
    assert m.family == "electra" and m.model.has_rtd and m.config.num_hidden_layers == 2
    _, info = ElectraForPreTraining.from_pretrained(tmp_path / "out", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert pretrain.main(["--objective", "rtd", "--continue-from", str(tmp_path / "out")]) == 2
