"""Lesson: a guided tour of BERT in steps, each with a live view of the step's sentence and a question to answer
before the model's own numbers are revealed. ?step=k opens step k; ?present=1 is presenter mode."""

import contextlib
import zlib

import streamlit as st

from ui import callbacks, classroom_push, classroom_ui, handout, lesson, model_choice, notebook_ui
from ui.state import DEFAULT_MODEL, require_current

N = len(lesson.STEPS)


def defaults() -> None:
    """The Lesson's session keys, where a run has none (a whole run drops the keys of widgets it did not draw: a
    following student's step, a fragment, runs again without the page's first lines)."""
    lesson.init_texts()
    if "lesson_step" not in st.session_state:
        st.session_state["lesson_step"] = lesson.step_from_url(st.query_params.get("step"))
    st.session_state.setdefault("lesson_present", st.query_params.get("present") == "1")


defaults()


def slide(live: classroom_ui.Live | None):
    """The step: its title, words, sentence, question and view; Back / Next and the presenter's keys (not a
    following student's). Returns (step number, sentence, pair, side column: None in presenter mode and on a
    following student's page, whose side column is drawn outside this)."""
    cur = require_current()
    follower = classroom_ui.following_student(live)  # the teacher moves the steps and owns the sentence
    k = int(st.session_state["lesson_step"])
    step = lesson.STEPS[k - 1]
    present = bool(st.session_state["lesson_present"])
    # A set is a message to the browser even when unchanged. A follower's address has no step (a reload takes the
    # class's step again): one message less in every student's step change.
    if follower:
        if "step" in st.query_params:
            del st.query_params["step"]
    elif st.query_params.get("step") != str(k):
        st.query_params["step"] = str(k)
    st.session_state.setdefault("lesson_visited", set()).add(step.key)
    text = st.session_state[lesson.text_key(k)]
    pair = st.session_state.get(lesson.pair_key(k)) if step.pair is not None else None
    if not follower:  # a follower's sentence is the class's, not its address's
        lesson.texts_in_url()

    if present:
        st.html(lesson.PRESENTER_CSS)
    st.header(f"Step {k} of {N}: {step.title}")
    side = None
    if present:
        left, right = st.columns([6, 5], gap="medium")
    elif follower:  # the page's own column (this fragment's container); the header says which step it is
        left = right = contextlib.nullcontext()
    else:
        st.progress(k / N)
        left, side = st.columns([3, 1], gap="large")
        side = side.container(key="lesson_side")  # its labels wrap (ui/theme.py), not "Follo…" in a narrow window
        right = left

    if follower and not present:  # one element: it is redrawn for every student at each of the teacher's steps
        classroom_ui.sentence_note(text, pair, lesson.explain(step, cur.model), step.formula)
    else:
        with left:
            st.markdown(lesson.explain(step, cur.model))
        with right if present else left:  # on a projector the formula and the sentence sit above the view
            if step.formula:
                st.latex(step.formula)
            if present:
                st.caption(f"Sentence: {lesson.plain(text)}" + (f" · B: {lesson.plain(pair)}" if pair else ""))
            else:
                lesson.sentence_ui(k, step)

    with lesson.busy(cur, k, text, pair, "question", "The model is computing this step's question…"):
        q = lesson.ask(cur, step, text, pair)
    # A question is its sentence too: a new sentence or pair opens a new question (a new guess, a new class vote).
    token = lesson.question_token(cur.model_key, k, text, pair, q)
    revealed = token in st.session_state.get("lesson_revealed", set())
    revealed = classroom_ui.question_ui(live, left, q, token, k, text, pair, revealed)  # the class's question

    own_guess = q is not None and (live is None or not live.following)  # a class's question replaces this one
    with left:
        if own_guess:
            st.markdown(f"**Your guess first.** {lesson.plain(q.prompt)}")
            guess_key = f"lesson_guess_{zlib.crc32(token.encode())}"
            # A kept guess is the radio's default only when its key has no value (a number key sets the value):
            # both would make Streamlit warn that a default and the Session State API set one widget.
            kept = None if guess_key in st.session_state else lesson.kept_guess(token)
            guess = st.radio("Your guess", range(len(q.choices)), index=kept, key=guess_key,
                             horizontal=True, format_func=callbacks.labels(lesson.plain(c) for c in q.choices),
                             disabled=revealed, label_visibility="collapsed", on_change=lesson.keep_guess,
                             args=(guess_key, token))
            if not revealed:
                st.button(f"Reveal {lesson.answer_label(q)}", key="lesson_reveal", type="primary",
                          disabled=guess is None and not present, on_click=lesson.reveal,
                          args=(token, step.key, guess_key, q.answer), shortcut="Space" if present else None,
                          help="Commit a guess first: the answer is computed now, from this sentence.")
            else:
                shown, label = lesson.plain(q.choices[q.answer]), lesson.answer_label(q)
                if guess is None:
                    st.info(f"{label[0].upper()}{label[1:]}: **{shown}**")
                elif guess == q.answer:  # "right" means: the same as the model, which is not always the truth
                    st.success(f"Right, the same as {label}: **{shown}**")
                else:
                    st.error(f"Not this time: {label} is **{shown}**")
                st.markdown(lesson.plain(q.reveal))
                truth = lesson.built_truth(step, text, pair)
                if truth is not None:
                    st.markdown(f"**The truth, as this pair was built:** {truth}"
                                + ("" if truth.startswith(q.choices[q.answer]) else " The model got it wrong here."))

    with right, lesson.busy(cur, k, text, pair, f"view {revealed} {present}", "Drawing…"):
        classroom_ui.draw_step(live, step, cur, text, pair, revealed)  # step.view; a class's followers share it

    if follower and not present:  # no Back / Next of its own; this step's notebook is the side column's button
        notebook_ui.keep_lesson_view(cur, k, text, pair)
    else:
        nav = st.columns([1, 1, 4] if present else [1, 1, 3])
        # Presenter keys are Streamlit's own button shortcuts: they work whatever has focus, except a text box.
        nav[0].button("Back" if present else "← Back", key="lesson_back", disabled=k == 1, on_click=lesson.go,
                      args=(k - 1,), width="stretch", shortcut="Left" if present else None)
        nav[1].button("Next" if present else "Next →", key="lesson_next", disabled=k == N, on_click=lesson.go,
                      args=(k + 1,), width="stretch", shortcut="Right" if present else None)
    if present:
        if live is None or not live.teacher:  # a class's teacher has them in the join card's popover
            nav[2].caption("Keys: → or Page Down next, ← or Page Up back, 1-4 pick a guess, space or Enter reveals.")
        lesson.more_keys(k, N, (token, step.key, guess_key, q.answer) if own_guess and not revealed else None,
                         len(q.choices) if q is not None else 0)
        lesson.presenter_corner(cur)  # fixed to the screen's corner; last, so the slide's own text comes first
    elif not follower:
        model_param = None if cur.model_key in (DEFAULT_MODEL, "") or cur.model_key.startswith("session:") \
            else cur.model_key
        nav[2].markdown(lesson.link_markdown(cur, step, text, pair, model_param))
    handout.keep_charts(k)  # this step's charts, for the handout
    handout.remember_split(live)
    return k, text, pair, side


