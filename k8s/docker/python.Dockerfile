# Python image: the runtime image (Debian, Open MPI 4.1, /opt/fibermpi) with a Python environment in
# /opt/fibermpi/python (first on PATH) holding the fibermpi package built against the image's Open
# MPI 4.1 (as the Kubernetes mode needs), mpi4py, numpy, gymnasium and cloudpickle, and the Python
# examples in /opt/fibermpi/examples/python. Non-root, as the runtime image
# is. mpi4py is PyPI's wheel: its Open MPI build loads the image's libmpi (MPI.Get_library_version()
# says Open MPI v4.1.4). Build from the repository root, after the runtime image:
#   docker build -f k8s/docker/python.Dockerfile -t fibermpi/python:0.1.0 .
# (with --build-arg RUNTIME_IMAGE=REGISTRY/fibermpi/runtime:TAG where the runtime image has another
# name). scripts/images builds it with the runtime image it just built.
# Build arguments:
#   BASE_IMAGE      the build stage's base (Debian bookworm)
#   RUNTIME_IMAGE   the final stage's base: the runtime image (default fibermpi/runtime:0.1.0)
#   FIBER_PREBUILT  a folder of the build context holding what scripts/images --prebuilt stages:
#                   wheels/ (the dependencies' wheels, the versions of .venv-openmpi4/) and
#                   site-packages/ (the fibermpi package installed in .venv-openmpi4/, built on a
#                   Debian bookworm machine against the same Open MPI 4.1); empty: compiled here
# Where PyPI is reached through a proxy with a certificate authority of its own, pass its bundle as
# the secret pip_ca (podman build --secret id=pip_ca,src=/etc/ssl/certs/ca-certificates.crt).
ARG BASE_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=fibermpi/runtime:0.1.0

FROM ${BASE_IMAGE} AS build
ARG FIBER_PREBUILT=
# The packages scripts/setup installs for pip install . (one list for both).
COPY scripts/packages/build.list scripts/packages/python-build.list /tmp/packages/
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-venv ca-certificates \
    && if [ -z "$FIBER_PREBUILT" ]; then \
      cat /tmp/packages/build.list /tmp/packages/python-build.list | sed -e 's/#.*//' \
        | DEBIAN_FRONTEND=noninteractive xargs apt-get install -y --no-install-recommends; \
    fi \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=secret,id=pip_ca if [ -f /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi \
    && python3 -m venv /opt/fibermpi/python \
    && pip=/opt/fibermpi/python/bin/pip \
    && site="$(/opt/fibermpi/python/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
    && if [ -n "$FIBER_PREBUILT" ]; then \
      $pip install --no-cache-dir --no-index --find-links "$FIBER_PREBUILT/wheels" "$FIBER_PREBUILT"/wheels/*.whl \
      && cp -a "$FIBER_PREBUILT"/site-packages/. "$site"/ \
      && cp -a "$FIBER_PREBUILT"/bin/fibermpi /opt/fibermpi/python/bin/fibermpi; \
    else \
      $pip install --no-cache-dir mpi4py==4.1.2 numpy==2.4.6 gymnasium==1.4.0 cloudpickle \
      && FIBER_MPI=openmpi4 $pip install --no-cache-dir . ; \
    fi

FROM ${RUNTIME_IMAGE}
USER root
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/fibermpi/python /opt/fibermpi/python
# The Python examples and RL ports (k8s/samples/python-es.yaml runs one).
COPY examples/python /opt/fibermpi/examples/python
ENV PATH=/opt/fibermpi/python/bin:/opt/fibermpi/bin:$PATH
USER 1000:1000
# Every library the package and mpi4py load is in the image (the build stage's are not).
RUN python -c "import fibermpi, mpi4py.MPI, numpy, gymnasium"
