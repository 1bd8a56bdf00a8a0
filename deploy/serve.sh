#!/usr/bin/env bash
# Serve BERT Explorer from N Streamlit processes behind HAProxy with sticky sessions (one host).
#
#   deploy/serve.sh N PORT [BIND_ADDRESS]     e.g. deploy/serve.sh 2 8501   (then open http://host:8501)
#
# Starts `streamlit run app.py` N times on loopback ports PORT+1 .. PORT+N, waits until each answers
# /_stcore/health, warms each up (deploy/warm_up.sh), then runs HAProxy (Debian package `haproxy`) in
# the foreground on BIND_ADDRESS:PORT (default 0.0.0.0) with deploy/haproxy.cfg. Ctrl-C (or SIGTERM)
# stops HAProxy and every process.
# One process per core is the measured setting (docs/deploying.md, "A school server"). Each process has its
# own model copy, cache and training slots: BERT_EXPLORER_MAX_TRAINING applies per process.
# A live class (the Lesson's "Start a class") must be seen by every process: serve.sh also starts
# Debian's redis-server on loopback port PORT+N+1 (--maxmemory BX_REDIS_MB, default 64; its append-only
# file in the work directory, so a restarted redis-server comes back with its classes and their votes)
# and points each process at it (BERT_EXPLORER_CLASS_STORE=redis://127.0.0.1:PORT+N+1/0). An
# already-set BERT_EXPLORER_CLASS_STORE (your own Redis) is used instead, and no redis-server started.
# A process that dies (redis-server, a Streamlit process, HAProxy) is started again a second later, and
# the log says so: the site stays up; while the class store is away the Lesson runs on and a class's
# pages say they are reconnecting. A restarted Streamlit process is warmed up again (deploy/warm_up.sh).
# The model every process shows a fresh visitor: BERT_EXPLORER_MODEL (unset: the bundled MiniLM, offline).
# With the network, `BERT_EXPLORER_MODEL=bert-base-uncased deploy/serve.sh 2 8501`: each warm-up loads it, the
# first downloading it (440 MB) into the shared Hugging Face cache (HF_HOME), the others waiting for that copy.
set -euo pipefail
N=${1:?usage: deploy/serve.sh N PORT [BIND_ADDRESS]}
PORT=${2:?usage: deploy/serve.sh N PORT [BIND_ADDRESS]}
BIND=${3:-0.0.0.0}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
command -v haproxy >/dev/null || { echo "serve.sh: haproxy is not installed (apt-get install haproxy)" >&2; exit 2; }
if [ -z "${BERT_EXPLORER_CLASS_STORE:-}" ]; then
  command -v redis-server >/dev/null \
    || { echo "serve.sh: redis-server is not installed (apt-get install redis-server)" >&2; exit 2; }
fi

work="$(mktemp -d)"
pids=()
stopping=0
stop() {
  trap - EXIT INT TERM
  stopping=1
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT INT TERM

# keep NAME LOG WARM CMD...: run CMD (output to LOG) in a loop that starts it again a second after it ends,
# until serve.sh stops; the loop's pid goes into pids (its TERM stops CMD first). WARM (an app process's URL, or
# ""): each start after the first is warmed up (deploy/warm_up.sh) as the first start is below, so the students
# after a restart do not pay torch's import and the model load.
keep() {
  local name=$1 log=$2 warm=$3
  shift 3
  (
    child="" warming="" starts=0
    trap 'trap - TERM INT; kill $child $warming 2>/dev/null; wait 2>/dev/null; exit 0' TERM INT
    while true; do
      "$@" >>"$log" 2>&1 &
      child=$!
      echo "serve.sh: $name started (pid $child)"
      if [ -n "$warm" ] && [ "$starts" -gt 0 ]; then
        "$ROOT/deploy/warm_up.sh" "$warm" &  # its python is $! (exec): stopped with the loop; it logs its outcome
        warming=$!
      fi
      starts=$((starts + 1))
      status=0
      wait "$child" || status=$?
      echo "serve.sh: $name (pid $child) ended with status $status; starting it again in 1 s" >&2
      sleep 1
    done
  ) &
  pids+=($!)
}

if [ -z "${BERT_EXPLORER_CLASS_STORE:-}" ]; then
  rport=$((PORT + N + 1))
  keep redis-server "$work/redis.log" "" redis-server --port "$rport" --bind 127.0.0.1 --dir "$work" --save "" \
    --appendonly yes --appendfsync everysec --maxmemory "${BX_REDIS_MB:-64}mb" --maxmemory-policy volatile-lru
  export BERT_EXPLORER_CLASS_STORE="redis://127.0.0.1:$rport/0"
  for _ in $(seq 1 100); do
    python -c "import redis; redis.Redis(port=$rport, socket_timeout=1).ping()" 2>/dev/null && break
    sleep 0.2
  done
  echo "serve.sh: redis-server on 127.0.0.1:$rport for live classes, log $work/redis.log"
fi

servers=""
cd "$ROOT"
for i in $(seq 1 "$N"); do
  p=$((PORT + i))
  keep "process $i" "$work/streamlit-$i.log" "http://127.0.0.1:$p" \
    python -m streamlit run app.py --server.headless true --server.address 127.0.0.1 --server.port "$p" \
    --server.scriptHealthCheckEnabled true
  servers+="    server s$i 127.0.0.1:$p cookie s$i check"$'\n'
done
for i in $(seq 1 "$N"); do
  p=$((PORT + i))
  ok=0
  for _ in $(seq 1 300); do
    python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$p/_stcore/health', timeout=2)" \
      2>/dev/null && { ok=1; break; }
    sleep 0.5
  done
  [ "$ok" = 1 ] || { echo "serve.sh: process $i did not answer in 150 s:"; cat "$work/streamlit-$i.log"; exit 1; } >&2
  echo "serve.sh: process $i healthy on 127.0.0.1:$p, log $work/streamlit-$i.log"
done

# Warm-up (deploy/warm_up.sh): each process runs app.py once, all at once, before HAProxy lets the
# first student in, so nobody waits for torch's import and the model load.
warm=()
for i in $(seq 1 "$N"); do
  "$ROOT/deploy/warm_up.sh" "http://127.0.0.1:$((PORT + i))" &
  warm+=($!)
done
for w in "${warm[@]}"; do wait "$w" || echo "serve.sh: a warm-up failed; its first student loads the app" >&2; done

# The servers go where deploy/haproxy.cfg has its @SERVERS@ line (tests/support/appserver.py does the same).
awk -v servers="$servers" '/# @SERVERS@/ { printf "%s", servers; next } { print }' \
  "$ROOT/deploy/haproxy.cfg" >"$work/haproxy.cfg"
echo "serve.sh: HAProxy on http://$BIND:$PORT -> $N processes"
export BX_BIND="$BIND:$PORT"
keep haproxy "$work/haproxy.log" "" haproxy -db -f "$work/haproxy.cfg"
while [ "$stopping" = 0 ]; do wait || true; done  # until Ctrl-C or SIGTERM (stop)
