"""How students find a class: its code, link and QR code (on the public address, or this machine's LAN address
when the page is open as localhost), the teacher's join card and presenter popover."""

from __future__ import annotations

import html
import io
import os
import socket
import urllib.parse

import segno
import streamlit as st

from ui.lesson.content import STEPS
from ui.lesson.controls import sentence_ui
from ui.lesson.live_class import push
from ui.lesson.live_class.results import card_split_chart
from ui.lesson.live_class.session import TICK, Live, following_student, read_class
from ui.lesson.live_class.teacher import start

PUBLIC_URL = "BERT_EXPLORER_PUBLIC_URL"  # the address students open (e.g. https://bert.school.example)


LOCAL_HOSTS = {"localhost", "::1", "0.0.0.0", ""}


CARD_QR = 150  # px: the projector's QR code (a phone reads it from the back of a room at this size on a screen)


# Presenter mode's join card: a strip fixed at the top right, as wide as the QR code, holding what is the class's
# (the QR code, the code and link, who is there, how they voted); the page is kept clear of it. At 1280 x 720 the
# step gets 1280 - 185 px (its formulas fit: step 2's is 465 px in the right column), the strip ends above the model
# corner. Every text in it at least 18 px, as on the slide.
CARD_CSS = """<style>
.st-key-class_card {position: fixed; top: 0.3rem; right: 0.5rem; width: 166px !important; z-index: 101;
  background: #ffffff; border: 1px solid #d0d7de; border-radius: 0.5rem; padding: 0.3rem 0.3rem;
  gap: 0.25rem !important; max-height: calc(100vh - 3.4rem); overflow: hidden;}
.st-key-class_card p, .st-key-class_card [data-testid="stCaptionContainer"] p, .st-key-class_card button p
  {font-size: 18px !important; line-height: 1.2 !important; overflow-wrap: anywhere;}
.st-key-class_card [data-testid="stMarkdownContainer"] strong {font-size: 22px !important;}
.st-key-class_card [data-testid="stPopover"] button {padding: 0.2rem 0.3rem; min-height: 0;}
[data-testid="stMain"] [data-testid="stHorizontalBlock"] {gap: 1rem !important;}
.st-key-class_controls button p {font-size: 20px !important;}
[data-testid="stMain"] [data-testid="stAlertContainer"] {padding: 0.45rem 0.9rem !important;}
.st-key-class_card p.bx-join-link {overflow-wrap: break-word !important; word-break: normal !important; margin: 0;}
/* Beside the card only where it is fixed beside the step (PRESENTER_CSS's reflow query is this one's opposite):
   at 200% zoom or 320 px the card joins the page's flow and the step keeps the whole width and its type. */
@media (width > 900px) and (height > 480px) {
div[data-testid="stMainBlockContainer"], .block-container {padding-right: 185px !important;}
[data-testid="stMain"] h2 {font-size: 30px !important;}  /* the longest step title on one line beside the card */
/* Formulas at 20 px in the narrower column (step 9's is 527 px at 23 px); scripts at 0.9 of it stay at 18 px. */
[data-testid="stMain"] .katex {font-size: 20px !important;}
[data-testid="stMain"] .katex .reset-size6.size3, [data-testid="stMain"] .katex .reset-size6.size1
  {font-size: 0.9em !important;}
}
</style>"""


def breakable(url: str) -> str:
    """`url` as HTML that wraps only after its punctuation (/ . : ? = &), never inside a word (the projector's
    166 px card), escaped."""
    out = html.escape(url)
    for mark in ("/", ".", ":", "?", "=", "&amp;"):
        out = out.replace(mark, mark + "<wbr>")
    return out.replace("/<wbr>/<wbr>", "//<wbr>")


def public_base() -> tuple[str, str | None, str | None]:
    """(the address students open, without a trailing /; a note when the page's own address would not work; that
    note in a line, for the projector's card).

    BERT_EXPLORER_PUBLIC_URL when set (a proxy, a school's name for the server); else this page's address, except
    that a page opened as localhost / 127.0.0.1 is reached from this machine only: then this machine's network
    (LAN) address, with the same port, and a note saying so."""
    public = os.environ.get(PUBLIC_URL, "").strip().rstrip("/")
    if public.startswith(("http://", "https://")):
        return public, None, None
    parts = urllib.parse.urlsplit(st.context.url or "")
    path = parts.path.rstrip("/")
    for tail in ("/lesson", "/start"):
        if path.endswith(tail):
            path = path[: -len(tail)]
    host = (parts.hostname or "").lower()
    if host not in LOCAL_HOSTS and not host.startswith("127."):
        return f"{parts.scheme}://{parts.netloc}{path}", None, None
    lan = lan_address()
    # Addresses, the option and the setting in code spans: the side column's notes break those anywhere, and their
    # ordinary words never (ui/theme.py).
    where = f"This page is open as {f'`{host}`' if host else 'this address'}, an address only this computer can reach"
    short = f"Only this computer can reach {host}; "
    if lan is None:
        return (f"{parts.scheme}://{parts.netloc}{path}", f"{where}, and it has no network address: students "
                f"cannot join from their devices. Set `{PUBLIC_URL}` to an address they can open.",
                short + "students cannot join (no network).")
    port = f":{parts.port}" if parts.port else ""
    return (f"{parts.scheme or 'http'}://{lan}{port}{path}", f"{where}: the link and QR code use its network address "
            f"`{lan}` instead (the server must listen on it, e.g. `--server.address 0.0.0.0`). Set `{PUBLIC_URL}` "
            "to choose the address.", short + "students open:")


