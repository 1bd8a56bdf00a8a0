"""The Training page, driven through AppTest: start, step, pause, reset, queue, keep the model."""

from __future__ import annotations

import pytest
from support.apptest import assert_ok, open_page

from bert_core.runs.settings import CORPUS_CHOICES
from bert_core.runs.status import FINISHED, IDLE, PAUSED, RUNNING
from ui.state import SESSION_LABEL

TINY = "tiny (2 layers, 64 wide)"
FARM, WORDNET = CORPUS_CHOICES["farm"], CORPUS_CHOICES["wordnet"]


pytestmark = pytest.mark.usefixtures("slots")  # conftest: a fresh slot manager per test


def session(at):
    return at.session_state["train_session"]


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def open_training(max_steps: int = 500, corpus: str = WORDNET.label):
    at = open_page("training")
    assert_ok(at)
    at.radio(key="train_corpus").set_value(corpus).run()
    at.selectbox(key="train_preset").select(TINY)
    at.number_input(key="train_max_steps").set_value(max_steps)
    return at.run()


def test_start_train_pause_reset(slots):
    at = open_training()
    assert any("press **Start**" in i.value for i in at.info)
    at.button(key="train_start").click().run()
    assert_ok(at)
    assert session(at).state == RUNNING
    for _ in range(3):  # AppTest does not fire run_every timers: each run is one tick of the fragment
        at.run()
    assert_ok(at)
    steps = session(at).step
    assert steps > 0 and metrics(at)["State"] == "training"
    assert metrics(at)["Step"].startswith(f"{steps} /")
    assert len(at.get("plotly_chart")) == 2  # loss curves and the attention heatmap
    # The sidebar's default text has a [MASK], so it is the first probe (in place of its lower-case twin).
    assert at.dataframe[0].value["sentence"].tolist() == ["She [MASK] the letter to her mother.",
                                                          "the cat sat on the [MASK].",
                                                          "a [MASK] is a large body of water."]
    at.selectbox(key="train_layer").select(1).run()
    at.selectbox(key="train_head").select(1).run()
    assert_ok(at)

    at.button(key="train_pause").click().run()
    assert session(at).state == PAUSED and metrics(at)["State"] == "paused"
    paused_at = session(at).step
    at.run()
    assert session(at).step == paused_at  # paused: page reruns do not train
    assert slots.position(session(at).id) is None  # and the slot is free for others

    at.button(key="train_reset").click().run()
    assert_ok(at)
    assert session(at).state == IDLE and session(at).trainer is None
    assert at.selectbox(key="train_preset").value == TINY  # the settings survive a reset


def test_a_first_visit_shows_an_example_run_then_ten_steps_replace_it_and_the_model_is_used_from_the_sidebar():
    import base64
    import json

    import numpy as np

    from bert_core import BUNDLED_DIR
    from bert_core.runs.settings import example_run

    at = open_training()
    charts = [c for c in at.get("plotly_chart")]
    assert len(charts) == 1  # the example, before any run of the user's
    fig = json.loads(charts[0].proto.spec)
    report = json.loads((BUNDLED_DIR / "training_report_phase1.json").read_text())
    loss = next(tr for tr in fig["data"] if tr["name"] == "total MLM loss")
    y = np.frombuffer(base64.b64decode(loss["y"]["bdata"]), dtype=loss["y"]["dtype"])  # plotly's typed array
    assert y.tolist() == [row["mlm"] for row in report["log"]]  # the bundled model's own logged numbers
    assert any("An example, not your run" in c.value for c in at.caption)
    assert example_run().steps == report["steps"]
    at.button(key="train_ten").click().run()
    assert_ok(at)
    assert not any("An example, not your run" in c.value for c in at.caption)  # the user's run replaces it
    assert session(at).step == 10 and session(at).state == PAUSED
    assert metrics(at)["Step"] == "10 / 500"
    assert [b.label for b in at.get("download_button") if b.key == "train_download"]

    at.button(key="train_use").click().run()
    assert_ok(at)
    assert any("step 10" in s.value for s in at.success)
    assert at.session_state["session_model"].source == "session"
    assert at.session_state["session_model_version"] == 1
    choice = at.sidebar.selectbox(key="model_choice")
    assert SESSION_LABEL in choice.options
    choice.select(SESSION_LABEL).run()
    assert_ok(at)
    assert at.session_state["current"].model_key == "session:1"

    # Training goes on with the session model selected; the stored copy does not change.
    at.button(key="train_ten").click().run()
    assert_ok(at)
    assert session(at).step == 20 and at.session_state["current"].model_key == "session:1"
    assert "10 steps" in at.session_state["session_model"].notes[0]


