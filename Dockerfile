# runtimeclass-syncer: the sidecar image (deploy/vcluster.yaml runs it in the vcluster pod).
# Build: make image. The final stage has the application's virtualenv (V8 included, from the mini-racer
# wheel) on a slim Python, no compiler and no pip, and runs as a numeric non-root user; it works with a
# read-only root filesystem (no bytecode is written at run time).

FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY syncer ./syncer
# kubesim and examples/: `runtimeclass-syncer demo` (the in-process API servers and their manifests)
COPY kubesim ./kubesim
COPY examples ./examples
# the application goes into a virtualenv without pip of its own, installed by the build stage's pip
RUN python -m venv --without-pip /opt/venv \
    && pip --python /opt/venv/bin/python install --no-cache-dir --no-compile . \
    && /opt/venv/bin/python -m compileall -q /opt/venv/lib

FROM python:3.12-slim
RUN python -m pip uninstall --yes --quiet pip setuptools wheel \
    && rm -rf /usr/local/lib/python3.12/ensurepip
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8081 8090
ENTRYPOINT ["runtimeclass-syncer"]
CMD ["--help"]
