"""The Lesson page under AppTest: every step, its question and reveal, on the bundled models, a bert-base-sized
checkpoint and every family; its URL state, presenter mode, try-this buttons, and hostile sentences."""

from __future__ import annotations

import pytest
from streamlit.elements.lib import policies
from streamlit.testing.v1 import AppTest
from support.apptest import ROOT, assert_ok
from support.hostile import HOSTILE

import bert_core
from bert_core.figures.style import CELL_TEXT
from bert_core.lesson import QUESTIONS
from bert_core.lesson.questions import bert_large_config
from ui.lesson import content as lesson
from ui.lesson import state as lesson_state
from ui.markdown import escape_markdown

N = len(lesson.STEPS)


def open_lesson(query: dict | None = None, timeout: float = 120) -> AppTest:
    """The app at its root (the Lesson is the landing page), with these query parameters."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert_ok(at)
    return at


def expected(m: bert_core.LoadedModel, i: int, seed: int = 0):
    """The question of step i on its own sentence, computed here straight from bert_core.lesson."""
    s = lesson.STEPS[i - 1]
    fn, args, kwargs = lesson.question_call(s, s.text, s.pair, seed)
    assert fn is QUESTIONS[s.question]
    try:
        return fn(m, *args, **kwargs)
    except bert_core.BertCoreError:
        return None


def walk(at: AppTest, m: bert_core.LoadedModel, guess_right: bool = True) -> int:
    """Go through every step: guess, reveal, check the reveal is the model's answer. Returns questions asked."""
    asked = 0
    for i in range(1, N + 1):
        assert at.header[0].value.startswith(f"Step {i} of {N}"), at.header[0].value
        assert at.query_params["step"] == str(i)
        q = expected(m, i)
        if q is None:  # the step says what its question needs instead
            assert any("needs another sentence" in x.value for x in at.info), (i, [x.value for x in at.info])
        else:
            asked += 1
            assert at.radio, i
            guess = q.answer if guess_right else (q.answer + 1) % len(q.choices)
            at.radio[0].set_value(guess).run()
            assert_ok(at)
            at.button(key="lesson_reveal").click().run()
            assert_ok(at)
            shown = escape_markdown(q.choices[q.answer])
            alerts = [a.value for a in (*at.success, *at.error)]
            assert len(alerts) == 1 and shown in alerts[0], (i, alerts, shown)
            assert lesson.answer_label(q) in alerts[0]  # "the model's answer" only for what the model computed
            assert (len(at.success) == 1) == (guess == q.answer)
            assert any(escape_markdown(q.reveal) == md.value for md in at.markdown), i
        if i < N:
            at.button(key="lesson_next").click().run()
            assert_ok(at)
    return asked


@pytest.mark.parametrize("model", ["bundled-minilm", "bundled"])
def test_every_step_asks_and_reveals_what_the_model_computes(model):
    at = open_lesson({"model": model})
    m = bert_core.load_model(model)
    asked = walk(at, m)
    assert asked == N, asked  # every question makes sense on both bundled models
    # Every checklist item ticked, every answer counted right.
    assert at.metric[0].value == f"{N} / {N}"
    ticks = next(md.value for md in at.markdown if "the role of [CLS]" in md.value)
    assert ticks.count(lesson.TICK) == len(lesson.CHECKLIST) and lesson.UNTICKED not in ticks


def test_a_wrong_guess_is_counted_wrong():
    at = open_lesson()
    at.radio[0].set_value(0).run()  # "1 piece": "unaffordable" is several pieces in bert-base-uncased's vocabulary
    at.button(key="lesson_reveal").click().run()
    assert at.error and "the tokenizer's answer is" in at.error[0].value  # the tokenizer cut it, not the model
    assert at.metric[0].value == "0 / 1"


def test_reveal_needs_a_guess_first_but_not_in_presenter_mode():
    at = open_lesson()
    assert at.button(key="lesson_reveal").disabled
    at = open_lesson({"present": "1"})
    assert not at.button(key="lesson_reveal").disabled
    at.button(key="lesson_reveal").click().run()
    assert at.info and "The tokenizer's answer" in at.info[0].value


