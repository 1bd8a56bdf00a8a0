"""The real BERT-base where it can be had: the deployment setting (BERT_EXPLORER_MODEL, env or Streamlit secrets),
the one-click offer, and a model in the Hugging Face cache loading with the hub down.

No hub here: a random bert-base-sized checkpoint (12 x 768, 110M parameters, bert-base-uncased's vocabulary) is
placed in a Hugging Face cache under tests/output in the layout a download leaves
(hub/models--bert-base-uncased/snapshots/REV, refs/main), and every socket connection is refused.
"""

from __future__ import annotations

import contextlib

import pytest
from support.apptest import ROOT, assert_ok, open_page
from support.hub_cache import hub_cache_checkpoint

import bert_core
import ui.state
from ui import hub_download, model_choice

HF_HOME = ROOT / "tests" / "output" / "hf-home-bert-base"


@pytest.fixture(scope="module")
def bert_base_snapshot():
    return hub_cache_checkpoint(HF_HOME)


@pytest.fixture
def hub_down(no_network, monkeypatch):
    """No network at all (tests/conftest.py), and no answer about the hub remembered from before."""
    monkeypatch.setattr(model_choice, "_reach", {})


@pytest.fixture
def cache_at(monkeypatch):
    """Point huggingface_hub's cache at a folder (HF_HOME is read when huggingface_hub is imported)."""
    from huggingface_hub import constants

    def at(home):
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))

    return at


# ------------------------------------------------------------------------------------------ the setting
@pytest.fixture
def no_setting(monkeypatch):
    for var in (ui.state.MODEL_SETTING, ui.state.OLD_MODEL_SETTING):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def secrets_file(monkeypatch, tmp_path):
    """Streamlit's secrets read from one file of the test's (none by default); re-read on every test."""
    import streamlit as st
    from streamlit import config

    path = tmp_path / "secrets.toml"
    monkeypatch.setattr(config, "get_option",
                        lambda key, _get=config.get_option: [str(path)] if key == "secrets.files" else _get(key))
    # Loading secrets copies their top-level strings into os.environ (Streamlit's own behaviour, which monkeypatch
    # does not know of): BERT_EXPLORER_MODEL = "bert-base-uncased" outlived the test, and every app server its
    # worker started later defaulted to it. Not here: the setting is then read from the secrets themselves.
    monkeypatch.setattr(type(st.secrets), "_maybe_set_environment_variable", staticmethod(lambda k, v: None))
    st.secrets._reset()
    yield path
    st.secrets._reset()


def test_unset_the_default_is_the_bundled_model_and_no_secrets_file_is_no_error(no_setting, secrets_file):
    assert not secrets_file.exists()
    assert ui.state.configured_model() == bert_core.DEFAULT_BUNDLED


def test_the_setting_is_read_from_the_environment_then_secrets_then_the_old_name(no_setting, secrets_file,
                                                                                  monkeypatch):
    monkeypatch.setenv(ui.state.OLD_MODEL_SETTING, "bundled")
    assert ui.state.configured_model() == "bundled"  # the earlier name still works
    secrets_file.write_text('BERT_EXPLORER_MODEL = "bert-base-uncased"\n')
    import streamlit as st

    st.secrets._reset()
    assert ui.state.configured_model() == "bert-base-uncased"  # Community Cloud's secrets beat the old name
    monkeypatch.setenv(ui.state.MODEL_SETTING, " bert-base-cased ")
    assert ui.state.configured_model() == "bert-base-cased"  # the environment beats secrets


def test_a_broken_secrets_file_leaves_the_setting_unset(no_setting, secrets_file):
    secrets_file.write_text("this is = = not toml")
    assert ui.state.configured_model() == bert_core.DEFAULT_BUNDLED


# ------------------------------------------------------------------------------------------ the cache
def test_the_cached_snapshot_is_found_only_when_complete(bert_base_snapshot, cache_at, tmp_path, hub_down):
    cache_at(HF_HOME)
    assert bert_core.cached_hub_snapshot("bert-base-uncased") == bert_base_snapshot
    assert bert_core.cached_hub_snapshot("bert-base-cased") is None
    assert bert_core.cached_hub_snapshot("../etc") is None
    # A download cut short: config and tokenizer there, no weights. It is not taken for a model.
    part = hub_cache_checkpoint(tmp_path, "org/small", hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=37)
    cache_at(tmp_path)
    assert bert_core.cached_hub_snapshot("org/small") == part
    (part / "model.safetensors").unlink()
    assert bert_core.cached_hub_snapshot("org/small") is None
    with pytest.raises(bert_core.BertCoreError, match="could not (reach|download).*hub"):
        bert_core.load_model("org/small")  # not complete, and the hub is down: the offline message


