"""A rerun asked right after a session's run has finished waits for that run's messages instead of dropping them (a
Streamlit 1.67 internal, hooked by ui/classroom_push.py: this test fails when an upgrade moves it)."""

from __future__ import annotations

import asyncio
import inspect

from streamlit.runtime import app_session

from ui import classroom_push


class Runner:
    """A ScriptRunner as AppSession sees it: it refuses a request once its run is over."""

    def __init__(self, over: bool):
        self.over, self.taken = over, []

    def request_rerun(self, data) -> bool:
        if not self.over:
            self.taken.append(data)
        return not self.over


class Session:
    """The parts of AppSession that `_create_scriptrunner` and its hook touch."""

    def __init__(self, loop, runner):
        self._event_loop, self._scriptrunner, self.created = loop, runner, []
        self._state = app_session.AppSessionState.APP_IS_RUNNING

    def create(self, data) -> None:  # AppSession._create_scriptrunner: a new runner, the current one
        self.created.append(data)
        self._scriptrunner = Runner(over=False)


def test_a_new_runner_waits_for_the_finished_runners_queued_messages():
    hooked = classroom_push.wait_for_finished_runs(Session.create)

    async def run():
        loop = asyncio.get_running_loop()
        old = Runner(over=True)
        s = Session(loop, old)
        delivered = []
        # The old runner's last events are on the loop already (its messages, then its SHUTDOWN, which unsets it).
        loop.call_soon(lambda: delivered.append(s._scriptrunner is old))
        loop.call_later(0.02, lambda: setattr(s, "_scriptrunner", None))
        hooked(s, "pushed step")  # AppSession.request_rerun: the old runner refused, a new one is asked for
        hooked(s, "timer tick")  # ... twice, before the old one's SHUTDOWN
        assert s.created == []  # not at once: the old runner's events would be dropped as from a non-current one
        await asyncio.sleep(0.1)
        return s, delivered

    s, delivered = asyncio.run(run())
    assert delivered == [True]  # the old run's messages were handled while it was still the current runner
    assert s.created == ["pushed step"] and s._scriptrunner.taken == ["timer tick"]  # one new runner runs both


def test_outside_the_event_loop_or_with_no_runner_a_runner_is_created_at_once():
    hooked = classroom_push.wait_for_finished_runs(Session.create)
    s = Session(None, None)
    hooked(s, "first run")
    assert s.created == ["first run"]
    s._scriptrunner = Runner(over=True)
    hooked(s, "from a thread")  # no running loop here: Streamlit's own behaviour
    assert s.created == ["first run", "from a thread"]


def test_the_hook_is_on_the_streamlit_internals_it_expects():
    hooked = app_session.AppSession._create_scriptrunner
    assert getattr(hooked, "waits_for_finished_runs", False), "ui.classroom_push did not install its hook"
    assert classroom_push.wait_for_finished_runs(hooked) is hooked  # installed once
    # AppSession.request_rerun creates a runner only after the current one refused the request, and drops events
    # from a runner that is no longer current; if either changes, the hook must be looked at again.
    src = inspect.getsource(app_session.AppSession.request_rerun)
    assert "success = self._scriptrunner.request_rerun(rerun_data)" in src and "self._create_scriptrunner(" in src
    handler = inspect.getsource(app_session.AppSession._handle_scriptrunner_event_on_event_loop)
    assert "if sender is not self._scriptrunner:" in handler
    assert "self._scriptrunner = None" in handler  # at SHUTDOWN
    assert list(inspect.signature(hooked.original).parameters) == ["self", "initial_rerun_data"]
