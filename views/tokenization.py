"""Tokenization: how the model's tokenizer (WordPiece, byte-level BPE or SentencePiece) cut the text into pieces."""

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.tokens import pieces_per_word_figure
from bert_core.inspect import input_tables
from bert_core.model.tokenization import SCHEMES, USER_MASK
from ui import callbacks
from ui.notebook_ui import notebook_button
from ui.state import analysis, require_current
from ui.widgets import chart, model_line, table

SPLIT_EXAMPLE = "The embeddings were unaffected by tokenization."  # em ##bed ##ding ##s, token ##ization

cur = require_current()
tok = cur.model.tokenizer
st.header("Tokenization")
model_line(cur.model)
if tok.scheme == "wordpiece":
    st.markdown(
        "BERT never sees letters: it sees **WordPiece tokens** from a fixed vocabulary "
        f"(this model has {tok.vocab_size:,}; bert-base-uncased 30,522; the paper says about 30,000): a common "
        "word is one token, a rarer one several pieces. The text is normalised (e.g. lower-cased) and split into words "
        "at spaces and punctuation; then each word is cut greedily, longest match first, into pieces the "
        "vocabulary knows, a piece inside a word carrying the `##` prefix. A word with a stretch no "
        "vocabulary entry matches becomes a single `[UNK]`; `[CLS]` starts the input and `[SEP]` closes each "
        "sentence."
    )
else:
    name, marker, _ = SCHEMES[tok.scheme]
    st.markdown(
        f"This {cur.model.family} model never sees letters: it sees **{name} tokens** from a fixed "
        f"vocabulary (this model has {tok.vocab_size:,}): a common word is one token, a rarer one several "
        f"pieces. A piece that starts a new word carries `{marker}`. "
        f"`{tok.specials['cls_token']}` starts the input and `{tok.specials['sep_token']}` closes each sentence."
    )
if cur.model_key == bert_core.MINILM_NAME:
    st.caption("The model on screen reads with bert-base-uncased's own vocabulary and rules (lower-cased, accents "
               "stripped), so these are the pieces the paper's uncased BERT-base reads.")
if tok.mask_token != USER_MASK:
    st.info(f"You always type {USER_MASK}; this model's own mask token is {tok.mask_token}, so every typed "
            f"{USER_MASK} becomes {tok.mask_token} (one token, id {tok.mask_token_id}) before tokenizing.")

with st.spinner("Tokenizing and running the model…"):
    trace = analysis(cur, embeddings=False, hidden_states=False, attentions=False)
if trace is None:
    st.stop()
if trace.truncation is not None:
    st.warning(trace.truncation.message + " The struck-through text below is what the model never sees.")

notebook_button(cur, "tokenization")
counts = input_tables.token_counts(trace, tok.all_special_ids, tok.unk_token_id)
c1, c2, c3, c4 = st.columns(4)
c1.metric("Words", counts["words"])
c2.metric("Word pieces", counts["pieces"])
c3.metric("[UNK] pieces", counts["unknown"])
c4.metric("Tokens (with specials)", f"{counts['tokens']} / {cur.model.max_length}",
          help="The model has one position embedding per position: longer inputs are cut.")

st.subheader("The text, piece by piece")
st.caption("Each highlight is one token over the characters it came from (hover for its position and id). "
           "Words alternate blue and orange; pieces of one word alternate two shades. Grey chips are "
           "special tokens, red marks [UNK].")
st.html(input_tables.tokens_html(trace, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id))

st.subheader("Every token")
st.caption("Position is the token's index t, counted from 0 at [CLS] (it picks the position embedding); word "
           "index counts the sentence's words from 0, as every page does; segment A/B picks the segment "
           "embedding; characters are offsets into its own sentence.")
tokens_df = pd.DataFrame(input_tables.token_rows(trace, tok.all_special_ids, tok.unk_token_id))
table(tokens_df.astype({"word index": "Int64"}), "tokens", key="csv-tokens", hide_index=True)

if tok.scheme == "wordpiece":
    st.subheader("How WordPiece split each word")
    st.markdown(
        "For each word WordPiece tries the longest candidate first and drops one character at a time until "
        "the vocabulary has it; then it continues from there with `##`. Pick a word to see every look-up."
    )
