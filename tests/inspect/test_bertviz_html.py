"""Offline bertviz renderer: params parity with bertviz, escaping. (Its render in chromium:
tests/browser/test_browser_bertviz.py.)"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from support.bertviz_input import B_START, HOSTILE, TOKENS, XML_NAMESPACES, H, L, T, random_attention

from bert_core.inspect.bertviz_html import head_view_html, model_view_html

N_SCRIPTS = 5  # d3, jQuery, require.js, the AMD shim, bertviz's view


def start_tags(doc: str) -> list[str]:
    """Start tags as an HTML parser sees them (script content is opaque, as in a browser)."""
    tags = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append(tag)
            assert not any(name.startswith("on") for name, _ in attrs), (tag, attrs)

    Collector(convert_charrefs=True).feed(doc)
    return tags


def embedded_params(doc: str) -> dict:
    """The params object the page passes to bertviz's JS."""
    start = doc.index("const params = ") + len("const params = ")
    return json.JSONDecoder().raw_decode(doc, start)[0]


# --------------------------------------------------------------------------- unit tests


@pytest.mark.parametrize("pair", [None, B_START])
@pytest.mark.parametrize("render", [head_view_html, model_view_html])
def test_no_network_urls(render, pair):
    doc = render(random_attention(), TOKENS, sentence_b_start=pair)
    assert doc.startswith("<!DOCTYPE html>")
    assert "cdnjs" not in doc.lower() and "require.config({" not in doc
    assert "sourceMappingURL" not in doc
    markup = re.sub(r"<script>.*?</script>", "", doc, flags=re.DOTALL)  # the HTML outside scripts
    assert markup.count("<") > 10 and "<div" in markup
    assert not re.search(r"""(src|href|action|srcset)\s*=|url\(|@import""", markup, re.IGNORECASE)
    urls = set(re.findall(r"""https?://[^\s"'<>)]*""", doc))
    assert urls <= XML_NAMESPACES, urls - XML_NAMESPACES
    assert "Content-Security-Policy" in doc and "default-src 'none'" in doc


@pytest.mark.parametrize("render", [head_view_html, model_view_html])
def test_hostile_token_is_escaped(render):
    doc = render(random_attention(), TOKENS, sentence_b_start=B_START)
    assert HOSTILE not in doc
    assert "<img" not in doc.lower()
    assert "\u2028" not in doc and "<!--dog" not in doc
    # Parsed as HTML, the page holds only our elements: 5 scripts, no <img>, no event handlers.
    tags = start_tags(doc)
    assert tags.count("script") == N_SCRIPTS == doc.count("</script")
    assert "img" not in tags and "iframe" not in tags
    # ...and the token still reaches bertviz's JS unchanged (after bertviz's Ġ prettifying).
    left = embedded_params(doc)["attention"][0]["left_text"]
    assert left[2] == HOSTILE and left[4] == " dog\u2028<!--"


def test_head_params_match_bertviz():
    torch = pytest.importorskip("torch")
    from bertviz import head_view

    att = random_attention()
    torch_att = [torch.tensor(layer[None], dtype=torch.float64) for layer in att]
    for kwargs in ({}, {"sentence_b_start": B_START, "layer": 1, "heads": [0, 2]}):
        ours = embedded_params(head_view_html(att, TOKENS, decimals=None, **kwargs))
        theirs = embedded_params(head_view(torch_att, TOKENS, html_action="return", **kwargs).data)
        assert ours.pop("root_div_id").startswith("bertviz-") and theirs.pop("root_div_id")
        assert ours == theirs


def test_model_params_match_bertviz():
    torch = pytest.importorskip("torch")
    from bertviz import model_view

    att = random_attention()
    torch_att = [torch.tensor(layer[None], dtype=torch.float64) for layer in att]
    for kwargs in ({}, {"sentence_b_start": B_START, "include_heads": [1, 2], "display_mode": "light"}):
        ours = embedded_params(model_view_html(att, TOKENS, decimals=None, **kwargs))
        theirs = embedded_params(model_view(torch_att, TOKENS, html_action="return", **kwargs).data)
        ours.pop("root_div_id"), theirs.pop("root_div_id")
        assert ours == theirs


def test_sentence_pair_split():
    att = random_attention()
    data = embedded_params(head_view_html(att, TOKENS, sentence_b_start=B_START))["attention"]
    assert [d["name"] for d in data] == [
        "All",
        "Sentence A -> Sentence A",
        "Sentence B -> Sentence B",
        "Sentence A -> Sentence B",
        "Sentence B -> Sentence A",
    ]
    ab = np.array(data[3]["attn"])
    assert ab.shape == (L, H, B_START, T - B_START)
    np.testing.assert_allclose(ab, att[:, :, :B_START, B_START:], atol=5e-5)  # rounded to 4 decimals


def test_deterministic_output():
    att = random_attention()
    assert head_view_html(att, TOKENS) == head_view_html(att, TOKENS)
    assert head_view_html(att, TOKENS) != head_view_html(random_attention(seed=1), TOKENS)


@pytest.mark.parametrize("render", [head_view_html, model_view_html])
@pytest.mark.parametrize(
    "attention, tokens, kwargs",
    [
        (random_attention(), TOKENS[:-1], {}),  # one token short
        (random_attention(), TOKENS + ["x"], {}),  # one token too many
        (random_attention()[0], TOKENS, {}),  # 3-D
        (random_attention()[..., :-1], TOKENS, {}),  # not square
        (np.zeros((0, H, T, T)), TOKENS, {}),  # no layers
        (np.full((L, H, T, T), np.nan), TOKENS, {}),
        (random_attention(), "a b c d e f", {}),  # a string, not a list
        (random_attention(), [1, 2, 3, 4, 5, 6], {}),
        (random_attention(), TOKENS, {"sentence_b_start": 0}),
        (random_attention(), TOKENS, {"sentence_b_start": T}),
        (random_attention(), TOKENS, {"include_layers": [L]}),
    ],
)
def test_bad_input_raises_value_error(render, attention, tokens, kwargs):
    with pytest.raises(ValueError):
        render(attention, tokens, **kwargs)


def test_bad_head_view_selection_raises():
    with pytest.raises(ValueError):
        head_view_html(random_attention(), TOKENS, layer=L)
    with pytest.raises(ValueError):
        head_view_html(random_attention(), TOKENS, heads=[H])
    with pytest.raises(ValueError):
        head_view_html(random_attention(), TOKENS, heads=[])
    with pytest.raises(ValueError):
        model_view_html(random_attention(), TOKENS, display_mode="neon")
