"""Loading: local dirs of every head layout, safetensors only, clear messages offline."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

import bert_core
from bert_core import BertCoreError


def test_local_models_load_with_sockets_blocked(tiny_dirs, no_network):
    for path, _ in tiny_dirs.values():
        m = bert_core.load_model(str(path))
        assert m.source == "local" and m.name == path.name
        t = bert_core.analyze(m, "the cat [MASK] on the mat.")
        assert t.attentions.shape[0] == 2


def test_unknown_hub_id_without_network_gives_a_clear_message(no_network, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache: nothing to fall back on
    with pytest.raises(BertCoreError, match="could not (reach|download).*hub"):
        bert_core.load_model("some-org/no-such-bert-model")


def test_hub_can_be_turned_off():
    with pytest.raises(BertCoreError, match="turned off"):
        bert_core.load_model("bert-base-uncased", allow_hub=False)


@pytest.mark.parametrize("name", ["../../etc/passwd", "<script>alert(1)</script>", "a b", "x" * 300])
def test_malformed_sources_are_refused(name):
    with pytest.raises(BertCoreError, match="neither a local folder nor a hub id"):
        bert_core.load_model(name)


def test_pickle_only_directory_is_refused(tiny_dirs, tmp_path):
    src = tiny_dirs["mlm"][0]
    for f in src.iterdir():
        if f.name != "model.safetensors":
            shutil.copy(f, tmp_path / f.name)
    torch.save({"bert.embeddings.word_embeddings.weight": torch.zeros(2, 2)}, tmp_path / "pytorch_model.bin")
    with pytest.raises(BertCoreError, match="safetensors only"):
        bert_core.load_model(str(tmp_path))


@pytest.mark.parametrize("model_type", ["deberta", "gpt2", "electra"])
def test_other_architectures_name_the_supported_ones(tiny_dirs, tmp_path, model_type):
    shutil.copytree(tiny_dirs["mlm"][0], tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    cfg["model_type"] = model_type
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    # ELECTRA is a supported family (tests/model/test_electra.py): BERT's tensors under its name are refused.
    match = ("a tensor 'bert.* that a electra model does not have" if model_type == "electra"
             else f"{model_type} model.*'bert', 'roberta', 'distilbert', 'albert', 'electra'")
    with pytest.raises(BertCoreError, match=match):
        bert_core.load_model(str(tmp_path / "m"))


def test_bert_weights_under_a_roberta_config_are_refused(tiny_dirs, tmp_path):
    shutil.copytree(tiny_dirs["mlm"][0], tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    cfg["model_type"] = "roberta"
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(BertCoreError, match="does not have"):
        bert_core.load_model(str(tmp_path / "m"))


def test_shape_mismatch_is_reported(tiny_dirs, tmp_path):
    shutil.copytree(tiny_dirs["mlm"][0], tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    cfg["intermediate_size"] = 40
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(BertCoreError, match="intermediate.dense.weight has shape"):
        bert_core.load_model(str(tmp_path / "m"))


def test_local_roots_confine_local_models(tiny_dirs, tmp_path):
    path = tiny_dirs["mlm"][0]
    with pytest.raises(BertCoreError, match="configured folders"):
        bert_core.load_model(str(path), local_roots=[tmp_path])
    assert bert_core.load_model(str(path), local_roots=[path.parent]).has_mlm


def test_old_tf_names_and_bare_encoder_keys_load(tiny_dirs, tmp_path):
    """gamma/beta LayerNorm names (old converted checkpoints) load to the same numbers."""
    from safetensors.torch import load_file, save_file

    src = tiny_dirs["pretraining"][0]
    shutil.copytree(src, tmp_path / "m")
    sd = load_file(str(src / "model.safetensors"))
    old = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
           for k, v in sd.items()}
    save_file(old, str(tmp_path / "m" / "model.safetensors"))
    a = bert_core.analyze(bert_core.load_model(str(src)), "the cat sat.")
    b = bert_core.analyze(bert_core.load_model(str(tmp_path / "m")), "the cat sat.")
    assert (a.hidden_states == b.hidden_states).all()
