# The dashboard as a container, for hosts that can pull base images.
# docker-compose.yml runs it with the engine's socket and the host's cgroup
# files mounted. The image is FROM scratch: the one static binary is the
# server and the workload program it puts in its own workload image.
FROM node:20-alpine AS assets
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
COPY --from=assets /src/node_modules/uplot/dist/uPlot.iife.min.js /src/node_modules/uplot/dist/uPlot.min.css static/vendor/
RUN CGO_ENABLED=0 go build -o /limitlab ./cmd/server

FROM scratch
COPY --from=build /limitlab /limitlab
ENTRYPOINT ["/limitlab"]