def _blocks(node):
    """A block and every block under it."""
    yield node
    for c in getattr(node, "children", {}).values():
        yield from _blocks(c)


def step_of(question: str) -> int:
    return next(i for i, s in enumerate(lesson.STEPS, start=1) if s.question == question)


@pytest.mark.parametrize("question, label", [("kept_share", "The masking rule's answer"),
                                             ("bert_base_size", "The paper's answer"),
                                             ("head_sizes", "The answer"), ("learning_signal", "The answer"),
                                             ("top_guess", "The model's answer")])
def test_only_what_the_model_computed_is_called_the_models_answer(question, label):
    at = open_lesson({"step": str(step_of(question)), "present": "1"})
    assert at.button(key="lesson_reveal").label == f"Reveal {label[0].lower()}{label[1:]}"
    at.button(key="lesson_reveal").click().run()
    assert at.info and at.info[0].value.startswith(f"{label}:"), at.info[0].value


def test_number_keys_pick_a_guess_in_presenter_mode(monkeypatch):
    at = open_lesson({"step": str(step_of("top_guess")), "present": "1"})
    keys = [at.button(key=f"lesson_pick_{i}") for i in range(1, 5)]
    assert [b.proto.shortcut for b in keys] == ["1", "2", "3", "4"]
    # Streamlit checks a widget's default against the Session State API only in a server: as if in one.
    monkeypatch.setattr(policies.runtime, "exists", lambda: True)
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    warned = []
    monkeypatch.setattr(policies._LOGGER, "warning", lambda msg, *args, **kw: warned.append(msg % args))
    keys[2].click().run()
    assert_ok(at)
    assert at.radio[0].value == 2
    assert not warned  # the number key's value, not a default as well
    monkeypatch.undo()
    at.button(key="lesson_reveal").click().run()
    q = expected(bert_core.load_model(), step_of("top_guess"))
    assert (len(at.success) == 1) == (q.answer == 2)
    at = open_lesson({"step": str(step_of("top_guess"))})
    with pytest.raises(KeyError):  # no number keys outside presenter mode
        at.button(key="lesson_pick_1")


@pytest.fixture(scope="module")
def slides_by_next() -> dict[tuple[str, int], tuple[list[str], str, str]]:
    """Each step's slide as a visitor meets it before any guess or reveal, on the default model, reached with Next
    from step 1, in presenter mode ("1") and in the normal page ("0"): {(present, step): (its markdown, its markdown
    and captions, texts(at))}.
    One walk a mode, read by the tests below that each walked the steps (or opened each step afresh) for itself:
    with no reveal on the way, a slide reached with Next is the slide ?step= opens."""
    out = {}
    for present in ("1", "0"):
        at = open_lesson({"present": present})
        for i in range(1, N + 1):
            assert at.header[0].value.startswith(f"Step {i} of {N}"), (present, at.header[0].value)
            assert at.query_params["step"] == str(i), (present, i)
            out[present, i] = ([md.value for md in at.markdown],
                               " ".join(md.value for md in (*at.markdown, *at.caption)), texts(at))
            if i < N:
                at.button(key="lesson_next").click().run()
                assert_ok(at)
    return out


def test_every_slide_names_the_model_it_runs(slides_by_next):
    m = bert_core.load_model()
    for i in range(1, N + 1):
        markdown, text, _ = slides_by_next["0", i]
        assert "MiniLM" in text, (i, text[:300])
        assert lesson.explain(lesson.STEPS[i - 1], m) in markdown


def test_step_in_the_url_and_presenter_mode():
    at = open_lesson({"step": "6", "present": "1"})
    assert at.header[0].value.startswith(f"Step 6 of {N}")
    # On a projector the sentence is shown, not edited: its box is only in the presenter's "Class and sentence"
    # popover (closed, off the slide).
    assert [t.key for t in at.text_input] == ["w_lesson_text_6"]
    assert any(b.type == "popover" for b in at.main.children.values() for b in _blocks(b))
    assert any("Sentence:" in c.value for c in at.caption)
    assert any("stSidebar" in h.proto.body and "font-size: 22px" in h.proto.body for h in at.get("html"))
    at = open_lesson({"step": "99"})
    assert at.header[0].value.startswith(f"Step {N} of {N}")
    at = open_lesson({"step": "x"})
    assert at.header[0].value.startswith("Step 1 of")