def lan_address() -> str | None:
    """This machine's address on its network (the interface a packet to the outside would leave by), or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # UDP: nothing is sent, the OS only picks the route
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith(("127.", "0.")) else ip


def qr_png(url: str, scale: int) -> bytes:
    buf = io.BytesIO()
    segno.make(url, error="m").save(buf, kind="png", scale=scale, border=2)
    return buf.getvalue()


def join_card(live: Live, big: bool) -> None:
    base, note, short = public_base()
    url = f"{base}/lesson?class={live.code}"
    if big:  # the projector: a strip fixed at the top right, beside the step (CARD_CSS keeps the page clear of it)
        st.html(CARD_CSS)
        with st.container(key="class_card"):
            st.image(qr_png(url, 5), width=CARD_QR, alt=f"QR code for the join link {url}")
            st.markdown(f"Join: code **{live.code}**")
            if short:  # in full in the presenter's popover
                st.caption(short)
            st.html(f'<p class="bx-join-link">{breakable(url)}</p>')
            _card_live(live)
            presenter_tools(live, note)
    else:
        st.markdown(f"Code: **{live.code}**")
        st.image(qr_png(url, 5), width=200, alt=f"QR code for the join link {url}")
        # The link under it wraps only after its punctuation (a caption broke it anywhere in a ~170 px column).
        st.html(f'<p class="bx-side-link"><a href="{html.escape(url)}" target="_blank" rel="noopener">'
                f'{breakable(url)}</a></p>')
        if note:
            st.warning(note)
        _count(live)
        with st.expander("Your teacher link"):
            st.caption("This link opens your class's teacher screen (a reload keeps it too). Do not share it, and "
                       "present full-screen (F11) so the class does not see the address bar.")
            st.code(f"{base}/lesson?class={live.code}&teacher={live.secret}", language=None)


def _card_live(live: Live) -> None:
    """The card's class, read on the projector's timer: who is there, who answered, and the split once shown."""
    code, secret = live.code, live.secret

    @st.fragment(run_every=TICK)
    def card_live() -> None:
        push.count_here(code)  # the projector's count, as the laptop's: a vote redraws it at once
        v = read_class(code, secret=secret)
        if v is None:
            return
        st.markdown(f"Present: **{v.present}**", help=f"{v.students} seat(s) in the class; a tab gone for more "
                    "than a minute is not counted here (its votes are kept).")
        if v.question is None:
            return
        st.markdown(f"Answered: **{v.answered} of {v.students}**")
        if (v.split_shown or v.revealed) and v.tally is not None:
            card_split_chart(v.question.choices, v.tally, v.answer)

    card_live()


PRESENTER_KEYS = "Keys: → or Page Down next, ← or Page Up back, space reveals the class's question."


def presenter_tools(live: Live | None, note: str | None = None, in_card: bool = False) -> None:
    """Presenter mode's "Start a class" and sentence box (and the note on the join link), in a popover at the top
    right (not on the slide). `in_card`: in the box of a class reconnecting or lost (no "Start a class": that box
    has its own way on)."""
    if following_student(live):
        return
    k = int(st.session_state.get("lesson_step", 1))
    alone = live is None and not in_card
    if alone:  # no card: the popover alone at the top right
        st.html("<style>.st-key-class_tools {position: fixed; top: 0.4rem; right: 0.6rem; z-index: 101; "
                "width: max-content !important;}</style>")
    with st.container(key="class_tools"), st.popover("Class and sentence", icon=":material/tune:"):
        if alone:
            st.button("Start a class", key="class_start", on_click=start, type="primary",
                      help="Students join with the code the projector then shows beside the step.")
        if note:
            st.warning(note)
        if live is not None:  # the slide has no room for the keys beside Back and Next (roles.keys_note)
            st.caption(PRESENTER_KEYS)
        sentence_ui(k, STEPS[k - 1])


def _count(live: Live) -> None:
    code, secret = live.code, live.secret

    @st.fragment(run_every=TICK)
    def count() -> None:
        v = read_class(code, secret=secret)
        if v is not None:
            st.metric("Students present", v.present, help=f"{v.students} seat(s) in the class; a tab gone for more "
                      f"than a minute is not counted here (its votes are kept).")

    count()
