# runtimeclass-syncer: the sidecar image (deploy/vcluster.yaml runs it in the vcluster pod).
# Build: make image (tools/image.py), with buildah and no Docker engine; CI: .github/workflows/image.yml.
# COPY only, no RUN step (no container runs during the build), from what tools/image.py prepares:
#   BASE            a Debian root filesystem (bookworm: Python 3.11) made by mmdebstrap from Debian packages,
#                   imported as a local image: Essential packages and python3, no apt, no pip, no compiler,
#                   the user nonroot (65532:65532)
#   build/image/venv the application's virtualenv, made by BASE's own python3 in a chroot from binary wheels
#                   (V8 from the mini-racer wheel), without pip, bytecode compiled
# The context is the repository; .dockerignore lets only build/image/venv through. The image runs with a
# read-only root filesystem (nothing is written at run time) as the numeric non-root user 65532.
ARG BASE=localhost/runtimeclass-syncer-base:bookworm-amd64
FROM ${BASE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="runtimeclass-syncer" \
      org.opencontainers.image.description="vcluster sidecar: host RuntimeClasses into a virtual cluster, pod sync gated by label selector" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY build/image/venv /opt/venv
ENV PATH=/opt/venv/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8081 8090
ENTRYPOINT ["runtimeclass-syncer"]
CMD ["--help"]