def test_a_teachers_sentence_travels_in_the_url_and_changes_the_question():
    at = open_lesson({"step": "1"})
    at.text_input(key="w_lesson_text_1").set_value("Photosynthesis feeds the planet.").run()
    assert_ok(at)
    assert at.query_params["t1"] == "Photosynthesis feeds the planet."
    assert "Photosynthesis" in at.markdown[1].value or any("photosynthesis" in md.value.lower() for md in at.markdown)
    # A fresh visitor with that link sees the teacher's sentence and its question.
    at2 = open_lesson({"step": "1", "t1": "Photosynthesis feeds the planet."})
    assert at2.text_input(key="w_lesson_text_1").value == "Photosynthesis feeds the planet."
    q = QUESTIONS["pieces"](bert_core.load_model(), "Photosynthesis feeds the planet.")
    assert any(escape_markdown(q.prompt) in md.value for md in at2.markdown)
    # Back to the lesson's own sentence drops it from the URL.
    at2.button(key="lesson_restore").click().run()
    assert "t1" not in at2.query_params


def test_try_this_changes_the_sentence_in_one_click():
    at = open_lesson({"step": "7"})
    before = [md.value for md in at.markdown if "Your guess first" in md.value]
    at.button(key="lesson_try").click().run()
    assert_ok(at)
    assert at.text_input(key="w_lesson_pair_7").value == lesson.STEPS[6].try_pair
    assert at.query_params["b7"] == lesson.STEPS[6].try_pair
    assert [md.value for md in at.markdown if "Your guess first" in md.value] == before  # same question...
    at.radio[0].set_value(1).run()
    at.button(key="lesson_reveal").click().run()  # ...answered for the new pair
    q = QUESTIONS["next_sentence"](bert_core.load_model(), lesson.STEPS[6].try_text, lesson.STEPS[6].try_pair)
    assert escape_markdown(q.reveal) in [md.value for md in at.markdown]


def link_of(at: AppTest) -> tuple[str, str, dict]:
    """The step's full-page link: (its words, its path, its query)."""
    import urllib.parse

    md = next(md.value for md in at.markdown if "Open the full" in md.value)
    words, href = md[1:].split("](", 1)
    url = urllib.parse.urlparse(href.rstrip(")"))
    return words, url.path, {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}


def test_full_page_link_carries_the_sentence():
    at = open_lesson({"step": "4"})
    link = next(md.value for md in at.markdown if "Open the full Predictions page" in md.value)
    assert "(/predictions?text=She+%5BMASK%5D+the+letter+to+her+mother." in link


def test_full_page_links_open_what_the_slide_showed():
    from bert_core.lesson import attention as lesson_attention
    from bert_core.lesson import heads as H
    from bert_core.lesson import questions as Q

    m = bert_core.load_model()
    k = step_of("attention_target")
    layer, head = Q.attention_head(m, lesson.STEPS[k - 1].text)
    at = open_lesson({"step": str(k)})
    words, path, q = link_of(at)
    assert path == "/attention" and (q["layer"], q["head"]) == (str(layer + 1), str(head + 1))
    assert f"at layer {layer + 1}, head {head + 1}" in words and q["text"] == lesson.STEPS[k - 1].text
    assert f"layer {layer + 1}, head {head + 1}" in " ".join(c.value for c in at.caption)  # the slide's own words

    k = step_of("knockout_head")
    s = lesson.STEPS[k - 1]
    layer, head = H.top_head(bert_core.head_importance(m, s.text, None, layers=H.last_layer(m)))
    words, path, q = link_of(open_lesson({"step": str(k)}))
    assert path == "/heads" and (q["layer"], q["head"]) == (str(layer + 1), str(head + 1)) and q["text"] == s.text

    k = step_of("learning_signal")
    layer, head = lesson_attention.attention_layer_head(m)
    at = open_lesson({"step": str(k)})
    words, path, q = link_of(at)
    assert path == "/bert-vs-gpt" and (q["layer"], q["head"]) == (str(layer + 1), str(head + 1))
    assert f"Layer {layer + 1}, head {head + 1}" in " ".join(c.value for c in at.caption)

    k = step_of("next_sentence")
    s = lesson.STEPS[k - 1]
    words, path, q = link_of(open_lesson({"step": str(k)}))
    assert path == "/predictions" and q["section"] == "nsp" and (q["text"], q["pair"]) == (s.text, s.pair)

    for question in ("bert_base_size", "initial_loss", "head_sizes"):  # pages that do not read the sentence
        words, path, q = link_of(open_lesson({"step": str(step_of(question))}))
        assert "with this sentence" not in words and "text" not in q, (question, words, q)


