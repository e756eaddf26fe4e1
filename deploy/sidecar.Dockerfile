# syntax=docker/dockerfile:1
#
# MindRouter GPU telemetry sidecar (sidecar/cmd/mindrouter-sidecar).
#
# Build from the repository root:
#   docker build -f deploy/sidecar.Dockerfile --build-arg VERSION=$(git describe --always) -t mindrouter-sidecar .
# Run on a GPU node (needs the NVIDIA Container Toolkit; --gpus all injects
# libnvidia-ml.so.1 and the /dev/nvidia* devices into the container):
#   docker run -d --name mindrouter-sidecar --restart unless-stopped --gpus all \
#     -e SIDECAR_SECRET_KEY="$(cat /etc/mindrouter/sidecar.key)" \
#     -p 127.0.0.1:18007:8007 mindrouter-sidecar
# Without --gpus all the sidecar still starts, answers /health with 503 and
# says why, and retries NVML every 30 s.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-trixie AS build
WORKDIR /src
# cgo is required (go-nvml), a GPU is not: NVML is dlopened at run time.
ENV CGO_ENABLED=1 CGO_CFLAGS=-Wno-deprecated-declarations GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY sidecar/ sidecar/
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/mindrouter-sidecar ./sidecar/cmd/mindrouter-sidecar

# The binary links only glibc; the runtime image must have a glibc at least as
# new as the builder's (both Debian 13 "trixie"). A slim Debian image keeps
# ldconfig, which the NVIDIA Container Toolkit runs after injecting the driver
# libraries.
FROM debian:trixie-slim
COPY --from=build /out/mindrouter-sidecar /usr/local/bin/mindrouter-sidecar
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=utility \
    SIDECAR_ADDR=:8007
USER 65532:65532
EXPOSE 8007
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/mindrouter-sidecar"]