def test_a_cached_hub_model_loads_with_the_hub_down(bert_base_snapshot, cache_at, hub_down):
    cache_at(HF_HOME)
    m = bert_core.load_model("bert-base-uncased")
    c = m.config
    assert (m.name, m.source) == ("bert-base-uncased", "hub")
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, m.tokenizer.vocab_size) == (12, 768, 12, 30522)
    assert sum(p.numel() for p in m.model.parameters()) > 109_000_000  # BERT-base's size
    assert m.tokenizer.convert_ids_to_tokens(m.tokenizer.encode_plain("The Capital")) == ["the", "capital"]  # uncased


def test_the_download_progress_bar_hears_the_bytes():
    """The tqdm class handed to snapshot_download reports the bytes written, through huggingface_hub's own
    thread map and aggregated bars (the path a real download takes), and nothing for its file-count bar."""
    from huggingface_hub.utils.tqdm import hf_thread_map

    from bert_core.model.loading import _bytes_tqdm

    heard = []
    bar_class = _bytes_tqdm(lambda done, total: heard.append((done, total)))
    written = bar_class(desc="Reconstructing (incomplete total...)", total=0, initial=0, unit="B")
    written.total = 300

    def one_file(n):  # what each download thread does with its aggregated bar
        written.update(n)
        return n

    assert hf_thread_map(one_file, [100, 100, 100], tqdm_class=bar_class) == [100, 100, 100]
    assert sorted(heard)[-1] == (300, 300) and len(heard) == 3  # the files bar itself reported nothing


# ------------------------------------------------------------------------------------------ the app
def test_the_setting_makes_the_cached_bert_base_what_a_fresh_visitor_gets(bert_base_snapshot, cache_at, hub_down,
                                                                          no_setting, monkeypatch):
    cache_at(HF_HOME)
    monkeypatch.setenv(ui.state.MODEL_SETTING, "bert-base-uncased")
    monkeypatch.setattr(ui.state, "DEFAULT_MODEL", ui.state.configured_model())  # what the import would read
    at = open_page("tokenization", text="the cat sat on the mat .", timeout=300)
    assert_ok(at)
    cur = at.session_state["current"]
    assert cur.model_key == "bert-base-uncased" and cur.model.config.num_hidden_layers == 12
    assert at.sidebar.selectbox(key="model_choice").value == "bert-base-uncased"
    assert "model" not in at.query_params  # the default needs no URL parameter
    assert not [b for b in at.sidebar.button if b.key == "bert_base_offer_sidebar"]  # it is on screen already


def test_bert_base_in_the_cache_is_offered_in_one_click(bert_base_snapshot, cache_at, hub_down):
    cache_at(HF_HOME)
    at = open_page("lesson", timeout=300)
    assert_ok(at)
    assert at.session_state["current"].model_key == bert_core.DEFAULT_BUNDLED
    offers = {b.key: b for b in at.button if b.key and b.key.startswith("bert_base_offer")}
    assert set(offers) == {"bert_base_offer_sidebar", "bert_base_offer_lesson"}
    assert offers["bert_base_offer_lesson"].label == model_choice.CACHED_LABEL  # on disk: no download to announce
    offers["bert_base_offer_lesson"].click().run()
    assert_ok(at)
    cur = at.session_state["current"]
    assert cur.model_key == "bert-base-uncased" and cur.model.config.hidden_size == 768
    assert at.sidebar.selectbox(key="model_choice").value == "bert-base-uncased"
    assert at.query_params["model"] in ("bert-base-uncased", ["bert-base-uncased"])  # a shared link keeps it
    assert not [b for b in at.button if b.key and b.key.startswith("bert_base_offer")]


def test_nothing_is_offered_when_the_hub_is_down_and_nothing_is_cached(cache_at, hub_down, tmp_path):
    cache_at(tmp_path)  # an empty cache
    assert not model_choice.hub_reachable()
    assert model_choice.offer_label() is None
    at = open_page("lesson")
    assert_ok(at)
    assert not [b for b in at.button if b.key and b.key.startswith("bert_base_offer")]


def test_a_hub_model_that_cannot_be_had_says_so_and_the_last_model_stays(cache_at, hub_down, tmp_path):
    cache_at(tmp_path)
    assert hub_download.needs_download("bert-base-cased", True)
    assert not hub_download.needs_download("bert-base-cased", False)  # hub off on this server: load_model says so
    assert not hub_download.needs_download("bundled", True) and not hub_download.needs_download("../x", True)
    at = open_page("tokenization", text="the cat sat on the mat .")
    at.sidebar.selectbox(key="model_choice").select("bert-base-cased").run()
    assert_ok(at)
    assert any("could not" in e.value.lower() and "hub" in e.value for e in at.sidebar.error), \
        [e.value for e in at.sidebar.error]
    assert at.session_state["current"].model_key == bert_core.DEFAULT_BUNDLED


