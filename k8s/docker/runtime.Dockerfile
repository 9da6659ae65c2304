# Runtime image: Debian, Open MPI (Debian's 4.1 with ompi-server for the name service), fibermpi and
# its examples under /opt/fibermpi (bin/: 00_hello_process ... 04_group, the RL ports, pbt). The Kubernetes mode
# of the runtime needs Open MPI 4.1: its pods meet through the job's ompi-server. Build from the
# repository root (the samples name it fibermpi/runtime and fibermpi/examples):
#   docker build -f k8s/docker/runtime.Dockerfile -t fibermpi/runtime:0.1.0 -t fibermpi/examples:0.1.0 .
# A program of your own: build it against /opt/fibermpi (find_package(FiberMPI)) in an image FROM
# this one, and name it in the FiberJob's launcher template.
# scripts/images builds it with podman. Build arguments:
#   BASE_IMAGE, SLIM_IMAGE  the build stage's base and the final stage's (Debian bookworm)
#   FIBER_PREBUILT          a folder of the build context holding opt/fibermpi, fibermpi built
#                           against Debian's Open MPI 4.1 on bookworm and installed there
#                           (scripts/images --prebuilt: what CI compiled and tested); empty (the
#                           default): compile it here. The final stage is the same either way.
ARG BASE_IMAGE=debian:bookworm
ARG SLIM_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS build
ARG FIBER_PREBUILT=
# Only these targets, and no install (scripts/images --source-check: CI builds the fibermpi
# command this way, so that a package missing from the list fails CI); empty: everything.
ARG FIBER_SOURCE_TARGETS=
# The packages scripts/setup installs for a build (one list for both).
COPY scripts/packages/build.list /tmp/packages/
RUN if [ -z "$FIBER_PREBUILT" ]; then \
      apt-get update && sed -e 's/#.*//' /tmp/packages/build.list \
        | DEBIAN_FRONTEND=noninteractive xargs apt-get install -y --no-install-recommends \
      && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
COPY . .
RUN if [ -n "$FIBER_PREBUILT" ]; then \
      mkdir -p /opt && cp -a "$FIBER_PREBUILT/opt/fibermpi" /opt/fibermpi; \
    else \
      cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFIBER_MPI=openmpi4 \
        -DFIBER_BUILD_TESTS=OFF -DFIBER_BUILD_BENCH=OFF -DFIBER_BUILD_K8S=OFF \
        -DCMAKE_INSTALL_PREFIX=/opt/fibermpi \
      && if [ -n "$FIBER_SOURCE_TARGETS" ]; then \
        cmake --build /build --target $FIBER_SOURCE_TARGETS; \
      else \
        cmake --build /build && cmake --install /build --strip; \
      fi; \
    fi

FROM ${SLIM_IMAGE}
# Every library the programs of /opt/fibermpi/bin need; the image test checks that each resolves.
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      openmpi-bin libopenmpi3 libboost-serialization1.74.0 libhwloc15 libyaml-cpp0.7 \
      libcurl4 libssl3 ca-certificates procps coreutils tini \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/fibermpi /opt/fibermpi
ENV PATH=/opt/fibermpi/bin:$PATH \
    LD_LIBRARY_PATH=/opt/fibermpi/lib
# Pods run as a non-root user; Open MPI refuses root unless told otherwise.
RUN useradd --uid 1000 --create-home fiber
USER 1000:1000
WORKDIR /home/fiber
# A real init as PID 1: it passes a pod's SIGTERM on to the program, reaps the orphans Open MPI's
# processes leave, and ends with the program's exit code. A pod keeps it by giving its program as
# `args` (a `command` replaces the ENTRYPOINT).
ENTRYPOINT ["/usr/bin/tini", "--"]
