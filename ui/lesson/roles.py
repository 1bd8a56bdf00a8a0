"""One renderer per role on the Lesson page, chosen once per run (`choose`).

Solo: a student alone, or exploring on their own in a class: sentence boxes, Back / Next, the side column.
Presenter: presenter mode on a projector: large type, one step per screen, keys. Teacher / PresentingTeacher: a live
class's teacher, on a laptop or a projector: the class's question instead of the step's own guess. Follower /
PresentingFollower: a student following the teacher, whose step is one fragment the class's push reruns: the teacher's
sentence as text, no Back / Next, and the teacher's moves said aloud. `slide` draws the parts every role shares (the
question, the guess, the view) and asks the role for the rest; the class's own parts (its question, its panel) are
live_class's.
"""

from __future__ import annotations

import contextlib
import zlib

import streamlit as st

from ui import callbacks, model_choice
from ui.a11y import move, moves
from ui.lesson import handout
from ui.lesson.content import (
    CHECKLIST,
    STEPS,
    TICK,
    UNTICKED,
    answer_label,
    built_truth,
    explain,
    link_markdown,
    question_token,
)
from ui.lesson.controls import PRESENTER_CSS, more_keys, presenter_corner, sentence_ui
from ui.lesson.live_class import panel as panels
from ui.lesson.live_class import push, shared
from ui.lesson.live_class.join import presenter_tools
from ui.lesson.live_class.panel import panel, question_ui
from ui.lesson.live_class.session import LEFT, Live, answer_withheld, follow, following_student, redraw_here
from ui.lesson.live_class.student import VOTE_SAID, sentence_note
from ui.lesson.live_class.teacher import teacher_question
from ui.lesson.notebooks import followed_button, keep_lesson_view, lesson_button, page_view
from ui.lesson.state import (
    go,
    goto_picked,
    init_texts,
    keep_guess,
    kept_guess,
    pair_key,
    reveal,
    step_from_url,
    text_key,
    texts_in_url,
    toggle_present,
)
from ui.lesson.views import ask, busy
from ui.markdown import escape_markdown
from ui.state import DEFAULT_MODEL, require_current

N = len(STEPS)

# Where a role moves focus (ui/a11y.moves), by CSS selector.
STEP_HEADING = "[data-testid='stMain'] h2"
SIDE_HEADING = ".st-key-lesson_side h3"  # the class panel's heading (live_class's panel)
CLASS_CARD = ".st-key-class_card"  # a presenting teacher's join card (live_class's join)


def defaults() -> None:
    """The Lesson's session keys, where a run has none: a whole run drops the keys of widgets it did not draw, and a
    following student's fragment runs again without the page's first lines."""
    init_texts()
    if "lesson_step" not in st.session_state:
        st.session_state["lesson_step"] = step_from_url(st.query_params.get("step"))
    st.session_state.setdefault("lesson_present", st.query_params.get("present") == "1")


