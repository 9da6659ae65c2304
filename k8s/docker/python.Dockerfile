# Python image: the runtime image (Debian, Open MPI 4.1, /opt/fibermpi) with a Python environment in
# /opt/fibermpi/python holding mpi4py (compiled against the image's Open MPI 4.1, as the Kubernetes
# mode needs), numpy, gymnasium, cloudpickle and the fibermpi package (FIBER_MPI=openmpi4). Non-root,
# as the runtime image is. Build from the repository root, after the runtime image:
#   docker build -f k8s/docker/python.Dockerfile -t fibermpi/python:0.1.0 .
# Checked by hand so far (podman, this repository's base image): it builds in about 9 minutes on
# 2 cores, weighs 827 MB, and runs a Pool and a Group whose members Allreduce numpy arrays through
# group_comm(). scripts/images does not build it yet, and no FiberJob test runs it yet.
# Build arguments:
#   BASE_IMAGE     the build stage's base (Debian bookworm)
#   RUNTIME_IMAGE  the final stage's base: the runtime image
# Where PyPI is reached through a proxy with a certificate authority of its own, pass its bundle as
# the secret pip_ca (podman build --secret id=pip_ca,src=/etc/ssl/certs/ca-certificates.crt).
ARG BASE_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=fibermpi/runtime:dev

FROM ${BASE_IMAGE} AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config libopenmpi-dev openmpi-bin \
      libboost-serialization-dev libhwloc-dev libyaml-cpp-dev libcurl4-openssl-dev libssl-dev \
      nlohmann-json3-dev libcli11-dev python3 python3-venv python3-dev ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# mpi4py from source, so that it is built against the image's Open MPI 4.1.
RUN --mount=type=secret,id=pip_ca python3 -m venv /opt/fibermpi/python \
    && if [ -f /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi \
    && MPICC=mpicc /opt/fibermpi/python/bin/pip install --no-cache-dir --no-binary=mpi4py \
         mpi4py==4.1.1 numpy==2.4.6 gymnasium==1.4.0 cloudpickle
WORKDIR /src
COPY . .
RUN --mount=type=secret,id=pip_ca if [ -f /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi \
    && FIBER_MPI=openmpi4 /opt/fibermpi/python/bin/pip install --no-cache-dir . \
    && /opt/fibermpi/python/bin/python -c "import fibermpi, mpi4py.MPI"

FROM ${RUNTIME_IMAGE}
USER root
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/fibermpi/python /opt/fibermpi/python
ENV PATH=/opt/fibermpi/python/bin:/opt/fibermpi/bin:$PATH
USER 1000:1000
