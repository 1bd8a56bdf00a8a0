"""The Masking page through AppTest: one seeded draw, draw again, options, many-draw statistics."""

from __future__ import annotations

from support.apptest import assert_ok, open_page

HOSTILE = "<script>alert(1)</script> [MASK]"
LONG = "unaffable playing bookkeeper the cat sat on the mat and the dog was very happy today"


def draw_table(at):
    return at.dataframe[0].value


def test_default_input():
    at = open_page("masking")
    assert_ok(at)
    assert at.subheader[0].value == "Seed 0, draw 1"
    df = draw_table(at)
    assert df["token"].tolist()[0] == "[CLS]" and df["outcome"].iloc[0] == "special"
    # The sidebar's default [MASK] sentence would show only a special token here: the page opens on its own.
    assert "[MASK]" not in df["token"].tolist() and any("opens on its own example" in c.value for c in at.caption)
    at.sidebar.text_area(key="text").set_value("The [MASK] sat.").run()  # a text the user typed wins
    df = draw_table(at)
    assert (df.loc[df["token"] == "[MASK]", "outcome"] == "special").all() and "[MASK]" in df["token"].tolist()
    assert not any("opens on its own example" in c.value for c in at.caption)
    assert "word id" not in df.columns
    assert len(at.get("plotly_chart")) == 2  # rates and per-position frequency
    assert any("background:" in md.value for md in at.markdown)  # the chips


def test_sentence_pair():
    at = open_page("masking", text="The cat sat on the mat.", pair="It was very happy.")
    assert_ok(at)
    df = draw_table(at)
    assert df["segment"].iloc[-1] == "B" and "happy" in df["token"].tolist()


def test_draw_again_advances_and_changes_the_draw():
    at = open_page("masking", text=LONG)
    at.slider(key="mask_p").set_value(0.5).run()
    first = draw_table(at)["outcome"].tolist()
    at.button(key="mask_draw_again").click().run()
    assert_ok(at)
    assert at.subheader[0].value == "Seed 0, draw 2" and at.number_input(key="mask_draw").value == 2
    second = draw_table(at)["outcome"].tolist()
    at.button(key="mask_draw_again").click().run()
    third = draw_table(at)["outcome"].tolist()
    assert first != second or second != third
    at.number_input(key="mask_draw").set_value(1).run()  # back to draw 1: the same draw again
    assert draw_table(at)["outcome"].tolist() == first


def test_mask_probability_one_selects_every_ordinary_token():
    at = open_page("masking", text=LONG)
    at.slider(key="mask_p").set_value(1.0).run()
    assert_ok(at)
    df = draw_table(at)
    assert (df["selected"] == (df["outcome"] != "special")).all()
    assert (df.loc[df["selected"], "label id"] != -100).all()


def test_whole_word_masking():
    at = open_page("masking", text=LONG, pair="the bookkeeper was unaffable")
    at.slider(key="mask_p").set_value(0.5).run()
    at.checkbox(key="mask_whole_word").check().run()
    assert_ok(at)
    df = draw_table(at)
    assert "word id" in df.columns
    words = df[df["word id"] >= 0].groupby("word id")["selected"].nunique()
    assert (words == 1).all()  # every piece of a word shares its fate
    a_ids = set(df.loc[df["segment"] == "A", "word id"]) - {-1}
    b_ids = set(df.loc[df["segment"] == "B", "word id"]) - {-1}
    assert a_ids and b_ids and not a_ids & b_ids


def test_many_draw_statistics():
    at = open_page("masking", text=LONG)
    at.number_input(key="mask_n").set_value(5000).run()
    assert_ok(at)
    stats = at.dataframe[1].value
    assert stats["rate"].tolist()[0] == "selected (of eligible)"
    assert stats["within 3 sigma"].all(), stats
    assert abs(stats["observed"].iloc[0] - 0.15) < 0.01
    assert any("5,000 draws" in c.value for c in at.caption)


def test_hostile_text_is_escaped(markup_default_model):
    at = open_page("masking", text=HOSTILE)
    assert_ok(at)
    chips = [md.value for md in at.markdown if "background:" in md.value]
    assert chips and "&lt;" in chips[0]  # the "<" token shown as text
    for el in [*at.markdown, *at.caption, *at.subheader, *at.info]:
        assert "<script" not in el.value.lower()


def test_draw_number_survives_a_visit_to_another_page():
    at = open_page("masking")
    at.button(key="mask_draw_again").click().run()
    at.button(key="mask_draw_again").click().run()
    at.switch_page("views/anatomy.py").run()
    at.switch_page("views/masking.py").run()
    assert_ok(at)
    assert at.subheader[0].value == "Seed 0, draw 3"
