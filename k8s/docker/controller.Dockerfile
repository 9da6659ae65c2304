# fiber-controller image. Build from the repository root:
#   docker build -f k8s/docker/controller.Dockerfile -t fibermpi/controller:0.1.0 .
FROM debian:bookworm AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config libopenmpi-dev openmpi-bin \
      libboost-serialization-dev libhwloc-dev libyaml-cpp-dev libcurl4-openssl-dev libssl-dev \
      nlohmann-json3-dev libcpp-httplib-dev libcli11-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The controller links no MPI; the project's configure step still looks MPI up for the runtime.
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFIBER_MPI=openmpi4 \
      -DFIBER_BUILD_TESTS=OFF -DFIBER_BUILD_EXAMPLES=OFF -DFIBER_BUILD_BENCH=OFF \
    && cmake --build /build --target fiber-controller \
    && install -m 0755 /build/k8s/controller/fiber-controller /usr/local/bin/fiber-controller

FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libcurl4 libyaml-cpp0.7 libssl3 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/fiber-controller /usr/local/bin/fiber-controller
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/fiber-controller"]
