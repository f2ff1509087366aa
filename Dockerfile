# argocd-image-updater (Python): the controller image.
# Build: docker build -t argocd-image-updater .
FROM python:3.11-slim-bookworm AS build
RUN pip install --no-cache-dir 'uv>=0.5'
WORKDIR /src
COPY pyproject.toml uv.lock README.md ./
COPY src ./src
# The locked dependencies only (no dev group), installed into /app/venv.
RUN UV_PROJECT_ENVIRONMENT=/app/venv uv sync --frozen --no-dev --no-editable

FROM python:3.11-slim-bookworm
# git and ssh for git write-back, gpg for commit signing, tini as init (as the original image).
RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client gnupg tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 1000 --home-dir /app --no-create-home argocd-image-updater \
 && mkdir -p /app/config /app/.ssh && chown -R 1000:1000 /app
COPY --from=build /app/venv /app/venv
ENV PATH=/app/venv/bin:$PATH HOME=/app PYTHONUNBUFFERED=1
USER 1000
WORKDIR /app
ENTRYPOINT ["/usr/bin/tini", "--", "argocd-image-updater"]
CMD ["run"]
