# argocd-image-updater (Python): the controller image.
#
# The build needs no network for Python packages: it installs the project wheel and the pinned
# dependency wheels prepared in dist/ beforehand (scripts/build-image does both steps):
#   uv build --wheel -o dist/
#   uv export --frozen --no-dev --no-emit-project -o dist/requirements.txt
#   pip download --only-binary=:all: --platform manylinux_2_17_x86_64 ... -d dist/wheels -r dist/requirements.txt
#   docker build -t argocd-image-updater:0.1.0 .
#
# At run time it writes only to /tmp (temporary files, the git clone cache) and /app/config
# mounts, so it runs with a read-only root filesystem: mount an emptyDir at /tmp.
#
# The base is the official Python image. Any Debian bookworm base with python3, python3-venv and
# python-is-python3 works as well (scripts/test-image makes one with debootstrap, to build and run
# the image without Docker Hub): every step calls `python` through PATH, never by its path
# (/usr/local/bin in the official image, /usr/bin in Debian's), and the virtualenv points at the
# base's interpreter, which is why both stages use the same base.
ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS install
# Offline: only the wheels from dist/, each pinned (and hash-checked) by requirements.txt. The
# dependencies are a step of their own, before the project: a build after a change to the project
# alone takes that step from the build cache.
# Bytecode is compiled at build time, as unchecked-hash .pyc files (valid whatever the files' times
# after the copy to the final stage): the root filesystem is read-only at run time, and without
# them every start compiles every module it imports again (`test --help` about 3 times slower).
COPY dist/requirements.txt /dist/
COPY dist/wheels/ /dist/wheels/
RUN python -m venv /app/venv \
 && /app/venv/bin/pip install --no-cache-dir --no-compile --no-index --find-links /dist/wheels \
      --require-hashes -r /dist/requirements.txt \
 && find /app/venv -name '__pycache__' -prune -exec rm -rf {} + \
 && python -m compileall -q --invalidation-mode unchecked-hash /app/venv/lib
COPY dist/*.whl /dist/
RUN /app/venv/bin/pip install --no-cache-dir --no-compile --no-index --no-deps \
      /dist/argocd_image_updater-*.whl \
 && /app/venv/bin/pip uninstall -y pip \
 && python -m compileall -q --invalidation-mode unchecked-hash \
      /app/venv/lib/python3*/site-packages/argocd_image_updater

FROM ${PYTHON_IMAGE}
# git and ssh for git write-back, gpg for commit signing, tini as init (as the original image).
RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client gnupg tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 1000 argocd-image-updater \
 && useradd --uid 1000 --gid 1000 --home-dir /app --no-create-home argocd-image-updater \
 && mkdir -p /app/config/ssh /app/config/tls /app/.ssh /app/ssh-keys \
 && chown -R 1000:1000 /app
COPY --from=install /app/venv /app/venv
ENV PATH=/app/venv/bin:$PATH \
    HOME=/app \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    GIT_CACHE_DIR=/tmp/git-cache
USER 1000:1000
WORKDIR /app
EXPOSE 8080 8081 8082 8443
ENTRYPOINT ["/usr/bin/tini", "--", "argocd-image-updater"]
CMD ["run"]
