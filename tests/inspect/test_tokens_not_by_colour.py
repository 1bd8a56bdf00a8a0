"""The Tokenization page's pieces are told apart by more than colour (WCAG 1.4.1): the two shades of one word's
pieces are 1.2-1.35:1 apart, so a piece that continues a word opens with a dark bar."""

from __future__ import annotations

import re

import bert_core
from bert_core.figures.style import contrast
from bert_core.inspect import input_tables

BAR = "border-left:2px solid #14120f"


def test_a_piece_that_continues_a_word_opens_with_a_dark_bar():
    m = bert_core.load_model()
    tok = m.tokenizer
    t = bert_core.analyze(m, "The unaffordable rent.")
    markup = input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id)
    chips = re.findall(r'<span class="bx-chip" title="#(\d+) [^"]*" style="([^"]*)"', markup)
    barred = [int(pos) for pos, style in chips if BAR in style]
    continuing = [i for i, p in enumerate(t.tokens) if p.startswith("##")]
    assert continuing and barred == continuing, (barred, t.tokens)
    for shade in ("#cfe2ff", "#9ec5fe", "#ffe3b3", "#ffc870"):  # the bar on every piece shade: >= 3:1 (1.4.11)
        assert contrast("#14120f", shade) >= 3
    as_read = input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id, as_read=True)
    assert BAR not in as_read  # the Lesson's chips show each piece's ## instead