class Solo:
    """A student alone: the step in a wide column, the side column beside it, the sentence in boxes."""

    class_panel = staticmethod(panels.on_your_own)  # the class's part: Start or Join; an exploring student's

    present = False
    own_guess = True  # the step's own guess and Reveal (a class's teacher and followers have the class's question)

    def style(self) -> None:
        """The page's own style, before anything else on it (Streamlit's theme needs none here)."""

    def address(self, k: int) -> None:
        """The step and every changed sentence in the URL, so one link shares them (a set is a message to the
        browser even when unchanged: only what changed is set)."""
        if st.query_params.get("step") != str(k):
            st.query_params["step"] = str(k)
        texts_in_url()

    def columns(self, k: int):
        """(the step's words and question, its view, the side column)."""
        st.progress(k / N)
        left, side = st.columns([3, 1], gap="large")
        return left, left, side.container(key="lesson_side")  # its labels wrap (ui/theme.py)

    def words(self, cur, step, k: int, text: str, pair: str | None, left, right) -> None:
        with left:
            st.markdown(explain(step, cur.model))
            if step.formula:
                st.latex(step.formula)
            sentence_ui(k, step)

    def nav(self, cur, step, k: int, text: str, pair: str | None, live: Live | None, keys) -> None:
        """Back / Next, and the link to the step's full page on the same sentence and model."""
        nav = st.columns([1, 1, 3])
        nav[0].button("← Back", key="lesson_back", disabled=k == 1, on_click=go, args=(k - 1,), width="stretch")
        nav[1].button("Next →", key="lesson_next", disabled=k == N, on_click=go, args=(k + 1,), width="stretch")
        model_param = None if cur.model_key in (DEFAULT_MODEL, "") or cur.model_key.startswith("session:") \
            else cur.model_key
        nav[2].markdown(link_markdown(step, text, pair, model_param, page_view(cur, step, text, pair)))

    def side(self, side, live: Live | None, k: int, text: str, pair: str | None) -> None:
        """Presenter mode, BERT-base, "Go to step", the step's notebook, the score, the checklist and the handout."""
        with side:
            st.toggle("Presenter mode", key="lesson_present", on_change=toggle_present,
                      help="For a projector: no sidebar, large type, one step per screen; → / ← / space as keys.")
            model_choice.bert_base_offer(st, key="lesson")  # the real BERT-base, where it can be had
            st.session_state["lesson_goto"] = k
            titles = [""] + [f"{i}. {s.title}" for i, s in enumerate(STEPS, 1)]
            st.selectbox("Go to step", range(1, N + 1), key="lesson_goto", on_change=goto_picked,
                         format_func=callbacks.labels(titles))
            lesson_button(require_current(), k, text, pair)
            answers = st.session_state.setdefault("lesson_answers", {})  # step key -> the guess was right
            st.metric("Right / answered", f"{sum(answers.values())} / {len(answers)}", help=f"{N} questions in all.")
            visited = st.session_state["lesson_visited"]
            st.markdown("**What you have seen**\n\n" + "\n".join(
                f"- {TICK if all(s in visited for s in steps) else UNTICKED} {item}"
                for item, steps in CHECKLIST.items()))
            handout.button(live, "lesson_handout")

    def run(self, live: Live | None) -> None:
        if not self.present:  # a join link opened here: its join box above the step (a projector shows its card)
            panels.join_first(live)
        k, text, pair, side = slide(self, live)
        self.side(side, live, k, text, pair)
        panel(live, self.present, side, self.class_panel)

    def question(self, live: Live | None, col, q, token: str, k: int, text: str, pair: str | None,
                 revealed: bool) -> bool:
        """The class's question in `col` (a student's vote; out of a class, the note of a class that ended); returns
        whether it is revealed."""
        return question_ui(live, col, q, token, k, text, pair, revealed)

    def moves(self, focus: str | None, heading: str | None, say: str | None, k: int) -> None:
        """Focus and announce what this run changed (ui/a11y.py); in presenter mode, that step k's keys are drawn."""
        moves(focus, heading, say, self.present, k if self.present else None)

    def class_focus(self, title: str) -> tuple[str, str | None]:
        """Where focus goes once a class is started or joined, and the text that element starts with (None: any):
        the class panel's heading, in the side column."""
        return SIDE_HEADING, None

    def left_focus(self) -> str:
        """Where focus goes once the class is left or ended: the panel's heading, where Start and Join now are."""
        return SIDE_HEADING

    def moved_on(self, title: str) -> str | None:
        """What is said when the step changes: nothing where this page moved it itself."""
        return None

    def new_sentence(self, text: str, pair: str | None) -> str | None:
        """What is said when the sentence changes: nothing where it was typed here."""
        return None

    def answer_revealed(self) -> str | None:
        """What is said at a reveal (focus goes to the answer): nothing where it was revealed here."""
        return None


