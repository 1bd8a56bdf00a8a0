# BERT Explorer in one container: CPU torch, the bundled model inside, a non-root user.
#
#   docker build -t bert-explorer . && docker run -p 8501:8501 bert-explorer     # then http://localhost:8501
#
# Not built on the project's machine (no base images reachable there): keep it in step with .ci/run
# and scripts/test by hand, which tests/app/test_deploy.py checks (same Python, same pins, same app command).
# The install is CI's, minus the test tools: CI installs requirements-dev.txt (the runtime pins plus
# pytest, playwright...), this installs requirements.txt (the same runtime pins plus PyTorch's CPU
# wheel index, so torch is 2.13.0+cpu and none of the CUDA packages come along). Both apply constraints.txt:
# every package at the version the tests ran with.
FROM python:3.11-slim

# BERT_EXPLORER_MODEL: the model a fresh visitor sees. A container usually has the network: the real
# bert-base-uncased (440 MB, downloaded into HF_HOME by the warm-up before the first visitor; keep it across
# restarts with -v bert-cache:/home/app/.cache/huggingface). Offline, or to start at once:
# docker run -e BERT_EXPLORER_MODEL=bundled-minilm ... (the bundled MiniLM, inside the image).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HOME=/home/app/.cache/huggingface \
    BERT_EXPLORER_MODEL=bert-base-uncased

RUN useradd --create-home --uid 1000 app
WORKDIR /app

# Requirements first: the layer with torch (about 200 MB) is rebuilt only when a pin changes.
COPY requirements.txt requirements-runtime.txt constraints.txt ./
RUN python -m pip install -r requirements.txt

# The app, its two bundled models (bert_core/bundled 25 MB, bert_core/bundled_minilm 45 MB) and .streamlit/config.toml.
COPY --chown=app:app . .
USER app

EXPOSE 8501
# Streamlit's own health endpoint; python, because the slim image has no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"

# `streamlit run app.py` on 0.0.0.0:8501, warmed up before the first visitor (deploy/start.sh).
CMD ["deploy/start.sh", "8501", "0.0.0.0"]
