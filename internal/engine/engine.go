// Package engine is everything Limit Lab does with the Docker Engine and the
// kernel's cgroup files: the trimmed Engine API it calls, the workload image,
// hardened container configs built from validated fields, host probing and
// its capabilities, cgroup v1/v2 readers, the engine's stats and its event
// stream. It knows nothing of runs, queues or HTML.
package engine

import (
	"context"
	"io"

	"github.com/moby/moby/client"
)

// Engine is the part of the Docker Engine API Limit Lab calls. The moby
// client satisfies it; tests of scheduling logic use a small fake, and
// everything that touches containers is tested on the real engine.
type Engine interface {
	Info(ctx context.Context, opts client.InfoOptions) (client.SystemInfoResult, error)
	ServerVersion(ctx context.Context, opts client.ServerVersionOptions) (client.ServerVersionResult, error)
	ClientVersion() string
	DaemonHost() string

	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, opts client.ImageBuildOptions) (client.ImageBuildResult, error)

	ContainerCreate(ctx context.Context, opts client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerStart(ctx context.Context, id string, opts client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerInspect(ctx context.Context, id string, opts client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerWait(ctx context.Context, id string, opts client.ContainerWaitOptions) client.ContainerWaitResult
	ContainerLogs(ctx context.Context, id string, opts client.ContainerLogsOptions) (client.ContainerLogsResult, error)
	ContainerKill(ctx context.Context, id string, opts client.ContainerKillOptions) (client.ContainerKillResult, error)
	ContainerRemove(ctx context.Context, id string, opts client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerList(ctx context.Context, opts client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerStats(ctx context.Context, id string, opts client.ContainerStatsOptions) (client.ContainerStatsResult, error)
	ContainerUpdate(ctx context.Context, id string, opts client.ContainerUpdateOptions) (client.ContainerUpdateResult, error)
	Events(ctx context.Context, opts client.EventsListOptions) client.EventsResult

	VolumeCreate(ctx context.Context, opts client.VolumeCreateOptions) (client.VolumeCreateResult, error)
	VolumeRemove(ctx context.Context, id string, opts client.VolumeRemoveOptions) (client.VolumeRemoveResult, error)
}

// NewClient connects to the engine named by DOCKER_HOST, DOCKER_API_VERSION,
// DOCKER_CERT_PATH and DOCKER_TLS_VERIFY, as the docker CLI does, and
// negotiates the API version on first use (Docker 20.10 speaks 1.41).
func NewClient() (*client.Client, error) {
	return client.New(client.FromEnv)
}
