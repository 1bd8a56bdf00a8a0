"""Focus and announcements for the keyboard and screen readers (WCAG 2.1.1, 2.4.3, 4.1.3): one small component
(Streamlit's components v2, public API) that moves focus after an action, speaks in a polite live region, and keeps
the Lesson's document-wide keys off a focused control.

`moves(focus=..., say=...)` is drawn once in each run that may need it: its data names the element to focus (a CSS
selector, optionally the text the element must start with, so the new step's heading and not the old one is taken)
and the sentence to announce, with a number that changes with each action so one action acts once.

Streamlit's button shortcuts listen on the whole document (they skip text fields, selects and radio inputs only):
Space or Enter on a focused button ("Next", "Exit presenter mode", "Class and sentence", a Data expander) pressed
the button and also reached the Reveal shortcut. Here a keydown of Space or Enter whose focus is on a control the
keyboard reached (Tab; not a mouse click) other than a text field stops before Streamlit's listener (the browser
still presses the control); the reveal keys act where nothing interactive has the keyboard's focus (the page, a
heading this module focused, a button last clicked with the mouse, as a presenter's keys always did). A number key
on a focused guess picks that choice (Streamlit's number shortcuts skip a focused radio input). A guess picked with
the mouse in presenter mode gives its focus back to the page, so the next key goes to the slide's shortcuts.

Presenter mode's step keys (→ ← Page Down / Page Up) are pressed here, one run at a time: a step button's callback
carries the step it was drawn for, so a second press that reaches the server before the new step's buttons are
drawn would move to the same step again (or be merged with the first into one rerun) and be lost. A step key
clicks its button and waits until this component is drawn with another step (`moves(step=...)`, drawn after the
step's buttons), as a click on Back / Next does; a presenter key (a step key, 1-9, space, Enter, Escape) or a click
on Back / Next meanwhile is kept and then clicks its button on the new step, in order: one press, one action, never
none and never two.
"""

from __future__ import annotations

import itertools

import streamlit as st