def test_a_bert_base_sized_checkpoint(tmp_path, monkeypatch):
    from support.checkpoints import write_base_sized_checkpoint as make_checkpoint

    d = tmp_path / "bertbase"
    d.mkdir()
    make_checkpoint(d)
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(tmp_path))
    at = open_lesson({"model": str(d)}, timeout=300)
    m = bert_core.load_model(str(d), local_roots=[str(tmp_path)])
    assert m.config.num_hidden_layers == 12 and m.config.hidden_size == 768
    walk(at, m, guess_right=False)
    assert "of BERT-base, same weights, two masks" in " ".join(c.value for c in at.caption)  # step 13 names it


@pytest.mark.parametrize("fam", ["roberta", "distilbert", "albert"])
def test_every_step_on_every_family(family_models, fam, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(family_models))
    at = open_lesson({"model": str(family_models / fam)})
    m = bert_core.load_model(str(family_models / fam), local_roots=[str(family_models)])
    asked = walk(at, m)
    assert asked >= 10, asked  # random tiny vocabularies: a step may ask for another sentence
    # Without NSP the pair step asks how many segment embeddings the family has.
    q = expected(m, 7)
    assert q is not None and "segment" in q.prompt


BAD = ("empty", "whitespace", "only specials")  # HOSTILE's sentences no question can read


@pytest.mark.parametrize("i", range(1, N + 1))
def test_hostile_sentences_in_every_step_and_a_bad_one_gets_one_message(i):
    """Every hostile sentence in each of the step's boxes: no exception, nothing injected into the page. The bad
    ones (BAD) in its sentence box: the question and the view fail on the same input and the step says so once,
    naming the step's own box (checked as the bad one arrives; sentence B is then the step's own, restored after
    each hostile pair). A step without a pair has one box: its next sentence replaces the last, and one "Back to
    the lesson's sentence" ends the step's walk."""
    at = open_lesson({"step": str(i)})
    has_pair = lesson.STEPS[i - 1].pair is not None
    keys = [lesson_state.text_key(i)] + ([lesson_state.pair_key(i)] if has_pair else [])
    for name, text in HOSTILE.items():
        for key in keys:
            at.text_input(key=f"w_{key}").set_value(text).run()
            assert not at.exception, (i, name, [e.value for e in at.exception])
            for md in at.markdown:
                assert "<script>" not in md.value and "<img" not in md.value, (i, name)
            if key == keys[0] and name in BAD:
                assert_one_message(at, i, name)
        if has_pair:
            at.button(key="lesson_restore").click().run()
    if not has_pair:
        at.button(key="lesson_restore").click().run()
    assert_ok(at)
    assert at.text_input(key=f"w_{keys[0]}").value == lesson.STEPS[i - 1].text


