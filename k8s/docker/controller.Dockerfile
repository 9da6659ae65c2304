# fiber-controller image. Build from the repository root:
#   docker build -f k8s/docker/controller.Dockerfile -t fibermpi/controller:0.1.0 .
# scripts/images builds it with podman (where no registry can be reached, from a local Debian base
# named by BASE_IMAGE and SLIM_IMAGE).
# Build arguments:
#   BASE_IMAGE, SLIM_IMAGE  the build stage's base and the final stage's (Debian bookworm)
#   FIBER_PREBUILT          a folder of the build context holding a fiber-controller already built
#                           on Debian bookworm (scripts/images --prebuilt: the one CI compiled and
#                           tested); empty (the default): compile it here. The final stage is the
#                           same either way.
ARG BASE_IMAGE=debian:bookworm
ARG SLIM_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS build
ARG FIBER_PREBUILT=
# The packages scripts/setup installs for a build (one list for both).
COPY scripts/packages/build.list /tmp/packages/
RUN if [ -z "$FIBER_PREBUILT" ]; then \
      apt-get update && sed -e 's/#.*//' /tmp/packages/build.list \
        | DEBIAN_FRONTEND=noninteractive xargs apt-get install -y --no-install-recommends \
      && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
COPY . .
# The controller links no MPI; the project's configure step still looks MPI up for the runtime.
RUN if [ -n "$FIBER_PREBUILT" ]; then \
      install -m 0755 "$FIBER_PREBUILT/fiber-controller" /usr/local/bin/fiber-controller; \
    else \
      cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFIBER_MPI=openmpi4 \
        -DFIBER_BUILD_TESTS=OFF -DFIBER_BUILD_EXAMPLES=OFF -DFIBER_BUILD_BENCH=OFF \
      && cmake --build /build --target fiber-controller \
      && install -m 0755 -s /build/k8s/controller/fiber-controller /usr/local/bin/fiber-controller; \
    fi

FROM ${SLIM_IMAGE}
# Every library fiber-controller needs (readelf -d): libcurl, yaml-cpp, OpenSSL, cpp-httplib; the
# image test checks that each one resolves.
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libcurl4 libyaml-cpp0.7 libssl3 libcpp-httplib0.11 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/fiber-controller /usr/local/bin/fiber-controller
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/fiber-controller"]