class Presenter(Solo):
    """Presenter mode: words and question left, formula, sentence and view right, keys on Streamlit's own button
    shortcuts (they work whatever has focus, except a text box); no side column."""

    class_panel = staticmethod(presenter_tools)  # Start a class, the sentence

    present = True

    def style(self) -> None:
        st.html(PRESENTER_CSS)  # no sidebar or header, large type, tight spacing: one step fits 1280 x 720
        with st.container(key="lesson_h1"):  # the sidebar's h1 is hidden with it: the page's own, visually hidden
            st.title("BERT Explorer", anchor=False)

    def columns(self, k: int):
        left, right = st.columns([6, 5], gap="medium")
        return left, right, None

    def words(self, cur, step, k: int, text: str, pair: str | None, left, right) -> None:
        with left:
            st.markdown(explain(step, cur.model))
        with right, st.container(key="lesson_right_top"):  # the formula and the sentence above the view, below
            if step.formula:                                   # the "Class and sentence" button (PRESENTER_CSS)
                st.latex(step.formula)
            with st.container(key="lesson_sentence"):  # dark ink (PRESENTER_CSS): the slide's own sentence
                st.caption(f"Sentence: {escape_markdown(text)}" + (f" · B: {escape_markdown(pair)}" if pair else ""))

    def nav(self, cur, step, k: int, text: str, pair: str | None, live: Live | None, keys) -> None:
        nav = st.columns([1, 1, 4])
        nav[0].button("Back", key="lesson_back", disabled=k == 1, on_click=go, args=(k - 1,), width="stretch",
                      shortcut="Left")
        nav[1].button("Next", key="lesson_next", disabled=k == N, on_click=go, args=(k + 1,), width="stretch",
                      shortcut="Right")
        self.keys_note(nav[2], keys)
        more_keys(k, N, *keys)
        presenter_corner(cur)  # fixed to the screen's corner; last, so the slide's own text comes first

    def keys_note(self, col, keys) -> None:
        """The keys, beside Back / Next."""
        said = ["→ or Page Down next", "← or Page Up back"]
        if keys[1] > 1:  # the number keys, as in more_keys
            said.append(f"1-{min(keys[1], 9)} pick a guess")
        if keys[0] is not None:  # a Reveal is on the slide
            said.append("space or Enter reveals")
        col.caption(f"Keys: {', '.join(said)}.")

    def side(self, side, live: Live | None, k: int, text: str, pair: str | None) -> None:
        """No side column on a projector."""

    def class_focus(self, title: str) -> tuple[str, str | None]:
        """No side column: the step's heading, the new one (the join box above it is gone)."""
        return STEP_HEADING, title

    def left_focus(self) -> str:
        return STEP_HEADING


class Teaching:
    """What both of a live class's teacher's roles have: the class's question (its votes and Reveal) in place of the
    step's own guess; the class's code, seats and results are in live_class's panel."""

    own_guess = False

    def question(self, live: Live, col, q, token: str, k: int, text: str, pair: str | None, revealed: bool) -> bool:
        return teacher_question(live, col, q, token, k, text, pair, projector=self.present)


class Teacher(Teaching, Solo):
    """A live class's teacher on a laptop: the Solo page, the class's panel in the side column."""

    class_panel = staticmethod(panels.teaching)


class PresentingTeacher(Teaching, Presenter):
    """A live class's teacher in presenter mode: the projector's slide, and the join card at the top right (its QR,
    the class's count, and the keys in its popover)."""

    class_panel = staticmethod(panels.presenting_teacher)

    def keys_note(self, col, keys) -> None:
        """None beside Back / Next: they are in the join card's popover."""

    def class_focus(self, title: str) -> tuple[str, str | None]:
        """The join card, which a started class puts beside the slide."""
        return CLASS_CARD, None


class Following:
    """What every following student's role has: the step is one fragment, which the class's push reruns alone when
    the teacher moves (the app, its sidebar and the side column stay as drawn), no step in the address, the class's
    question in place of the step's own guess, and the teacher's moves said aloud."""

    own_guess = False

    def address(self, k: int) -> None:
        """No step in the address: a reload takes the class's step again (one message less in every student's step
        change); the sentence is the class's, not the address's."""
        if "step" in st.query_params:
            del st.query_params["step"]

    def run(self, live: Live | None) -> None:
        main, side = (st.container(), None) if self.present else st.columns([3, 1], gap="large")
        side = side.container(key="lesson_side") if side is not None else None  # labels that wrap (ui/theme.py)
        first = [live]

        @st.fragment(key=push.STEP_FRAGMENT)
        def following_slide():
            if first:  # the whole run's read of the class serves the first run; the class's changes rerun this
                now = first.pop()
            else:
                defaults()
                now = follow()
            if not following_student(now):
                st.rerun()  # the class ended or is away, or the student stopped following: the whole page again
            self.moved = None
            try:
                return slide(self, now)
            finally:  # each run of this fragment listens for the class's next change, whatever the step did
                redraw_here(now, self.moved)  # last: it carries the run's focus and announcement (`moves`)

        moves(present=self.present)  # the focus component, once per whole run: the listener's runs act through it
        with main:
            k, text, pair, _ = following_slide()
        if side is not None:
            self.side(side, live, k, text, pair)
        panel(live, self.present, side, self.class_panel)

    def moves(self, focus: str | None, heading: str | None, say: str | None, k: int) -> None:
        """Carried by the step's listener, drawn last in the fragment (one component mount per pushed run)."""
        self.moved = move(focus, heading, say)

    def moved_on(self, title: str) -> str | None:
        return f"{title}, your teacher moved on."

    def new_sentence(self, text: str, pair: str | None) -> str | None:
        return f"New sentence: {text}" + (f" Sentence B: {pair}" if pair else "") + ", from your teacher."

    def answer_revealed(self) -> str | None:
        return "Your teacher revealed the answer."