def assert_one_message(at: AppTest, i: int, name: str) -> None:
    """Step i with a bad sentence: one message (none where the question reads no sentence), never the sidebar's words
    or sentence A on a one-sentence step; the step's own box named."""
    assert_ok(at)
    messages = [x.value for x in (*at.info, *at.warning, *at.error)]
    reads_text = "text" in lesson.QUESTION_INPUTS[lesson.STEPS[i - 1].question]
    assert len(messages) == (1 if reads_text else 0), (i, name, messages)
    for msg in messages:
        assert "sidebar" not in msg and "non-empty lines" not in msg, (i, name, msg)
        if lesson.STEPS[i - 1].pair is None:
            assert "sentence A" not in msg, (i, name, msg)
        if name != "only specials":
            assert "“This step's sentence”" in msg, (i, name, msg)


def test_the_anatomy_step_tries_bert_large():
    at = open_lesson({"step": str(lesson.KEYS.index("anatomy") + 1)})
    at.radio[0].set_value(1).run()
    at.button(key="lesson_reveal").click().run()
    assert any("Parameters of this model" in c.value for c in at.caption)
    at.toggle(key="lesson_large").set_value(True).run()
    assert_ok(at)
    large = next(c.value for c in at.caption if "Parameters of BERT-large" in c.value)
    # The table's count tied to the paper's 340M, what it counts said, and the model the answer counts named.
    assert "not MiniLM as in the answer" in large and "rounds BERT-large to 340M" in large, large
    assert "335,141,888" in large and "336,226,108" in large, large  # without and with the MLM and NSP heads
    total = at.dataframe[-1].value.set_index("component").loc["total", "parameters"]
    assert total == bert_core.param_counts(bert_large_config())["total"] and 330e6 < total < 340e6


@pytest.mark.parametrize("i, passes", [(2, 2), (4, 1), (5, 2), (6, 1), (7, 1), (8, 1)])
def test_a_steps_question_and_view_share_one_computation(i, passes, monkeypatch):
    """On a cache miss, a step runs the encoder once per input it shows (step 5: the sentence and its left part;
    step 2: the input vectors and the same-word cosines), not once for the question and again for the view."""
    from bert_core.model.encoder import BertModel
    from ui.cache import RESULTS

    calls = []
    forward = BertModel.forward
    monkeypatch.setattr(BertModel, "forward", lambda self, *a, **k: calls.append(1) or forward(self, *a, **k))
    RESULTS.clear()
    at = open_lesson({"step": str(i), "present": "1"})  # presenter mode: reveal without a guess
    at.button(key="lesson_reveal").click().run()
    assert_ok(at)
    assert not at.warning and not any("needs another" in x.value for x in at.info), [x.value for x in at.info]
    assert len(calls) == passes, (lesson.STEPS[i - 1].key, len(calls))


def texts(at: AppTest) -> str:
    """Every text the page shows (markdown, captions, alerts), the guess's options aside."""
    return " ".join(e.value for group in (at.markdown, at.caption, at.info, at.success, at.error) for e in group)


def test_no_answer_shows_before_the_reveal():
    step = {s.key: i for i, s in enumerate(lesson.STEPS, start=1)}
    at = open_lesson({"step": str(step["tokens"])})
    assert "tokens in all" not in texts(at)  # the count would give step 1's answer away
    at = open_lesson({"step": str(step["masking"])})
    assert "10%" not in texts(at) and "80 / 10 / 10" not in texts(at) + at.header[0].value
    at = open_lesson({"step": str(step["pretraining"])})
    assert not at.get("plotly_chart") and "ln V" not in texts(at)  # the curve starts at the answer
    at.radio[0].set_value(2).run()
    at.button(key="lesson_reveal").click().run()
    assert at.get("plotly_chart") and "The paper's reason" not in texts(at)  # the masking step's reveal stays there
    at = open_lesson({"step": str(step["masking"])})
    at.radio[0].set_value(1).run()
    at.button(key="lesson_reveal").click().run()
    assert escape_markdown("The paper's reason") in texts(at) and escape_markdown("mismatch") in texts(at)