_JS = r"""
const CONTROL = 'button, a[href], summary, [role="button"], [role="link"], [role="tab"], [role="menuitem"], '
  + '[role="option"], [role="slider"], [role="switch"], [role="checkbox"], [role="radio"]';
const TYPING = ['INPUT', 'TEXTAREA', 'SELECT'];
// Presenter keys by the key of the (hidden or visible) button that does the same; the step keys wait for the step.
const STEP_KEYS = {ArrowRight: 'lesson_next', ArrowLeft: 'lesson_back', PageDown: 'lesson_next_pd',
  PageUp: 'lesson_back_pu'};
const KEPT_KEYS = {' ': 'lesson_reveal', Enter: 'lesson_reveal_enter', Escape: 'lesson_exit'};
// A step key whose new step is never drawn (a run that failed) stops holding later keys after this long.
const WAIT_MS = 30000;

function enabled(key) {
  const b = document.querySelector('.st-key-' + key + ' button');
  return b && !b.disabled ? b : null;
}

function stepButton(el) {
  const b = el && el.closest ? el.closest('button') : null;
  return b && Object.values(STEP_KEYS).some((k) => b.closest('.st-key-' + k)) ? b : null;
}

function installKeys(w) {
  const s = (w.__bxKeys = {step: null, waiting: null, kept: [], own: false});
  s.press = (b) => {  // this module's own press of a button: one click, not kept again
    s.own = true;
    try { b.click(); } finally { s.own = false; }
  };
  const held = () => {
    if (s.waiting && Date.now() - s.waiting.at > WAIT_MS) s.waiting = null;
    return s.waiting !== null;
  };
  w.addEventListener('keydown', (e) => {
    if (s.step === null || document.body.dataset.bxPresent !== '1') return;
    if (e.ctrlKey || e.metaKey || e.altKey || e.shiftKey) return;
    const key = STEP_KEYS[e.key] || KEPT_KEYS[e.key] || (/^[1-9]$/.test(e.key) ? 'lesson_pick_' + e.key : null);
    const a = document.activeElement;
    if (!key || (a && (TYPING.includes(a.tagName) || a.isContentEditable))) return;
    const control = a && a !== document.body && a.matches(CONTROL) && !w.__bxA11y.byPointer;
    if (control && !(e.key in STEP_KEYS)) return;  // the focused control's own space or Enter
    if (held()) {
      e.preventDefault();
      e.stopImmediatePropagation();
      if (!e.repeat) s.kept.push(key);
      return;
    }
    const b = e.key in STEP_KEYS ? enabled(key) : null;
    if (!b) return;  // any other key now: Streamlit's own shortcut
    e.preventDefault();
    e.stopImmediatePropagation();
    s.waiting = {from: s.step, at: Date.now()};
    s.press(b);
  }, true);
  // A click on Back / Next (the mouse, or Enter on the focused button) waits for its step in the same way.
  w.addEventListener('click', (e) => {
    const b = stepButton(e.target);
    if (!b || s.own || s.step === null || document.body.dataset.bxPresent !== '1' || b.disabled) return;
    if (held()) {
      e.preventDefault();
      e.stopImmediatePropagation();
      s.kept.push(Object.values(STEP_KEYS).find((k) => b.closest('.st-key-' + k)));
      return;
    }
    s.waiting = {from: s.step, at: Date.now()};
  }, true);
}

function stepDrawn(step) {
  const s = window.__bxKeys;
  s.step = step;
  if (step === null) { s.waiting = null; s.kept = []; return; }
  if (s.waiting && s.waiting.from !== step) s.waiting = null;
  while (!s.waiting && s.kept.length) {
    const key = s.kept.shift(), b = enabled(key);
    if (!b) continue;  // not on this step (no Reveal once revealed, no Next on the last step)
    if (Object.values(STEP_KEYS).includes(key)) s.waiting = {from: step, at: Date.now()};
    s.press(b);
  }
}

function install(w) {
  if (w.__bxA11y) return;
  w.__bxA11y = {pointer: false, done: -1, byPointer: false};
  installKeys(w);
  // Whether the focused element took focus from a click: a button clicked with the mouse leaves the page's keys
  // to the page (a presenter clicks "Show the class's split", then presses Space to reveal, as before).
  document.addEventListener('focusin', () => { w.__bxA11y.byPointer = w.__bxA11y.pointer; }, true);
  w.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const a = document.activeElement;
    if (!a || a === document.body || a === document.documentElement) return;
    if (/^[1-9]$/.test(e.key) && a.tagName === 'INPUT' && a.type === 'radio') {
      const group = a.closest('[role="radiogroup"]');
      const radios = group ? [...group.querySelectorAll('input[type="radio"]')] : [];
      const r = radios[Number(e.key) - 1];
      if (r && !r.disabled) { e.preventDefault(); r.click(); r.focus(); }
      return;
    }
    if (e.key !== ' ' && e.key !== 'Enter') return;
    if (TYPING.includes(a.tagName) || !a.matches(CONTROL) || w.__bxA11y.byPointer) return;
    e.stopPropagation();  // the focused control's key, not the page's shortcut (the browser still presses it)
  }, true);
  document.addEventListener('pointerdown', () => { w.__bxA11y.pointer = true; }, true);
  document.addEventListener('keydown', () => { w.__bxA11y.pointer = false; }, true);
  const mouseInPresenter = () => w.__bxA11y.pointer && document.body.dataset.bxPresent === '1';
  const letGo = () => setTimeout(() => {
    const a = document.activeElement;
    if (a && a.type === 'radio' && mouseInPresenter()) a.blur();
  }, 0);
  document.addEventListener('change', letGo, true);
  document.addEventListener('click', letGo, true);
  // A rerun may draw a focused widget anew (a spinner gone from above it): focus on the new one, same key and place.
  document.addEventListener('focusout', (e) => {
    const old = e.target, box = old.closest && old.closest('[class*="st-key-"]');
    if (e.relatedTarget || !box || mouseInPresenter()) return;
    const key = [...box.classList].find((c) => c.startsWith('st-key-'));
    const at = [...box.querySelectorAll(CONTROL + ', input')].indexOf(old);
    const until = Date.now() + 3000;
    const back = () => {
      if (old.isConnected || document.activeElement !== document.body) return;
      const now = document.querySelector('.' + CSS.escape(key));
      const el = now && [...now.querySelectorAll(CONTROL + ', input')][at];
      if (el) el.focus(); else if (Date.now() < until) setTimeout(back, 50);
    };
    setTimeout(back, 50);
  }, true);
  const live = document.createElement('div');
  live.id = 'bx-live';
  live.setAttribute('role', 'status');
  live.setAttribute('aria-live', 'polite');
  live.setAttribute('aria-atomic', 'true');
  live.style.cssText = 'position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;'
    + 'clip:rect(0 0 0 0);white-space:nowrap;border:0;';
  document.body.appendChild(live);
}

function find(sel, text) {
  for (const e of document.querySelectorAll(sel)) {
    if (!text || (e.textContent || '').trim().startsWith(text)) return e;
  }
  return null;
}

function act(data) {
  const w = window;
  if (!data || data.n === w.__bxA11y.done) return;
  w.__bxA11y.done = data.n;
  if (data.say) {
    const live = document.getElementById('bx-live');
    live.textContent = '';
    setTimeout(() => { live.textContent = data.say; }, 150);
  }
  if (data.focus) {
    const until = Date.now() + 4000;
    const tryFocus = () => {
      const e = find(data.focus, data.text);
      if (!e) { if (Date.now() < until) setTimeout(tryFocus, 50); return; }
      if (!e.matches(CONTROL) && !e.hasAttribute('tabindex')) {
        e.setAttribute('tabindex', '-1');
        e.classList.add('bx-focus-target');
      }
      e.focus({preventScroll: true});
      e.scrollIntoView({block: 'nearest'});
    };
    setTimeout(tryFocus, 0);
  }
}

export default function ({data}) {
  install(window);
  window.__bxA11y.act = act;  // a class's listener may carry a move (ui/lesson/live_class/push.py)
  document.body.dataset.bxPresent = data && data.present ? '1' : '0';
  stepDrawn(data && data.step ? data.step : null);
  act(data);
}
"""