def test_run_finishes_at_its_step_budget():
    at = open_training(max_steps=10)
    at.button(key="train_start").click().run()
    for _ in range(30):
        if session(at).state == FINISHED:
            break
        at.run()
    assert_ok(at)
    assert session(at).state == FINISHED and session(at).step == 10
    assert any("Finished" in s.value for s in at.success)
    assert at.button(key="train_start").disabled and at.button(key="train_ten").disabled


def test_waits_in_line_when_all_slots_are_taken(slots):
    others = ["other-user-1", "other-user-2"]
    for o in others:
        assert slots.request(o) == 0
    at = open_training()
    at.button(key="train_start").click().run()
    assert_ok(at)
    assert session(at).step == 0 and metrics(at)["State"] == "waiting for a slot"
    assert any("number 1 in line" in i.value for i in at.info)
    at.run()
    assert session(at).step == 0  # still waiting
    slots.release(others[0])
    at.run()
    assert_ok(at)
    assert session(at).state == RUNNING and session(at).step > 0


def test_a_pasted_corpus_too_small_has_a_clear_message_and_one_big_enough_trains():
    at = open_training()
    at.radio(key="train_corpus").set_value("Paste text").run()
    at.text_area(key="train_text").input("too few words here").run()
    at.button(key="train_start").click().run()
    assert_ok(at)
    assert any("only 4 words" in e.value and "at least 10" in e.value for e in at.error)
    assert session(at).state == IDLE
    text = "\n".join(["the cat sat on the mat .", "the dog sat on the rug .", "a bird sang in the tree ."])
    at.text_area(key="train_text").input(text).run()
    at.button(key="train_ten").click().run()
    assert_ok(at)
    assert session(at).step == 10 and session(at).corpus_name == "pasted text"
    assert any("3 lines" in c.value for c in at.caption)


@pytest.mark.parametrize("objective", ["clm", "rtd"])
def test_other_objectives_train_probe_and_keep_their_model(objective):
    """GPT's and ELECTRA's objectives on the same page: ten steps, the right chart and probes, a usable copy."""
    import io
    import zipfile

    at = open_training()
    at.radio(key="train_objective").set_value(objective).run()
    assert_ok(at)
    assert at.slider(key="train_mask_p").disabled == (objective == "clm")  # clm masks nothing
    at.button(key="train_ten").click().run()
    assert_ok(at)
    s = session(at)
    assert s.step == 10 and s.trainer.cfg.objective == objective
    assert (s.trainer.generator is not None) == (objective == "rtd")
    # The ledger charges what the run holds: for rtd the generator's own weights too.
    from bert_core.runs.memory import tensor_bytes

    held = s.memory.held(s.mem_key)
    assert held >= 3 * tensor_bytes(s.trainer.model, *([s.trainer.generator] if objective == "rtd" else []))
    fig = at.get("plotly_chart")[0].proto.spec
    assert ("discriminator loss" in fig) == (objective == "rtd") and ("next-token loss" in fig) == (objective == "clm")
    assert len(at.dataframe[0].value) == 3  # one guess per probe [MASK]
    with zipfile.ZipFile(io.BytesIO(s.checkpoint_zip())) as z:
        arch = z.read("config.json").decode()
    assert ("ElectraForPreTraining" if objective == "rtd" else "BertLMHeadModel") in arch
    at.button(key="train_use").click().run()
    assert_ok(at)
    kept = at.session_state["session_model"]
    assert kept.model.has_rtd == (objective == "rtd") and kept.config.is_decoder == (objective == "clm")


def test_the_farm_corpus_is_the_default_and_brings_its_settings():
    """A first visit opens on the corpus that learns in a minute, with its model size, rate and step budget."""
    at = open_page("training")
    assert_ok(at)
    assert at.radio(key="train_corpus").value == FARM.label
    assert at.selectbox(key="train_preset").value == FARM.preset
    assert at.number_input(key="train_max_steps").value == FARM.max_steps
    assert any("learns in a minute because its vocabulary is tiny" in c.value and "billion words" in c.value
               for c in at.caption)
    at.radio(key="train_corpus").set_value(WORDNET.label).run()  # another corpus brings its own defaults
    assert at.selectbox(key="train_preset").value == WORDNET.preset
    assert at.number_input(key="train_max_steps").value == WORDNET.max_steps
    at.radio(key="train_corpus").set_value(FARM.label).run()
    at.button(key="train_ten").click().run()
    assert_ok(at)
    s = session(at)
    assert s.step == 10 and s.corpus_name == FARM.name and s.trainer.tok.vocab_size < 200
    assert s.trainer.cfg.random_rows and s.trainer.cfg.batch_size == FARM.batch_size
    table = at.dataframe[0].value
    assert table["right answer"].tolist() == ["barks", "grass", "bird", "bread"]  # the farm's own probes