def test_nsp_says_right_means_the_model_and_shows_the_truth_of_a_built_pair():
    m = bert_core.load_model()
    k = next(i for i, s in enumerate(lesson.STEPS, start=1) if s.question == "next_sentence")
    s = lesson.STEPS[k - 1]
    at = open_lesson({"step": str(k)})
    at.button(key="lesson_try").click().run()  # the lesson's own NotNext pair
    q = QUESTIONS["next_sentence"](m, s.try_text, s.try_pair)
    at.radio[0].set_value(q.answer).run()
    at.button(key="lesson_reveal").click().run()
    assert_ok(at)
    assert at.success and at.success[0].value.startswith("Right, the same as the model's answer")
    truth = next(md.value for md in at.markdown if "The truth, as this pair was built" in md.value)
    assert "NotNext" in truth
    assert ("The model got it wrong here" in truth) == (q.choices[q.answer] == "IsNext")
    # A pair the teacher typed: its truth is unknown here, so none is claimed.
    at = open_lesson({"step": str(k), f"b{k}": "Something else entirely."})
    at.radio[0].set_value(0).run()
    at.button(key="lesson_reveal").click().run()
    assert not any("The truth" in md.value for md in at.markdown)


def test_presenter_mode_names_the_model_and_has_a_way_out():
    at = open_lesson({"present": "1", "step": "3"})
    m = bert_core.load_model()
    c = m.config
    corner = " ".join(md.value for md in at.markdown)
    assert f"{c.num_hidden_layers} layers × {c.hidden_size} wide" in corner
    assert f"{c.num_attention_heads} heads" in corner and "parameters" not in corner.split("Model: ")[1]
    assert at.button(key="lesson_next").proto.shortcut == "right"  # Streamlit's own key, not an iframe's
    assert at.button(key="lesson_reveal").proto.shortcut == "space"
    at.button(key="lesson_exit").click().run()
    assert_ok(at)
    assert "present" not in at.query_params and at.query_params["step"] == "3"
    assert at.toggle(key="lesson_present").value is False and at.text_input  # the normal page, boxes and all
    assert not at.button(key="lesson_next").proto.shortcut  # no keys outside presenter mode


def test_presenter_mode_says_when_the_model_asked_for_could_not_be_loaded(tmp_path, monkeypatch):
    """The sidebar (hidden in presenter mode) is not the only place that says the slides fell back to another model:
    the corner names the model that failed, beside the one the slides are computed on (the site's default)."""
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(tmp_path))
    missing = tmp_path / "not-a-model"
    at = open_lesson({"present": "1", "step": "2", "model": str(missing)})
    corner = " ".join(md.value for md in at.markdown)
    assert "Could not load" in corner and escape_markdown("not-a-model") + "**:" in corner, corner
    assert "Model: **MiniLM**" in corner  # the offline default, not the tiny model
    at = open_lesson({"present": "1", "step": "2"})
    assert "Could not load" not in " ".join(md.value for md in at.markdown)


def chart_specs(at: AppTest) -> dict[str, dict]:
    """The plotly figures on the page, by key, as the JSON the browser receives."""
    import json

    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def reveal_step(question: str) -> AppTest:
    at = open_lesson({"step": str(step_of(question)), "present": "1"})
    at.button(key="lesson_reveal").click().run()
    assert_ok(at)
    return at


def test_step_1_shows_the_pieces_the_model_reads():
    at = reveal_step("pieces")
    chips = next(h.proto.body for h in at.get("html") if "bx-chip" in h.proto.body and "[CLS]" in h.proto.body)
    assert ">the<" in chips and ">The<" not in chips  # lower-cased, as the uncased tokenizer reads it
    assert '##</span>able<' in chips  # a word's later piece keeps its ##


def test_step_5s_two_charts_share_one_scale():
    specs = chart_specs(reveal_step("right_context"))
    both, left = specs["lesson-both"], specs["lesson-left"]
    assert both["layout"]["xaxis"]["range"] == left["layout"]["xaxis"]["range"]


def test_step_4_says_how_positions_are_counted():
    specs = chart_specs(reveal_step("top_guess"))
    assert "[CLS] is 0" in json_title(specs["lesson-pred"])


def json_title(spec: dict) -> str:
    """A chart's title as read (a long title is wrapped with <br> for the projector)."""
    t = spec["layout"]["title"]
    return (t["text"] if isinstance(t, dict) else t).replace("<br>", " ")