# A heading or box focused by the script is not a control: its focus shows no ring (a projector's slide).
CSS = ".bx-focus-target:focus {outline: none !important;} .st-key-bx_moves {display: none !important;}"

_component = st.components.v2.component("bert_explorer.a11y_moves", js=_JS)
_count = itertools.count(1)


def move(focus: str | None = None, text: str | None = None, say: str | None = None) -> dict | None:
    """What `moves` acts on, once: None when there is nothing to focus or say. Another component may carry it (a
    following student's step is redrawn with the class's listener only: one component mount less per step change)."""
    if not (focus or say):
        return None
    return {"focus": focus, "text": text, "say": say, "n": next(_count)}


def moves(focus: str | None = None, text: str | None = None, say: str | None = None, present: bool = False,
          step: int | None = None) -> None:
    """Focus the first element matching `focus` (whose text starts with `text`), announce `say` (politely), once;
    `present`: presenter mode (a guess clicked with the mouse gives the keys back to the page); `step`: the presenter's
    step whose keys this run has drawn, drawn after them (presenter keys pressed meanwhile wait for it)."""
    data = move(focus, text, say) or {"n": 0}
    with st.container(key="bx_moves"):  # hidden (CSS): it draws nothing
        _component(data={**data, "present": present, "step": step},
                   key=f"bx_moves_{data['n']}" if data["n"] else "bx_moves_idle", height=0)