class Follower(Following, Solo):
    """A student following the teacher on their own device: the teacher's sentence as text, no Back / Next; the side
    column holds the class's count, Follow, Leave, the step's notebook and the handout."""

    class_panel = staticmethod(panels.student)

    def columns(self, k: int):
        here = contextlib.nullcontext()  # the page's own column (the fragment's container)
        return here, here, None

    def words(self, cur, step, k: int, text: str, pair: str | None, left, right) -> None:
        sentence_note(text, pair, explain(step, cur.model), step.formula)  # one element, redrawn for every student

    def nav(self, cur, step, k: int, text: str, pair: str | None, live: Live | None, keys) -> None:
        keep_lesson_view(cur, k, text, pair)  # the side column's notebook button opens this step

    def side(self, side, live: Live | None, k: int, text: str, pair: str | None) -> None:
        with side:
            followed_button()
            handout.button(live, "lesson_handout")


class PresentingFollower(Following, Presenter):
    """A following student whose address asked for presenter mode: the projector's slide, the class's step."""

    class_panel = staticmethod(presenter_tools)  # Start a class, the sentence

    def nav(self, cur, step, k: int, text: str, pair: str | None, live: Live | None, keys) -> None:
        """No Back / Next and no keys: the teacher moves the steps (buttons here would do nothing)."""
        keep_lesson_view(cur, k, text, pair)
        presenter_corner(cur)


def choose(live: Live | None) -> Solo:
    """This run's renderer, from the class (its teacher, a following student) and presenter mode."""
    present = bool(st.session_state["lesson_present"])
    if live is not None and live.teacher:
        role = PresentingTeacher if present else Teacher
    elif following_student(live):
        role = PresentingFollower if present else Follower
    else:
        role = Presenter if present else Solo
    return role()


def slide(role: Solo, live: Live | None):
    """The step: its title, words, sentence, question and view, then the role's own controls. Returns (step
    number, sentence, pair, side column: None where the role has none)."""
    cur = require_current()
    k = int(st.session_state["lesson_step"])
    step = STEPS[k - 1]
    role.address(k)
    st.session_state.setdefault("lesson_visited", set()).add(step.key)
    text = st.session_state[text_key(k)]
    pair = st.session_state.get(pair_key(k)) if step.pair is not None else None

    role.style()
    st.header(f"Step {k} of {N}: {step.title}")
    left, right, side = role.columns(k)
    role.words(cur, step, k, text, pair, left, right)

    with busy(cur, k, text, pair, "question", "The model is computing this step's question…"):
        q = ask(cur, step, text, pair)
    # A question is its sentence too: a new sentence or pair opens a new question (a new guess, a new class vote).
    token = question_token(cur.model_key, k, text, pair, q)
    revealed = token in st.session_state.get("lesson_revealed", set())
    revealed = role.question(live, left, q, token, k, text, pair, revealed)  # the class's question, in a class

    own_guess = q is not None and role.own_guess
    guess_key = f"lesson_guess_{zlib.crc32(token.encode())}"
    withheld = answer_withheld(live) if own_guess else None  # a class's student: the answer with the class
    if own_guess:
        with left:
            revealed = _guess(role, step, q, token, guess_key, text, pair, revealed, withheld)

    with right, busy(cur, k, text, pair, f"view {revealed} {role.present}", "Drawing…"):
        # A class's followers share one drawing (`shared` read from the module on each run: a test reloads it with
        # another byte budget); the role says whether it is drawn large (a projector).
        shared.draw_step(live, step, cur, text, pair, revealed, role.present)

    keys = ((token, step.key, guess_key, q.answer) if own_guess and not revealed and not withheld else None,
            len(q.choices) if q is not None else 0)
    role.nav(cur, step, k, text, pair, live, keys)
    handout.keep_charts(k)  # this step's charts, for the handout
    handout.remember_split(live)
    _focus_and_say(role, live, k, step, text, pair, token, revealed)
    return k, text, pair, side