else:
    st.subheader(f"How {SCHEMES[tok.scheme][0]} split each word")
    st.markdown(
        "Byte-level BPE starts from single bytes and applies its learned merges in the order it learned them "
        "(the pair most frequent in its training text first); "
        "SentencePiece (Unigram) picks the most probable split under its piece probabilities. Below, each "
        "word as the pre-tokenizer hands it over (with its space mark) and the pieces the model read."
        if tok.scheme == "bpe" else
        "SentencePiece (Unigram) picks the most probable split of each word under its learned piece "
        "probabilities (the Viterbi path). Below, each word with its ▁ mark and the pieces the model read."
    )
sentences = [("A", trace.text)] + ([("B", trace.text_pair)] if trace.text_pair is not None else [])
splits, rows = [], []
specials = set(tok.specials.values())
for name, text in sentences:
    s = input_tables.split_words(tok, text)
    splits += s
    rows += input_tables.word_split_rows(s, tok.unk_token, specials, sentence=name)
if trace.truncation is not None:
    st.caption("Words of the whole text are listed, including those cut off above.")
words_df = pd.DataFrame(rows)
if tok.scheme != "wordpiece":  # BPE and Unigram make no greedy look-ups to count
    words_df = words_df.drop(columns=["look-ups"], errors="ignore")
table(words_df, "word splits", key="csv-words", hide_index=True)
if rows and all(r["number of pieces"] <= 1 for r in rows):  # the default sentence: every word is one piece
    pieces = tok.convert_ids_to_tokens(tok.encode_plain("embeddings"))
    st.caption("Every word here is a single vocabulary entry, so nothing is cut. A rarer word shows the cutting: "
               f"this model's vocabulary cuts “embeddings” into {' + '.join(pieces)}.")
    st.button(f"Try “{SPLIT_EXAMPLE}”", key="tok-split-example", on_click=callbacks.put, args=("text", SPLIT_EXAMPLE))

unknown = [r for r in rows if r["[UNK]"] == "yes"]
if unknown:
    st.error(f"{len(unknown)} word(s) became [UNK]: some stretch of each matches no vocabulary entry, "
             "so the whole word is replaced and the model cannot tell these words apart.")
    st.dataframe(pd.DataFrame(unknown)[["sentence", "word #", "word"]], hide_index=True, key="unk-words")

if splits:
    # Open on the most instructive word: an [UNK] if any, else the first one cut into several pieces.
    default = next((i for i, r in enumerate(rows) if r["[UNK]"] == "yes"),
                   next((i for i, r in enumerate(rows) if r["number of pieces"] > 1), 0))
    pick = st.selectbox("Word", range(len(splits)), index=default, key="tok_word",
                        format_func=callbacks.labels(f"{r['sentence']}{r['word #']}: {r['word']}" for r in rows))
    sp = splits[pick]
    if tok.scheme != "wordpiece" and sp.word not in specials:
        st.code(" + ".join(sp.pieces), language=None)
    elif not sp.steps:
        st.info("A special token: it is matched whole in the raw text before WordPiece runs, never split.")
    else:
        # The word is user text: shown with st.code (plain text), never inside markdown.
        st.markdown(f"**{len(sp.steps)} look-up(s)**, giving the pieces:")
        st.code(" + ".join(sp.pieces), language=None)
        table(pd.DataFrame(input_tables.step_rows(sp)), "wordpiece steps", key="csv-steps", hide_index=True)
    chart(pieces_per_word_figure(input_tables.pieces_per_word(splits)), "pieces per word", key="chart-pieces")

with st.expander("Three schemes side by side: WordPiece ##, byte-level BPE Ġ, SentencePiece ▁",
                 expanded=tok.scheme != "wordpiece"):
    st.markdown(
        "Each family's tokenizer marks word boundaries differently; the pieces carry the mark, so the model "
        "can tell a word's start from its middle."
    )
    # A static markdown table (no user text in it), so the page's dataframes stay the ones above.
    st.markdown("| scheme | used by | mark | rule | this model |\n|---|---|---|---|---|\n" + "\n".join(
        f"| {n} | {fam} | `{mk}` | {rule} | {'✓' if key == tok.scheme else ''} |"
        for (key, (n, mk, rule)), fam in zip(SCHEMES.items(), ("BERT, DistilBERT, ELECTRA", "RoBERTa", "ALBERT"))))
    st.caption("WordPiece marks the pieces *inside* a word (##); BPE and SentencePiece mark the *start* of a "
               "word (Ġ is the space byte 0x20 shown printable; ▁ is SentencePiece's visible space). Byte-level "
               "BPE never needs an unknown token: any byte is in its vocabulary.")