def test_step_9_hides_how_much_the_guess_loses_before_the_reveal():
    at = open_lesson({"step": str(step_of("knockout_head"))})
    spec = chart_specs(at)["lesson-heads-imp"]
    heat = next(t for t in spec["data"] if t["type"] == "heatmap")
    assert heat["showscale"] is False and "customdata" not in heat and "falls by" not in heat["hovertemplate"]
    assert heat["zmax"] == 1.0  # relative to the framed head, not in nats
    # Only the ranked layer (the last): no empty rows for the layers the question did not compute.
    z = heat["z"]  # plotly's typed array: {"bdata", "dtype", "shape"}
    assert heat["y"] == ["layer 6"] and (z["shape"] if isinstance(z, dict) else f"{len(z)}, {len(z[0])}") == "1, 12"


def test_step_11_labels_each_curve_with_its_own_vocabulary():
    spec = chart_specs(reveal_step("initial_loss"))["lesson-pretrain"]
    notes = " ".join(a["text"] for a in spec["layout"]["annotations"])
    assert "its V = 12,000" in notes and "a fresh model with V = 30,522" in notes and "this model's V" not in notes


def test_no_slide_shows_a_parameter_count_before_step_10s_reveal(slides_by_next):
    """Step 10 asks BERT-base's parameter count: no slide before its reveal prints the model's count, in presenter
    mode (its corner gives the shape only: on BERT-base "110.1M parameters" there was the answer on nine slides) or
    in the normal page (side column, sidebar). The count is the model's own, from its weights, as the corner had it."""
    k = step_of("bert_base_size")
    m = bert_core.load_model("bundled-minilm")
    n = sum(p.numel() for p in m.model.parameters())
    counts = (f"{n / 1e6:.1f}M", f"{n:,}", f"{n / 1e6:.0f}M parameters")
    for present in ("1", "0"):
        for i in range(1, N + 1):
            markdown, _, shown = slides_by_next[present, i]
            assert not any(c in shown for c in counts), (present, i, [c for c in counts if c in shown])
            if present == "1":
                corner = next(md for md in markdown if md.startswith("Model: "))
                assert "Model: **MiniLM**, 6 layers × 384 wide, 12 heads" == corner, (i, corner)
            if i == k:
                assert "110M" not in shown and "110 million" not in lesson.STEPS[k - 1].explain and "340M" not in shown


def test_step_10_offers_bert_base_without_its_parameter_count(monkeypatch):
    """Outside presenter mode the side column and the sidebar offer BERT-base beside step 10's question "How many
    parameters does the paper's BERT-base have?": neither the offer's label nor its help says a count."""
    from ui import model_choice

    for label in (model_choice.OFFER_LABEL, model_choice.CACHED_LABEL):
        monkeypatch.setattr(model_choice, "offer_label", lambda label=label: label)
        at = open_lesson({"step": str(step_of("bert_base_size"))})
        offers = [b for b in at.button if b.key and b.key.startswith("bert_base_offer")]
        assert {b.key for b in offers} == {"bert_base_offer_lesson", "bert_base_offer_sidebar"}
        words = " ".join(f"{b.label} {b.help}" for b in offers) + " " + texts(at)
        assert not any(n in words for n in ("110", "109", "340")), words


def test_step_2s_chart_plots_the_questions_word_not_a_typed_mask():
    """"I saw the [MASK] by the bank." + "Then the [MASK] went to the bank.": the question asks about "bank" (a
    typed [MASK] is not a word of the text), and the revealed chart plots "bank" too."""
    k = step_of("input_cosine")
    at = open_lesson({"step": str(k), f"t{k}": "I saw the [MASK] by the bank.",
                      f"b{k}": "Then the [MASK] went to the bank."})
    assert any("“bank” occurs twice" in md.value for md in at.markdown)
    at.radio[0].set_value(0).run()
    at.button(key="lesson_reveal").click().run()
    assert_ok(at)
    spec = chart_specs(at)["lesson-same-word"]
    assert json_title(spec).startswith("“bank” twice"), json_title(spec)


