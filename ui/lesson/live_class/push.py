"""A following student's Lesson is redrawn the moment the teacher moves: each browser listens for its class's changes.

A following student's step runs as one fragment (ui/lesson/roles.py's `following_slide`): the step's header, words,
vote and view, everything that changes with the teacher's step. Each of its runs draws a listener there
(`listen_here`): a components v2 component that opens an event stream of the class (server/events.py, a route of
app.py's `st.App`) and sets a trigger value on each event, which reruns that fragment alone, as a click inside it
would. The teacher's count of answers listens in the same way to the class's votes in this process; a student's own
count runs on its listener's timer and listens to its seat (a removal by the teacher reruns it at once), and a
vote's callback reruns it with the step (`st.rerun` of the two named fragments). app.py, the navigation, the
sidebar and the side column do not run again for a step change; a page whose stream cannot connect (a host that
serves only Streamlit's own routes) keeps its fragments' own timers, which were always the fallback. Before the
event goes out, the process reads the class once for its followers (reads.py).
"""

from __future__ import annotations

import urllib.parse

import streamlit as st
from streamlit.errors import StreamlitAPIException

import classroom
from server.events import EPOCH, HUB, PATH
from ui.lesson.live_class.reads import SEEN, follow_here

STEP_FRAGMENT = "class_step"  # the key of a following student's step fragment (ui/lesson/roles.py)
COUNT_FRAGMENT = "class_count"  # the key of a following student's own count fragment (ui/lesson/live_class/student.py)

# A listener is a component with no markup: its script keeps one EventSource per component key across the fragment's
# reruns (a rerun that draws it again with another topic replaces it), triggers a rerun on each event it has not yet
# drawn, and closes the stream a moment after the component leaves the page (a cleanup that is followed by a new
# call of the same key keeps it). Drawn with `every` (seconds), it is also the fragment's timer: a trigger that often,
# its interval replaced in place when a run draws it with another.
_JS = """
export default function ({ data, key, setTriggerValue }) {
  const all = (globalThis.__bxClassEvents ??= new Map());
  let s = all.get(key);
  if (s && s.url !== data.url) { s.close(); s = undefined; }
  if (!s) {
    s = { url: data.url, epoch: data.epoch, seq: 0, fired: 0, drawn: data.seen, fire: null, closing: null };
    const es = data.url ? new EventSource(data.url) : new EventTarget();
    const hear = (n) => {
      s.seq = Math.max(s.seq, n);
      if (s.seq > s.drawn && s.seq > s.fired && s.fire) { s.fired = s.seq; s.fire(s.seq); }
    };
    es.addEventListener("hello", (e) => {
      const [epoch, n] = e.data.split(" ");
      if (epoch !== s.epoch) { s.epoch = epoch; s.seq = 0; s.fired = 0; s.drawn = 0; }  // another process
      hear(Number(n));
    });
    es.onmessage = (e) => hear(Number(e.data));
    s.close = () => { es.close?.(); clearInterval(s.timer); all.delete(key); };
    s.hear = hear;
    all.set(key, s);
  }
  clearTimeout(s.closing);
  s.fire = (n) => setTriggerValue("change", n);
  s.tick = () => setTriggerValue("tick", Date.now());
  if ((data.every || 0) !== (s.every || 0)) {
    clearInterval(s.timer);
    s.every = data.every || 0;
    s.timer = s.every > 0 ? setInterval(() => s.tick(), 1000 * s.every) : null;
  }
  if (data.url && data.epoch === s.epoch) { s.drawn = Math.max(data.seen, 0); s.hear(s.seq); }
  if (data.move) globalThis.__bxA11y?.act?.(data.move);  // this run's focus and announcement (ui/a11y.py)
  return () => { s.closing = setTimeout(() => s.close(), 3000); };
}
"""
# Sent with every run that draws a listener: without its indentation.
_listener = st.components.v2.component("bert_explorer.class_events",
                                       js="\n".join(line.strip() for line in _JS.strip().splitlines()))

def listen_here(topic: str | None, key: str, every: float | None = None, seen: int | None = None,
                move: dict | None = None) -> None:
    """A listener of `topic` (server/events.py) in this run's fragment: each event reruns the fragment, and with
    `every`, so does a timer of that many seconds (in the browser: it runs where the event route cannot be reached).
    `seen`: the topic's number when the run began to read what it draws (default: now). No topic: the timer only.
    `move`: this run's focus and announcement (`ui.a11y.move`), acted on by the page's focus component's script."""
    data: dict = {"epoch": EPOCH}
    if move is not None:
        data["move"] = move
    if topic is not None:
        # Relative to the page (pages are one path segment deep): behind a proxy that serves the app under a prefix,
        # the route is under it too.
        data["url"] = f"{PATH.lstrip('/')}?{urllib.parse.urlencode({'topic': topic})}"
        data["seen"] = HUB.seq(topic) if seen is None else seen
    if every:
        data["every"] = round(float(every), 3)
    _listener(key=key, data=data, height=0)


def redraw_here(store: classroom.ClassStore, code: str, sid: str, move: dict | None = None) -> None:
    """This run is a following student's step (a fragment): the class's next change reruns it. `move`: the run's
    focus and announcement (`listen_here`)."""
    follow_here(store, code, sid)
    seen = st.session_state.get(SEEN)
    listen_here(f"step:{code}", "class_events_step", seen=seen[1] if seen and seen[0] == code else None, move=move)


def count_here(code: str) -> None:
    """This run is the teacher's count of class `code`'s answers (a fragment): a vote here redraws it at once."""
    listen_here(f"votes:{code}", "class_events_votes")


def poke(code: str) -> int:
    """A vote in class `code`: its teachers' counts in this process rerun now, or at the end of their gap."""
    return int(HUB.poke(f"votes:{code}"))


def fragment_here(code: str, sid: str, every: float) -> str:
    """This run is a following student's own count (the fragment keyed COUNT_FRAGMENT) of seat `sid` in class `code`:
    it reruns every `every` s (its listener's timer), at once when the teacher removes the seat (whatever the
    timer, which stretches with the class's size), and with the student's vote (`redraw`). Returns what `redraw`
    needs."""
    listen_here(f"seat:{code}:{sid}", "class_events_count", every)
    return COUNT_FRAGMENT


def redraw(count: str | None) -> bool:
    """From a following student's vote callback: the vote's run reruns the student's step and own count (`count`,
    from `fragment_here`) together, as one run of the two named fragments. False (the step alone, as a vote does
    by default) where the page has no such count (presenter mode has no side column)."""
    if not count:
        return False
    try:
        st.rerun(scope=[STEP_FRAGMENT, count])
    except StreamlitAPIException:  # no fragment of that key on this page
        return False
    return True
