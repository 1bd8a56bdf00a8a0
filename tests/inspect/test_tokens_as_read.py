"""The Lesson's token chips (tokens_html(as_read=True)): the pieces the model reads, ## on continuing pieces."""

from __future__ import annotations

import re

import bert_core
from bert_core.inspect import input_tables


def test_chips_show_the_tokens_as_read_with_their_hashes():
    m = bert_core.load_model()
    tok = m.tokenizer
    t = bert_core.analyze(m, "The unaffordable rent.")
    markup = input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id, as_read=True)
    text = re.sub(r"<[^>]+>", "", markup)  # what the page shows
    assert "the" in text and "The" not in text  # the uncased model reads it lower-cased
    pieces = [p for p in t.tokens if p.startswith("##")]
    assert pieces and all(p in text for p in pieces), (pieces, text)  # every continuing piece shows its ##
    assert markup.count('class="bx-chip"') == len(t.tokens)  # one chip per token, specials included
    plain = input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id)
    shown = re.sub(r"<[^>]+>", "", plain)
    assert "##" not in shown and "The" in shown  # the Tokenization page: as typed


def test_user_text_stays_escaped_as_read():
    m = bert_core.load_model()
    tok = m.tokenizer
    t = bert_core.analyze(m, "a <b>bold</b> & <script>x</script>")
    markup = input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id, as_read=True)
    assert "<b>" not in markup and "<script>" not in markup and "&lt;" in markup