def test_step_8s_link_opens_layers_with_the_slides_sentence_only():
    """The link from step 8 (no sentence B) opens Layers on that sentence: no sentence B in the sidebar and no other
    sentence in a box (the page's own "two contexts" pair waits behind its toggle)."""
    from support.apptest import open_page

    k = step_of("lens_layer")
    words, path, q = link_of(open_lesson({"step": str(k)}))
    assert path == "/layers" and "pair" not in q
    at = open_page("layers", query=q)
    assert_ok(at)
    assert at.session_state["current"].text_pair is None
    boxes = [t.value for t in (*at.text_area, *at.text_input) if t.value]
    assert boxes == [lesson.STEPS[k - 1].text], boxes


def test_the_model_line_offers_bert_base_only_where_its_button_is(monkeypatch):
    """"BERT-base: one click away ("Use BERT-base")" where the side column and the sidebar show that button; not
    on a projector's slide, which has neither."""
    from ui import model_choice

    monkeypatch.setattr(model_choice, "offer_label", lambda: model_choice.OFFER_LABEL)
    k = step_of("top_guess")
    for present, offered in (("0", True), ("1", False)):
        at = open_lesson({"step": str(k), "present": present})
        line = next(md.value for md in at.markdown if "bx-model-line" in md.value)
        assert ("one click away" in line) == offered, (present, line)
        assert ("bert_base_offer_lesson" in {b.key for b in at.button}) == offered
        assert "then its encoder and new fill-in and NSP heads trained here" in line


def test_step_6_says_what_its_reveal_draws_and_both_head_sizes():
    """Before the reveal, presenter mode on a sentence past 8 tokens promises the row as bars (what it draws), not a
    map; the text gives the paper's head size and the model on screen's; the reveal's share is not followed by a
    ratio that reads as a second percentage."""
    k = step_of("attention_target")
    at = open_lesson({"step": str(k), "present": "1"})
    caps = " ".join(c.value for c in at.caption)
    assert "as bars" in caps and "column = the token looked at" not in caps, caps
    shown = texts(at)
    assert "12 heads of 64 in 768" in shown and "12 heads of 32 in 384" in shown, shown
    at.button(key="lesson_reveal").click().run()
    reveal = " ".join(a.value for a in (*at.success, *at.error)) + texts(at)
    assert "the next content word" in reveal and "times the next" not in reveal
    at = open_lesson({"step": str(k)})
    assert any("column = the token looked at" in c.value for c in at.caption)  # the normal page draws the map


def test_step_13_marks_each_cell_only_while_the_marks_stay_readable():
    """The default sentence (13 tokens) has a ✓ / · in every cell of both maps; the Try-this sentence (20 tokens)
    none (a hatch on a projector), and the caption says the mask in words."""
    from ui.lesson.views import MARKS_UP_TO

    k = step_of("learning_signal")
    at = reveal_step("learning_signal")
    specs = chart_specs(at)
    keys = ("lesson-mask-BERT", "lesson-mask-GPT:")
    marks = {key: [c for t in specs[key]["data"] if t.get("name") == CELL_TEXT for c in t["text"]]  # style.legible's
             for key in keys}                                                                     # text layers
    assert all(marks.values()) and all(set(m) <= {"✓", "·"} for m in marks.values()), list(specs)
    assert all(len(m) == len(specs[key]["data"][0]["x"]) ** 2 for key, m in marks.items())  # every cell
    at = open_lesson({"step": str(k), "present": "1", f"t{k}": lesson.STEPS[k - 1].try_text})
    at.button(key="lesson_reveal").click().run()
    specs = chart_specs(at)
    n = len(specs["lesson-mask-BERT"]["data"][0]["x"])  # one label a token
    assert n > MARKS_UP_TO, n
    assert all(not specs[key]["data"][0].get("text") and len(specs[key]["data"]) == 1 for key in keys)
    assert any("The empty triangle is GPT's mask" in c.value for c in at.caption)
