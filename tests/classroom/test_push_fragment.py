"""A step change reaches a following student as a rerun of the Lesson's fragment, not of the whole page.

Over real websockets on the session's shared server (benchmarks/load.py's Client, as benchmarks/class_load.py
drives a lecture hall): the run the server pushes when the teacher presses Next must be a fragment's run (app.py,
the navigation and the sidebar do not run again) that draws the new step, its question and the vote box.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse

from load import Client  # benchmarks/ is on pytest's pythonpath


async def _class(base: str) -> tuple[list, list]:
    teacher, student = Client(base, ping_timeout=None), Client(base, ping_timeout=None)
    pushed = []
    try:
        for c in (teacher, student):
            await c.connect()
            await c.rerun("lesson", query="step=1")
        await teacher.rerun(widgets={"class_start": True})
        code = urllib.parse.parse_qs(teacher.page_query)["class"][0]
        joined = await student.rerun(widgets={"class_join_code": code, "class_nick": "fragment test",
                                              "class_join": True})
        assert "me=" in student.page_query, student.page_query
        student.on_push = pushed.append
        await teacher.rerun(widgets={"lesson_next": True})
        deadline = time.monotonic() + 60
        while not pushed and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # a second push (a whole page's, if any) would come now
        return [joined], pushed
    finally:
        try:
            await teacher.rerun(widgets={"class_end": True}, timeout=60)  # the shared server as it was: no class
        finally:
            for c in (teacher, student):
                await c.close()


def test_the_teachers_next_reruns_only_the_followers_lesson_fragment(shared_app_server):
    (joined,), pushed = asyncio.run(_class(shared_app_server))
    assert not joined.fragment and [h.body for h in joined.of("heading")][0].startswith("Step 1 of")
    assert pushed, "the teacher's Next pushed no run to the following student"
    assert all(r.fragment for r in pushed), "a step change reran the follower's whole page (app.py and all)"
    run = pushed[0]
    assert [h.body for h in run.of("heading")][0].startswith("Step 2 of"), [h.body for h in run.of("heading")]
    assert any((r.id or "").split("-", 2)[-1].startswith("class_vote_") for r in run.of("radio"))
