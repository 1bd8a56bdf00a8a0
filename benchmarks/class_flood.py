"""A live class under a scripted flood, beside a real student in chromium: the issue's target, measured.

    python benchmarks/class_flood.py                       # 300 joins, 1,000 starts, 4 seats flipping votes
    python benchmarks/class_flood.py --joins 60 --starts 30 --port 8631

Starts `streamlit run app.py` on loopback (HF_HUB_OFFLINE=1). A teacher in chromium starts a class. The attacker
is one client address (X-Forwarded-For from a loopback peer, as HAProxy sends it) with a new browser token per
session, as a script that drops its cookies is: `--joins` joins and `--starts` "Start a class" presses (half of
them with one browser token's cookie), AT_ONCE at a time over Streamlit's websocket (tests/support/flood.py's Attack,
tests/support/wsclient.py's client),
while four seats joined from another address change their votes as fast as the server answers. Once the flood has
emptied its address's join bucket, a real student in chromium on a third address opens the link, presses Join
(timed: the target is 10 s) and votes; the teacher's count must then show every honest vote (the student's and the
four seats'). Prints one line of numbers; exits 1 when a target fails.
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--joins", type=int, default=300)
    ap.add_argument("--starts", type=int, default=1000)
    ap.add_argument("--port", type=int, default=None)
    a = ap.parse_args(argv)

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

        teacher = page()
        teacher.goto(f"{base}/lesson", wait_until="domcontentloaded")
        teacher.get_by_role("button", name="Start a class").click()
        teacher.wait_for_url(re.compile(r"class=[A-Z0-9]{6}"))
        code = re.search(r"class=([A-Z0-9]{6})", teacher.url).group(1)
        attack = Attack(base, code, a.joins, a.starts)
        attack.progress = True
        attack.thread.start()
        try:
            if not attack.flippers_ready.wait(300):
                raise RuntimeError(f"the four seats did not join: {attack.errors[:3]}")
            while attack.refused == 0 and not attack.stop.is_set():
                time.sleep(0.2)  # until the flood has emptied its address's join bucket
            student = page({"X-Forwarded-For": STUDENT_ADDRESS}, phone=True)
            student.goto(f"{base}/lesson?class={code}", wait_until="domcontentloaded")
            join_button = student.get_by_role("button", name="Join the class")
            join_button.wait_for()
            during = not attack.flood_done.is_set()
            t0 = time.monotonic()
            join_button.tap()
            student.wait_for_url(re.compile(r"me="))
            took = time.monotonic() - t0
            targets = student.locator('[data-testid="stRadio"] [role="radiogroup"] label')
            targets.nth(1).tap()
            student.get_by_text("Your vote:").wait_for()
            voted = time.monotonic() - t0
        finally:
            attack.stop.set()
            attack.thread.join(600)
        teacher.get_by_text(re.compile(r"5 of \d+ students have answered")).wait_for()  # every honest vote
        failed += attack.errors[:5] + attack.bounds_hold()
        if took > 10:
            failed.append(f"the student joined after {took:.1f} s")
        if not during:
            failed.append("the flood ended before the student pressed Join")
        print(f"flood of {a.joins} joins and {a.starts} starts from one address over {attack.seconds:.0f} s: "
              f"{attack.joined} joined, {attack.refused} refused; {attack.started} classes started, "
              f"{attack.starts_refused} refused; 4 seats flipped {attack.flips} times ({attack.flips_refused} "
              f"refused); the chromium student joined in {took:.1f} s and voted in {voted:.1f} s; the teacher "
              f"counted 5 of 5 honest votes")
        browser.close()
    for f in failed:
        print("FAILED:", f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
