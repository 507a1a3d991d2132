# The answering service (`webgpt serve`): slim, no torch unless asked for.
#   docker build -f deploy/service.Dockerfile -t webgpt-service .
#   docker build -f deploy/service.Dockerfile --build-arg EXTRAS=model -t webgpt-service:rm .
# The second variant carries torch + transformers for a reward model in the service.

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG EXTRAS=""
WORKDIR /src
COPY pyproject.toml README.md ./
COPY infra infra
COPY browser browser
COPY agent agent
COPY reward reward
COPY evals evals
COPY learning learning
COPY service service
# the import namespace: links to the folders above (docs/architecture.md)
COPY webgpt webgpt
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".${EXTRAS:+[$EXTRAS]}"

FROM ${PYTHON_IMAGE}
# Chromium renders script-built pages (always behind the SSRF guard); tini reaps it.
# Debian security updates replace these versions: bump them when the build says so.
ARG CHROMIUM_VERSION=156.0.8078.79-1~deb12u1
ARG TINI_VERSION=0.19.0-1+b3
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
       chromium=${CHROMIUM_VERSION} tini=${TINI_VERSION} \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels webgpt==0.1.0 && rm -rf /wheels
RUN useradd --create-home --uid 10001 webgpt
USER 10001
ENV WEBGPT_HOST=0.0.0.0 \
    WEBGPT_PORT=8080 \
    WEBGPT_HOME=/home/webgpt/.cache/webgpt \
    PYTHONUNBUFFERED=1
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"]
ENTRYPOINT ["tini", "--"]
# The same command the README uses; every setting is a WEBGPT_* variable (docs/deploy.md).
CMD ["webgpt", "serve"]
