# durable-responses: an OpenAI Responses host for Microsoft Agent Framework agents and workflows.
#
#   docker build -t durable-responses .
#   docker run -p 8088:8088 -v durable-data:/data durable-responses
#
# With no configuration it serves the built-in example app on embedded SQLite in /data.
# DATABASE_URL=postgresql://... switches to PostgreSQL (run `durable-responses migrate` first);
# DURABLE_RESPONSES_APP=module:factory serves your own app (see deploy/custom-app/).
#
# The Python interpreter comes from the base image and nothing else: any image whose `python3` is
# 3.11+ with the venv module works (a Debian bookworm root filesystem with python3-venv is enough).
ARG BASE_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------------------------
# The runtime dependencies, read from pyproject.toml: a stage of their own, so the install below
# is cached on this list alone, not on the whole file (its tool settings, test extras, version).
FROM ${BASE_IMAGE} AS requirements

WORKDIR /src
COPY pyproject.toml ./
RUN python3 -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /requirements.txt

# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python3 -m venv /opt/venv

WORKDIR /src

# Dependencies first, so that neither a code change nor another edit of pyproject.toml that
# leaves them as they are reinstalls them.
COPY --from=requirements /requirements.txt /tmp/requirements.txt
RUN /opt/venv/bin/pip install --no-cache-dir -r /tmp/requirements.txt

# Then the package itself (server/ and migrations/).
COPY . ./
RUN /opt/venv/bin/pip install --no-cache-dir --no-deps . \
    && /opt/venv/bin/durable-responses --help > /dev/null

# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE}

LABEL org.opencontainers.image.title="durable-responses" \
      org.opencontainers.image.description="Durable OpenAI Responses host for Microsoft Agent Framework agents and workflows" \
      org.opencontainers.image.licenses="MIT"

# A fixed non-root user; its home is what a Foundry hosted session keeps across turns.
RUN groupadd --gid 10001 app \
    && useradd --no-log-init --uid 10001 --gid app --home-dir /home/app --create-home \
        --shell /usr/sbin/nologin app \
    && mkdir -p /data \
    && chown app:app /data

COPY --from=builder /opt/venv /opt/venv

ENV PATH=/opt/venv/bin:$PATH \
    HOST=0.0.0.0 \
    PORT=8088 \
    DURABLE_RESPONSES_DATA_DIR=/data \
    PYTHONUNBUFFERED=1

WORKDIR /home/app
USER 10001:10001
VOLUME /data
EXPOSE 8088

# 200 from /readiness once the database answers; urllib raises (exit 1) on 503 or no answer.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readiness' % os.environ.get('PORT', '8088'), timeout=4)"]

# SIGTERM: stop taking new responses, let foreground ones finish, leave background ones to recovery.
STOPSIGNAL SIGTERM
ENTRYPOINT ["durable-responses"]
CMD ["serve"]