def test_the_lesson_has_no_sidebar_text_box_and_keeps_what_was_typed():
    at = open_page("tokenization", text="a sentence typed for the other pages .")
    at.switch_page("views/lesson.py").run()
    assert_ok(at)
    assert not [t for t in at.sidebar.text_area if t.key in ("text", "pair")]
    assert any("own sentence" in c.value for c in at.sidebar.caption)
    at.switch_page("views/tokenization.py").run()
    assert at.sidebar.text_area(key="text").value == "a sentence typed for the other pages ."


def test_docker_and_the_cloud_secrets_example_set_bert_base():
    import re
    import tomllib

    assert re.search(r"^\s+BERT_EXPLORER_MODEL=bert-base-uncased$", (ROOT / "Dockerfile").read_text(), re.M)
    example = tomllib.loads((ROOT / ".streamlit" / "secrets.toml.example").read_text())
    assert example == {"BERT_EXPLORER_MODEL": "bert-base-uncased"}
    assert not (ROOT / ".streamlit" / "secrets.toml").exists()  # a laptop's checkout has no setting: bundled


# ------------------------------------------------------------------------------------------ a download
@pytest.fixture
def local_hub(monkeypatch):
    """huggingface_hub pointed at a hub on loopback (tests/support/hub_server.py): `serve(repo_id, folder)`."""
    from huggingface_hub import constants
    from support.hub_server import hub_server

    stack = contextlib.ExitStack()

    def serve(repo_id, folder):
        url, requests = stack.enter_context(hub_server(repo_id, folder))
        monkeypatch.setattr(constants, "ENDPOINT", url)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(model_choice, "_reach", {})
        return requests

    with stack:
        yield serve


def test_a_download_reports_its_bytes_and_then_loads_with_the_hub_gone(local_hub, cache_at, tmp_path):
    src = hub_cache_checkpoint(tmp_path / "src", "org/tiny", hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=2, intermediate_size=37)
    cache_at(tmp_path / "cache")
    requests = local_hub("org/tiny", src)
    heard = []
    path = bert_core.download_model("org/tiny", progress=lambda msg, frac: heard.append((msg, frac)))
    assert path == bert_core.cached_hub_snapshot("org/tiny") and (path / "model.safetensors").is_file()
    assert any(r.startswith("GET /org/tiny/resolve/") and r.endswith("model.safetensors") for r in requests)
    fracs = [f for m, f in heard if "MB" in m and " of " in m]  # "Downloading org/tiny: 3 of 5 MB"
    assert fracs and fracs == sorted(fracs) and fracs[-1] == pytest.approx(0.8), heard
    requests.clear()
    local_hub_gone = bert_core.load_model("org/tiny")  # from the cache: not one request
    assert local_hub_gone.config.hidden_size == 32 and requests == []


def test_a_hub_repo_with_pickles_only_is_refused_before_a_byte_is_fetched(local_hub, cache_at, tmp_path):
    src = hub_cache_checkpoint(tmp_path / "src", "org/pickled", hidden_size=32, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=37)
    (src / "model.safetensors").rename(src / "pytorch_model.bin")
    cache_at(tmp_path / "cache")
    requests = local_hub("org/pickled", src)
    with pytest.raises(bert_core.BertCoreError, match="safetensors only"):
        bert_core.download_model("org/pickled")
    assert not any("/resolve/" in r for r in requests)


def test_use_bert_base_downloads_it_in_one_click_from_a_reachable_hub(bert_base_snapshot, local_hub, cache_at,
                                                                       tmp_path):
    cache_at(tmp_path / "cache")  # nothing downloaded yet
    requests = local_hub("bert-base-uncased", bert_base_snapshot)  # the hub: our bert-base-sized checkpoint
    at = open_page("lesson", timeout=300)
    assert_ok(at)
    offer = next(b for b in at.button if b.key == "bert_base_offer_lesson")
    assert offer.label == model_choice.OFFER_LABEL  # reachable, not on disk: the download is announced
    offer.click().run()
    assert_ok(at)
    assert sum(r.startswith("GET /bert-base-uncased/resolve/") for r in requests) >= 3  # config, weights, vocab
    cur = at.session_state["current"]
    assert cur.model_key == "bert-base-uncased" and cur.model.config.num_hidden_layers == 12
    assert bert_core.cached_hub_snapshot("bert-base-uncased") is not None  # on disk: the next visitor's is instant
    assert model_choice.offer_label() == model_choice.CACHED_LABEL
