#!/usr/bin/env bash
# One Streamlit process, warmed up before the first visitor (the Dockerfile's command).
#
#   deploy/start.sh [PORT] [BIND_ADDRESS]      defaults 8501 0.0.0.0
#
# Starts `streamlit run app.py` with the script health check on, runs deploy/warm_up.sh against it
# in the background (the server answers at once; the warm-up only moves the first session's imports
# and model load ahead of it), and hands SIGTERM on to Streamlit (Docker's stop).
set -euo pipefail
PORT=${1:-8501}
BIND=${2:-0.0.0.0}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
python -m streamlit run app.py --server.headless true --server.address "$BIND" --server.port "$PORT" \
  --server.scriptHealthCheckEnabled true &
pid=$!
stopping=0
trap 'stopping=1; kill -TERM "$pid" 2>/dev/null || true' INT TERM
(deploy/warm_up.sh "http://127.0.0.1:$PORT" || echo "start.sh: warm-up failed; the first visitor loads the app") &
status=0
wait "$pid" || status=$?
# A signal ends `wait` at once: wait again until Streamlit has stopped.
if kill -0 "$pid" 2>/dev/null; then status=0; wait "$pid" || status=$?; fi
# Served through st.App, Streamlit ends on SIGTERM with the signal's status (143): a stop asked for is a clean exit.
if [ "$stopping" = 1 ] && [ "$status" = 143 ]; then status=0; fi
exit "$status"
