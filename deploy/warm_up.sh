#!/usr/bin/env bash
# Wait until a Streamlit server answers, then run app.py in it once without a browser.
#
#   deploy/warm_up.sh URL [TIMEOUT_S]      e.g. deploy/warm_up.sh http://127.0.0.1:8502
#
# The server must run with --server.scriptHealthCheckEnabled true. GET /_stcore/script-health-check
# makes Streamlit run the app's script in a bare session: torch, bert_core and pandas get imported and
# the shared model is loaded (ui/state.py's MODELS, process-wide), so the first student does not wait for
# them (benchmarks/bench_launch.py: cold vs warm). Exit status 0 when the script ran cleanly.
# python, not curl: the Docker image (python:3.11-slim) has no curl.
set -euo pipefail
URL=${1:?usage: deploy/warm_up.sh URL [TIMEOUT_S]}
TIMEOUT=${2:-600}
exec python - "$URL" "$TIMEOUT" <<'PY'
import sys, time, urllib.request

url, deadline = sys.argv[1], time.time() + float(sys.argv[2])
while True:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=5):
            break
    except OSError:
        if time.time() > deadline:
            sys.exit(f"warm_up: {url} did not answer")
        time.sleep(0.5)
t = time.time()
with urllib.request.urlopen(url + "/_stcore/script-health-check", timeout=max(1.0, deadline - time.time())) as r:
    print(f"warm_up: {url} ran app.py once in {time.time() - t:.1f} s ({r.status})", flush=True)
PY
