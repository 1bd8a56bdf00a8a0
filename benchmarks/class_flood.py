"""A live class under a scripted flood, beside a real student in chromium: the issue's target, measured.

    python benchmarks/class_flood.py                       # 300 joins, 1,000 starts, 4 seats flipping votes
    python benchmarks/class_flood.py --joins 60 --starts 30 --port 8631

Starts `streamlit run app.py` on loopback (HF_HUB_OFFLINE=1). A teacher in chromium starts a class. The attacker
is one client address (X-Forwarded-For from a loopback peer, as HAProxy sends it) with a new browser token per
session, as a script that drops its cookies is: `--joins` joins and `--starts` "Start a class" presses (half of
them with one browser token's cookie), AT_ONCE at a time over Streamlit's websocket (tests/support/flood.py's Attack,
tests/support/wsclient.py's client),
while four seats joined from another address change their votes as fast as the server answers. A real student in
chromium on a third address opens the link before the flood and presses Join at a fixed point of it (`--press-at`
of the flood's joins and starts answered; not at its first refusal, which a loaded server may never give): timed
(the target is 10 s), the flood must still be running then, and the student votes. Once the flood is over, a second
chromium student on a fourth address joins and votes (a class's join and vote after the flood), and the teacher's
count must show every honest vote (the two students' and the four seats'). The four seats' vote changes counted
during and after the flood are reported. Prints one line of numbers; exits 1 when a target fails.
tests/browser/test_browser_class_phone.py runs a smaller flood with the same `Attack`.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the app server, the websocket client, the flood

from support.flood import STUDENT_ADDRESS, Attack  # noqa: E402

LATE_ADDRESS = "198.51.100.8"  # the student who joins after the flood


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--joins", type=int, default=300)
    ap.add_argument("--starts", type=int, default=1000)
    ap.add_argument("--port", type=int, default=None)
    ap.add_argument("--press-at", type=int, default=None,
                    help="the student presses Join once this many of the flood's joins and starts were answered "
                         "(default: a tenth of them)")
    a = ap.parse_args(argv)
    press_at = a.press_at if a.press_at is not None else max(1, (a.joins + a.starts) // 10)

    from playwright.sync_api import sync_playwright
    from support.appserver import app_server

    failed: list[str] = []
    with app_server(port=a.port, args=("--global.developmentMode", "false"), timeout=300) as (base, _), \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium")

        def page(headers=None, phone=False):
            ctx = browser.new_context(viewport={"width": 390, "height": 844} if phone else
                                      {"width": 1280, "height": 900}, is_mobile=phone, has_touch=phone,
                                      extra_http_headers=headers or {})
            pg = ctx.new_page()
            pg.set_default_timeout(120_000)
            return pg

        def join_and_vote(pg) -> tuple[float, float]:
            """Press Join on `pg` (its join box drawn) and vote: seconds to the seat, and to "Your vote"."""
            t0 = time.monotonic()
            pg.get_by_role("button", name="Join the class").tap()
            pg.wait_for_url(re.compile(r"me="))
            took = time.monotonic() - t0
            pg.locator('[data-testid="stRadio"] [role="radiogroup"] label').nth(1).tap()
            pg.get_by_text("Your vote:").wait_for()
            return took, time.monotonic() - t0

        def open_link(headers) -> object:
            pg = page(headers, phone=True)
            pg.goto(f"{base}/lesson?class={code}", wait_until="domcontentloaded")
            pg.get_by_role("button", name="Join the class").wait_for()
            return pg

        teacher = page()
        teacher.goto(f"{base}/lesson", wait_until="domcontentloaded")
        teacher.get_by_role("button", name="Start a class").click()
        teacher.wait_for_url(re.compile(r"class=[A-Z0-9]{6}"))
        code = re.search(r"class=([A-Z0-9]{6})", teacher.url).group(1)
        student = open_link({"X-Forwarded-For": STUDENT_ADDRESS})  # its join box drawn before the flood
        attack = Attack(base, code, a.joins, a.starts)
        attack.progress = True
        attack.thread.start()
        took = voted = late_took = late_voted = float("nan")
        try:
            if not attack.flippers_ready.wait(300):
                raise RuntimeError(f"the four seats did not join: {attack.errors[:3]}")
            during = attack.wait_answered(press_at, 600)  # a fixed point of the flood, still running
            answered_then, at = attack.answered, attack.seconds
            took, voted = join_and_vote(student)
            answered_joined, still = attack.answered, not attack.flood_done.is_set()
            print(f"the student pressed Join {at:.0f} s into the flood, {answered_then} of {a.joins + a.starts} "
                  f"answered (flood running: {during}); joined in {took:.1f} s, vote shown in {voted:.1f} s; "
                  f"the flood still running then: {still} ({answered_joined} answered)", flush=True)
            late = open_link({"X-Forwarded-For": LATE_ADDRESS})
            if not attack.flood_done.wait(3600):
                failed.append("the flood did not end within an hour")
            late_took, late_voted = join_and_vote(late)  # a join and a vote after the flood
        finally:
            attack.stop.set()
            attack.thread.join(600)
        teacher.get_by_text(re.compile(r"6 of \d+ students have answered")).wait_for()  # every honest vote
        failed += attack.errors[:5] + attack.bounds_hold()
        if took > 10:
            failed.append(f"the student joined after {took:.1f} s")
        if not during:
            failed.append("the flood ended before the student pressed Join")
        print(f"flood of {a.joins} joins and {a.starts} starts from one address over {attack.seconds:.0f} s: "
              f"{attack.joined} joined, {attack.refused} refused; {attack.started} classes started, "
              f"{attack.starts_refused} refused; 4 seats flipped {attack.flips} times ({attack.flips_refused} "
              f"refused as too fast; counted {attack.flips_counted_during} during the flood, "
              f"{attack.flips_counted_after} after); the chromium student joined in {took:.1f} s and voted in "
              f"{voted:.1f} s during the flood; a second joined in {late_took:.1f} s and voted in "
              f"{late_voted:.1f} s after it; the teacher counted 6 of 6 honest votes")
        browser.close()
    for f in failed:
        print("FAILED:", f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
