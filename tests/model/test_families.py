"""RoBERTa, DistilBERT and ALBERT in our encoder, against transformers (eager, fp32, 1e-5).

Random tiny configs; tokenizers trained in the test (byte-level BPE, WordPiece, Unigram), saved with
transformers' own tokenizer classes, so each folder looks like one from the hub.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from support.family import edited_copy, write_family_checkpoint

import bert_core
from bert_core import BertCoreError
from bert_core.model.checkpoint import KEY_MAPS, map_key
from bert_core.model.config import BertConfig
from bert_core.model.counts import param_counts

ATOL = 1e-5
FAMILIES = ("roberta", "distilbert", "albert")


@pytest.fixture(scope="module")
def family_dirs(tmp_path_factory):
    """{(family, kind): (dir, hf_model)}."""
    out = {}
    for fam in FAMILIES:
        for kind in ("mlm", "base"):
            d = tmp_path_factory.mktemp(f"{fam}-{kind}")
            out[fam, kind] = (d, write_family_checkpoint(d, fam, kind))
    return out


def close(ours, theirs, what):
    ours, theirs = torch.as_tensor(ours), torch.as_tensor(theirs)
    assert ours.shape == theirs.shape, f"{what}: shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
    err = (ours - theirs).abs().max().item()
    assert err <= ATOL, f"{what}: max abs diff {err:.2e} > {ATOL}"


def hf_run(hf, fam, ids, types, mask):
    kw = dict(input_ids=ids, attention_mask=mask, output_hidden_states=True, output_attentions=True)
    if fam == "albert":
        kw["token_type_ids"] = types
    with torch.no_grad():
        return hf(**kw)


def compare(m, hf, fam, kind, ids, types, mask=None):
    out = hf_run(hf, fam, ids, types, mask)
    with torch.no_grad():
        tr = m.model(ids, types, mask, trace=True)
    L = m.config.num_hidden_layers
    assert len(tr.hidden_states) == len(out.hidden_states) == L + 1
    keep = torch.ones_like(ids, dtype=torch.bool) if mask is None else mask.bool()
    for i, (a, b) in enumerate(zip(tr.hidden_states, out.hidden_states)):
        close(a[keep], b[keep], f"{fam} hidden state {i}")  # padding rows are never read: compare real tokens
    assert len(tr.attentions) == len(out.attentions) == L
    for i, (a, b) in enumerate(zip(tr.attentions, out.attentions)):
        close(a, b, f"{fam} attention {i}")
    if kind == "mlm":
        close(m.model.mlm_logits(tr.hidden_states[-1])[keep], out.logits[keep], f"{fam} MLM logits")
    elif fam != "distilbert":
        close(tr.pooled, out.pooler_output, f"{fam} pooler")
    return tr


@pytest.mark.parametrize("kind", ["mlm", "base"])
@pytest.mark.parametrize("fam", FAMILIES)
def test_family_matches_transformers(family_dirs, fam, kind):
    path, hf = family_dirs[fam, kind]
    m = bert_core.load_model(str(path))
    assert m.family == m.model.family == fam
    assert m.has_mlm == (kind == "mlm") and not m.has_nsp
    enc = m.tokenizer.encode("The cat [MASK] on the mat, playing.", "Paris is a city.")
    ids, types = torch.from_numpy(enc.input_ids)[None], torch.from_numpy(enc.token_type_ids)[None]
    tr = compare(m, hf, fam, kind, ids, types)
    # The embedding parts the Embeddings page shows, against HF's own modules.
    emb = getattr(hf, {"roberta": "roberta", "distilbert": "distilbert", "albert": "albert"}[fam], hf).embeddings
    close(tr.word, emb.word_embeddings(ids), "word embeddings")
    if fam == "roberta":
        pos = emb.create_position_ids_from_input_ids(ids, emb.padding_idx)
        close(tr.position, emb.position_embeddings(pos), "RoBERTa position embeddings (offset padding_idx + 1)")
        assert int(pos[0, 0]) == m.config.pad_token_id + 1
    else:
        close(tr.position[0], emb.position_embeddings.weight[: ids.shape[1]], "position embeddings")
    if fam == "distilbert":
        assert m.model.bert.embeddings.token_type_embeddings is None and not m.config.has_segments
        assert not tr.segment.any(), "DistilBERT has no segment table: the trace shows zeros"
        assert m.model.bert.pooler is None
    else:
        close(tr.segment, emb.token_type_embeddings(types), "segment embeddings")
    if fam == "albert":
        close(tr.normed, emb(ids, token_type_ids=types), "ALBERT embedding output (E wide)")
        assert tr.normed.shape[-1] == m.config.E < m.config.hidden_size
        # One set of layer weights, reused: every index is the same module.
        layers = m.model.bert.encoder.layer
        assert len(layers) == m.config.num_hidden_layers and all(lay is layers[0] for lay in layers)


@pytest.mark.parametrize("fam", FAMILIES)
def test_padded_batch_matches_transformers(family_dirs, fam):
    path, hf = family_dirs[fam, "mlm"]
    m = bert_core.load_model(str(path))
    encs = [m.tokenizer.encode(t) for t in ("The cat sat.", "She sent the [MASK] to her mother, and he went.")]
    T = max(len(e) for e in encs)
    pad = m.tokenizer.pad_token_id
    ids = torch.tensor(np.stack([np.pad(e.input_ids, (0, T - len(e)), constant_values=pad) for e in encs]))
    types = torch.tensor(np.stack([np.pad(e.token_type_ids, (0, T - len(e))) for e in encs]))
    mask = (torch.arange(T)[None] < torch.tensor([len(e) for e in encs])[:, None]).long()
    compare(m, hf, fam, "mlm", ids, types, mask)
    # Padding does not change the real tokens' results (RoBERTa's positions skip padding).
    with torch.no_grad():
        alone = m.model(ids[:1, : len(encs[0])], types[:1, : len(encs[0])])
        batched = m.model(ids, types, mask)
    close(batched[0, : len(encs[0])], alone[0], "padded row vs alone")


@pytest.mark.parametrize("fam", FAMILIES)
def test_tokenizer_matches_transformers(family_dirs, fam):
    from transformers import AutoTokenizer

    path, _ = family_dirs[fam, "mlm"]
    m = bert_core.load_model(str(path))
    ht = AutoTokenizer.from_pretrained(path)
    for a, b in (("The cat sat on the mat.", None), ("She sent the letter!", "He went to the store.")):
        ours = m.tokenizer.encode(a, b)
        theirs = ht(a, b)
        assert ours.input_ids.tolist() == theirs["input_ids"], (fam, ours.tokens)
    # The user types [MASK]; it becomes the model's own mask token, with offsets into the typed text.
    text = "The cat [MASK] on the mat."
    enc = m.tokenizer.encode(text)
    i = enc.tokens.index(m.tokenizer.mask_token)
    assert enc.input_ids[i] == ht.mask_token_id
    assert text[slice(*enc.offsets[i])].strip() == "[MASK]"
    if fam == "roberta":
        assert m.tokenizer.mask_token == "<mask>" and any("<mask>" in n for n in enc.notes)
    assert m.tokenizer.scheme == {"roberta": "bpe", "distilbert": "wordpiece", "albert": "unigram"}[fam]


@pytest.mark.parametrize("fam", FAMILIES)
def test_analyze_predicts_at_the_mask_with_hf_probabilities(family_dirs, fam):
    path, hf = family_dirs[fam, "mlm"]
    m = bert_core.load_model(str(path))
    t = bert_core.analyze(m, "She sent the [MASK] to her mother.", top_k=3)
    (pos,) = t.mask_positions
    kw = {"token_type_ids": torch.from_numpy(t.token_type_ids)[None]} if fam == "albert" else {}
    with torch.no_grad():
        p = hf(input_ids=torch.from_numpy(t.input_ids)[None], **kw).logits[0, pos].softmax(-1)
    top = p.topk(3)
    assert [tok for tok, _ in t.predictions[pos]] == m.tokenizer.convert_ids_to_tokens(top.indices.tolist())
    np.testing.assert_allclose([q for _, q in t.predictions[pos]], top.values.numpy(), atol=ATOL)
    assert t.hidden_states.shape[0] == m.config.num_hidden_layers + 1


@pytest.mark.parametrize("kind", ["mlm", "base"])
@pytest.mark.parametrize("fam", FAMILIES)
def test_save_round_trip_loads_in_transformers(family_dirs, fam, kind, tmp_path):
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer

    path, _ = family_dirs[fam, kind]
    m = bert_core.load_model(str(path))
    bert_core.save_pretrained(m.model, m.tokenizer, tmp_path / "out")
    cls = AutoModelForMaskedLM if kind == "mlm" else AutoModel
    hf2 = cls.from_pretrained(tmp_path / "out", attn_implementation="eager").eval()
    assert hf2.config.model_type == fam
    enc = m.tokenizer.encode("The cat [MASK] on the mat.")
    ids, types = torch.from_numpy(enc.input_ids)[None], torch.from_numpy(enc.token_type_ids)[None]
    compare(m, hf2, fam, kind, ids, types)
    again = bert_core.load_model(str(tmp_path / "out"))
    assert again.family == fam
    for (k, a), (k2, b) in zip(m.model.state_dict().items(), again.model.state_dict().items()):
        assert k == k2 and torch.equal(a, b), k
    ht = AutoTokenizer.from_pretrained(tmp_path / "out")
    assert ht("The cat sat.")["input_ids"] == m.tokenizer.encode("The cat sat.").input_ids.tolist()


@pytest.mark.parametrize("fam", FAMILIES)
def test_key_map_is_a_bijection_on_real_state_dicts(family_dirs, fam):
    """Every HF key maps to one of ours, ours back to the same HF key, and together they fill our model."""
    for kind in ("mlm", "base"):
        path, hf = family_dirs[fam, kind]
        m = bert_core.load_model(str(path))
        theirs = [k for k in hf.state_dict() if not k.endswith(("position_ids", "token_type_ids"))
                  and not k.endswith("decoder.bias")]  # the tied decoder bias is the head's bias
        prefix = {"roberta": "roberta.", "distilbert": "distilbert.", "albert": "albert."}[fam]
        full = [k if kind == "mlm" else prefix + k for k in theirs]
        ours = [map_key(fam, k) for k in full]
        assert None not in ours
        assert len(set(ours)) == len(ours)
        assert [map_key(fam, k, to="theirs") for k in ours] == full
        assert set(ours) == set(m.model.state_dict()) | ({"cls.predictions.decoder.weight"} if kind == "mlm" else set())
    assert KEY_MAPS["bert"] == []


@pytest.mark.parametrize("fam", FAMILIES)
def test_trainer_and_masking_work_for_the_family(family_dirs, fam):
    from bert_core.train.trainer import TrainConfig, Trainer

    path, _ = family_dirs[fam, "mlm"]
    m = bert_core.load_model(str(path))
    enc = m.tokenizer.encode("The cat sat on the mat, playing with the dog.")
    g = torch.Generator().manual_seed(0)
    d = bert_core.mask_tokens(torch.from_numpy(enc.input_ids), torch.from_numpy(enc.special_tokens_mask),
                              vocab_size=m.config.vocab_size, mask_token_id=m.tokenizer.mask_token_id,
                              generator=g, mlm_probability=0.5, special_ids=m.tokenizer.all_special_ids)
    assert (d.input_ids[d.outcome == bert_core.MASKED] == m.tokenizer.mask_token_id).all()
    import copy

    model = copy.deepcopy(m.model)
    for p in model.parameters():
        p.requires_grad_(True)
    before = model.bert.encoder.layer[0].intermediate.dense.weight.clone()
    tr = Trainer(model, m.tokenizer, ["The cat sat on the mat.", "She sent the letter to her mother."] * 8,
                 TrainConfig(seq_len=16, batch_size=4, seed=0, mlm_probability=0.5, warmup_steps=1))
    losses = [tr.step().loss for _ in range(3)]
    assert all(np.isfinite(losses))
    assert not torch.equal(before, model.bert.encoder.layer[0].intermediate.dense.weight)
    assert tr.probe().predictions
    if fam == "albert":  # the shared layer is one module: training it changes every layer at once
        assert model.bert.encoder.layer[0] is model.bert.encoder.layer[-1]


def test_unsupported_model_types_name_the_supported_ones(family_dirs, tmp_path):
    for bad in ("deberta", "gpt2"):  # (electra is supported since issue 21: tests/model/test_electra.py)
        edited_copy(family_dirs["roberta", "mlm"][0], tmp_path / bad, model_type=bad)
        with pytest.raises(BertCoreError, match=f"{bad} model.*'bert', 'roberta', 'distilbert', 'albert', 'electra'"):
            bert_core.load_model(str(tmp_path / bad))


def test_albert_with_several_layer_groups_is_refused(family_dirs, tmp_path):
    edited_copy(family_dirs["albert", "mlm"][0], tmp_path / "a", num_hidden_groups=2)
    with pytest.raises(BertCoreError, match="num_hidden_groups=2.*not supported"):
        bert_core.load_model(str(tmp_path / "a"))


def test_roberta_vocab_and_merges_folder(family_dirs, tmp_path):
    """RoBERTa's classic files: vocab.json + merges.txt tokenize as transformers does; without merges, a message."""
    from transformers import RobertaTokenizer

    src = family_dirs["roberta", "mlm"][0]
    d = tmp_path / "r"
    d.mkdir()
    for f in ("config.json", "model.safetensors"):
        shutil.copy(src / f, d / f)
    model = json.loads((src / "tokenizer.json").read_text())["model"]
    (d / "vocab.json").write_text(json.dumps(model["vocab"]))
    merges = [" ".join(mg) if isinstance(mg, list) else mg for mg in model["merges"]]
    (d / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    m = bert_core.load_model(str(d))
    # transformers' RobertaTokenizer on the same two files.
    ht = RobertaTokenizer(vocab=str(d / "vocab.json"), merges=str(d / "merges.txt"))
    for a, b in (("The cat sat on the mat.", None), ("She [MASK] the letter!", "He went.")):
        assert m.tokenizer.encode(a, b).input_ids.tolist() == ht(a.replace("[MASK]", "<mask>"), b)["input_ids"]
    (d / "merges.txt").unlink()
    with pytest.raises(BertCoreError, match="vocab.json but no merges.txt"):
        bert_core.load_model(str(d))


def test_tokenizer_larger_than_the_embedding_matrix_is_refused(family_dirs, tmp_path):
    edited_copy(family_dirs["albert", "mlm"][0], tmp_path / "a", vocab_size=20)
    with pytest.raises(BertCoreError, match="tokenizer has .* tokens but the model's embedding matrix has only 20"):
        bert_core.load_model(str(tmp_path / "a"))


def test_text_filling_robertas_positions(family_dirs):
    """RoBERTa's table has P rows but the first padding_idx + 1 are never used: P - 2 tokens fit, no index error."""
    path, hf = family_dirs["roberta", "mlm"]
    m = bert_core.load_model(str(path))
    P = m.config.max_position_embeddings
    assert m.max_length == P - m.config.pad_token_id - 1 == P - 2
    t = bert_core.analyze(m, "the cat sat on the mat " * 40 + "[MASK]")
    assert len(t.tokens) == m.max_length and t.truncation is not None
    assert any("truncated" in n for n in t.notes)
    ids = torch.from_numpy(t.input_ids)[None]
    compare(m, hf, "roberta", "mlm", ids, torch.zeros_like(ids))
    with pytest.raises(IndexError):  # one more token would read past the position table, as in HF
        m.model(torch.cat([ids, ids[:, :1]], 1))



def test_text_filling_roberta_base_514_positions(tmp_path):
    """roberta-base's own table (514 rows, padding_idx 1): a long text keeps 512 tokens and matches HF there."""
    hf = write_family_checkpoint(tmp_path / "r", "roberta", "mlm", max_position_embeddings=514)
    m = bert_core.load_model(str(tmp_path / "r"))
    assert m.config.max_position_embeddings == 514 and m.max_length == 512
    t = bert_core.analyze(m, "[MASK] " + "the cat sat on the mat " * 100)
    assert len(t.tokens) == 512 and t.tokens[-1] == "</s>" and t.truncation is not None
    ids = torch.from_numpy(t.input_ids)[None]
    tr = compare(m, hf, "roberta", "mlm", ids, torch.zeros_like(ids))
    assert tr.hidden_states[0].shape[1] == 512  # position ids 2 .. 513: the table's last row is used


def test_folders_we_cannot_tokenize_say_so(family_dirs, tmp_path):
    """No tokenizer files, SentencePiece's spiece.model alone, merges without vocab, a broken tokenizer.json."""
    src = family_dirs["albert", "mlm"][0]

    def bare(name):
        d = tmp_path / name
        d.mkdir()
        for f in ("config.json", "model.safetensors"):
            shutil.copy(src / f, d / f)
        return d

    bare("none")
    (bare("spiece") / "spiece.model").write_bytes(b"\x00not a real sentencepiece model")
    (bare("merges") / "merges.txt").write_text("#version: 0.2\nG a\n")
    (bare("broken") / "tokenizer.json").write_text('{"model": {"type": "NoSuchModel"}}')
    for name, msg in (("none", "no tokenizer in none: expected tokenizer.json, vocab.json [+] merges.txt, or "
                               "vocab.txt"),
                      ("spiece", "cannot tokenize for spiece: it has only SentencePiece's spiece.model"),
                      ("merges", "cannot tokenize for merges: it has merges.txt but no vocab.json"),
                      ("broken", "tokenizer.json is not one the `tokenizers` library reads")):
        with pytest.raises(BertCoreError, match=msg):
            bert_core.load_model(str(tmp_path / name))


# transformers' num_parameters() of the MLM models (ALBERT's often-quoted 11.7M is AlbertModel, with a pooler).
REAL_CONFIGS = {
    "distilbert-base-uncased": ("distilbert", dict(vocab_size=30522), 66_985_530),
    "roberta-base": ("roberta", dict(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                                     pad_token_id=1, layer_norm_eps=1e-5), 124_697_433),
    "albert-base-v2": ("albert", dict(vocab_size=30000, embedding_size=128, hidden_act="gelu_new"), 11_221_680),
}


@pytest.mark.parametrize("name", sorted(REAL_CONFIGS))
def test_parameter_counts_match_transformers(name):
    """Counts from the config alone equal transformers' num_parameters() (models built on the meta device)."""
    import transformers as T

    fam, kw, expected = REAL_CONFIGS[name]
    base = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
    if fam == "distilbert":
        base["num_hidden_layers"] = 6
        hf_cfg = T.DistilBertConfig(vocab_size=kw["vocab_size"])
        cls = T.DistilBertForMaskedLM
    else:
        hf_cfg = {"roberta": T.RobertaConfig, "albert": T.AlbertConfig}[fam](**base, **kw)
        cls = {"roberta": T.RobertaForMaskedLM, "albert": T.AlbertForMaskedLM}[fam]
    with torch.device("meta"):
        hf_n = cls(hf_cfg).num_parameters()
    ours = BertConfig.from_dict({**hf_cfg.to_dict(), "model_type": fam})
    counts = param_counts(ours, mlm=True, nsp=False, pooler=False)
    assert counts["total"] == hf_n == expected
    with torch.device("meta"):
        assert bert_core.BertForPreTraining(ours, mlm=True, nsp=False).num_parameters() == hf_n
    from bert_core.inspect.anatomy import KNOWN_CONFIGS

    assert param_counts(KNOWN_CONFIGS[name], mlm=True, nsp=False, pooler=False)["total"] == expected