SEEN = "lesson_a11y_seen"  # (step, sentence, pair, question, revealed, class) as this session last drew them


def _focus_and_say(role: Solo, live: Live | None, k: int, step, text: str, pair: str | None, token: str,
                   revealed: bool) -> None:
    """Focus moved and the change said, once this run has drawn the step (`what_moves`)."""
    focus, heading, say = what_moves(role, live, k, step, text, pair, token, revealed)
    role.moves(focus, heading, say, k)


def what_moves(role: Solo, live: Live | None, k: int, step, text: str, pair: str | None, token: str,
               revealed: bool) -> tuple[str | None, str | None, str | None]:
    """(where focus goes, the text that element starts with, what is said) after what changed since this session's
    last run: Next / Back: the new step's heading; a reveal: the answer; a class started or joined, or left or
    ended: the role's own place for it; what a following student hears (the teacher's new step, new sentence,
    reveal) is the role's, and a vote counted on this run is said. A page's first run moves nothing."""
    now = (k, text, pair, token, revealed, live.code if live is not None else None)
    before = st.session_state.get(SEEN)
    st.session_state[SEEN] = now
    focus = heading = say = None
    title = f"Step {k} of {N}: {step.title}"
    left = st.session_state.pop(LEFT, None) if live is None else None  # the Leave button is gone with its panel
    if left:
        focus, say = role.left_focus(), left
    elif before is not None and before != now:
        b_step, b_text, b_pair, b_token, b_revealed, b_class = before
        if now[5] is not None and now[5] != b_class:  # started or joined a class
            focus, heading = role.class_focus(title)
        elif k != b_step:
            focus, heading = STEP_HEADING, title
            say = role.moved_on(title)
        elif (text, pair) != (b_text, b_pair):
            say = role.new_sentence(text, pair)
        elif revealed and not b_revealed and token == b_token:
            focus = ".st-key-lesson_answer"
            say = role.answer_revealed()
    said = st.session_state.pop(VOTE_SAID, None)  # this student's vote, counted on this run
    return focus, heading, say or said


def _guess(role: Solo, step, q, token: str, guess_key: str, text: str, pair: str | None, revealed: bool,
           withheld: str | None = None) -> bool:
    """The student's own guess, its Reveal (or, `withheld`, why there is none), and once revealed the model's answer
    beside the guess."""
    st.markdown(f"**Your guess first.** {escape_markdown(q.prompt)}")
    # A kept guess is the radio's default only when its key has no value (a number key sets the value): both would
    # make Streamlit warn that a default and the Session State API set one widget.
    kept = None if guess_key in st.session_state else kept_guess(token)
    guess = st.radio("Your guess", range(len(q.choices)), index=kept, key=guess_key, horizontal=True,
                     format_func=callbacks.labels(escape_markdown(c) for c in q.choices), disabled=revealed,
                     label_visibility="collapsed", on_change=keep_guess, args=(guess_key, token))
    if not revealed and withheld:
        st.info(withheld, icon=":material/groups:")
        return revealed
    if not revealed:
        st.button(f"Reveal {answer_label(q)}", key="lesson_reveal", type="primary",
                  disabled=guess is None and not role.present, on_click=reveal,
                  args=(token, step.key, guess_key, q.answer), shortcut="Space" if role.present else None,
                  help="Commit a guess first: the answer is computed now, from this sentence.")
        return revealed
    shown, label = escape_markdown(q.choices[q.answer]), answer_label(q)
    with st.container(key="lesson_answer"):  # focused after the reveal (_focus_and_say)
        if guess is None:
            st.info(f"{label[0].upper()}{label[1:]}: **{shown}**")
        elif guess == q.answer:  # "right" means: the same as the model, which is not always the truth
            st.success(f"Right, the same as {label}: **{shown}**")
        else:
            st.error(f"Not this time: {label} is **{shown}**")
    st.markdown(escape_markdown(q.reveal))
    truth = built_truth(step, text, pair)
    if truth is not None:
        st.markdown(f"**The truth, as this pair was built:** {truth}"
                    + ("" if truth.startswith(q.choices[q.answer]) else " The model got it wrong here."))
    return revealed