live = classroom_ui.follow()  # a live class: join links; a following student takes the teacher's step
present = bool(st.session_state["lesson_present"])
follower = classroom_ui.following_student(live)
if follower:
    # A following student's step is one fragment, which the class's push reruns alone when the teacher moves: the
    # app, its sidebar and this page's side column (the class's count, Follow, Leave, the handout) stay as drawn.
    main, side = (st.container(), None) if present else st.columns([3, 1], gap="large")
    side = side.container(key="lesson_side") if side is not None else None  # labels that wrap (ui/theme.py)
    first = [live]

    @st.fragment(key=classroom_push.STEP_FRAGMENT)
    def following_slide():
        if first:  # the whole run's read of the class serves the first run; the class's changes rerun this fragment
            now = first.pop()
        else:
            defaults()
            now = classroom_ui.follow()
        if not classroom_ui.following_student(now):
            st.rerun()  # the class ended or is away, or the student stopped following: the whole page again
        classroom_ui.redraw_here(now)  # each run of this fragment listens for the class's next change
        return slide(now)

    with main:
        k, text, pair, _ = following_slide()
else:
    k, text, pair, side = slide(live)

if side is not None and not follower:
    with side:
        st.toggle("Presenter mode", key="lesson_present", on_change=lesson.toggle_present,
                  help="For a projector: no sidebar, large type, one step per screen; → / ← / space as keys.")
        model_choice.bert_base_offer(st, key="lesson")  # the real BERT-base, where it can be had
        st.session_state["lesson_goto"] = k
        titles = [""] + [f"{i}. {s.title}" for i, s in enumerate(lesson.STEPS, 1)]
        st.selectbox("Go to step", range(1, N + 1), key="lesson_goto", on_change=lesson.goto_picked,
                     format_func=callbacks.labels(titles))
        notebook_ui.lesson_button(require_current(), k, text, pair)
        answers = st.session_state.setdefault("lesson_answers", {})  # step key -> the guess was right
        st.metric("Right / answered", f"{sum(answers.values())} / {len(answers)}", help=f"{N} questions in all.")
        visited = st.session_state["lesson_visited"]
        st.markdown("**What you have seen**\n\n" + "\n".join(
            f"- {lesson.TICK if all(s in visited for s in steps) else lesson.UNTICKED} {item}"
            for item, steps in lesson.CHECKLIST.items()))

if side is not None:
    with side:
        if follower:
            notebook_ui.followed_button()
        handout.button(live, "lesson_handout")
classroom_ui.panel(live, present, side)  # start / join a class; its code, QR and results; a student's count
