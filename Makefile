# Limit Lab. `make run` starts the dashboard, `make test` runs every test.
# Both need a Docker Engine; the tests also need Chromium and qemu (see
# docs/testing.md).

export CGO_ENABLED := 0
GO ?= go

.PHONY: hostcheck-save release assets-npm assets-update pool-demo run test test-k8s test-docker26 k8s-demo test-js reap-test-engines test-v2 bench-v2 bench-overhead test-race soak image assets build generate bench bench-labs clean runtimes-image

# The chart library's files are in the repository (static/vendor), at the
# version package-lock.json pins and with the checksums SHA256SUMS gives,
# so that building needs Go only (go install included). `make assets`
# checks them; `make assets-npm` checks them against npm's own copy of
# that version (make test does), and `make assets-update` takes npm's.
assets:
	cd static/vendor && sha256sum --quiet -c SHA256SUMS

assets-npm: assets
	npm ci --no-audit --no-fund
	cmp node_modules/uplot/dist/uPlot.iife.min.js static/vendor/uPlot.iife.min.js
	cmp node_modules/uplot/dist/uPlot.min.css static/vendor/uPlot.min.css

assets-update:
	npm ci --no-audit --no-fund
	cp node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css static/vendor/
	cd static/vendor && sha256sum uPlot.iife.min.js uPlot.min.css >SHA256SUMS

# The server binary is static (CGO_ENABLED=0): it is also the workload
# program that the FROM scratch workload image runs.
build: assets
	$(GO) build -o bin/limitlab ./cmd/server

# The dashboard's image, FROM scratch with the static binary: nothing is
# pulled. docker-compose.yml runs it.
image: build
	docker build -t limitlab:local .

run: build
	./bin/limitlab $(ARGS)

# The dashboard's image for linux/amd64 and linux/arm64 as one OCI image
# index, pushed to REGISTRY (host[:port]/path) as VERSION (cmd/release,
# with go-containerregistry; nothing else is needed than Go).
release: assets
	@test -n "$(VERSION)" -a -n "$(REGISTRY)" || { echo "usage: make release VERSION=v0.1.0 REGISTRY=host/path" >&2; exit 2; }
	$(GO) run ./cmd/release -version $(VERSION) -registry $(REGISTRY)

generate:
	$(GO) generate ./web

# The packages that need no engine, and the workshop's fake-engine tests,
# run first under the race detector (which needs cgo).
RACE_PKGS := ./internal/experiments/... ./internal/workload/... ./internal/hub ./internal/store ./internal/engine/enginefake ./internal/benchdoc ./internal/labfiles ./internal/kube
test-race:
	CGO_ENABLED=1 $(GO) test -race -count=1 -skip '^TestGeneratorAgreesWithVegeta$$' $(RACE_PKGS)
	CGO_ENABLED=1 $(GO) test -race -count=1 -run '^(TestCalculate|TestMakeSample|TestCgroupFiles|TestCountersFromEngine|TestPressure|TestCapabilities)' ./internal/engine
	CGO_ENABLED=1 $(GO) test -race -count=1 -run '^(TestFake|TestEngine|TestFairQueue|TestQuota|TestStreamCache|TestCSVText|TestRoom)' ./internal/workshop
	CGO_ENABLED=1 $(GO) test -race -count=1 -run '^(TestVerdictsNeedingAMissingSignal|TestOneTickerForAllRuns|TestContended|TestAReadingWhoseCountersFell|TestFakeAWaitIsBoundedFromTheLanesStart|TestAResizeInProgressIsFollowedToItsEnd|TestStepsUnfinishedAtTheEnd)' ./internal/runner
	CGO_ENABLED=1 $(GO) test -race -count=1 -run '^(TestSamplerRefusesBadRequests|TestSamplerOverTLS|TestCountersRoundTrip)$$' ./internal/sampler

# The pages' pure JavaScript functions, with Node's own test runner.
test-js:
	node --test static/test/

# Test engines an interrupted test run left running (found by their
# pidfiles under /run/ll-*) are stopped before the tests start.
reap-test-engines:
	$(GO) run ./internal/testbed/reap

# -p 1: the packages' experiments measure CPU time on a shared 2-core host
# and must not run beside each other. Then the suite's Kubernetes part on a
# cluster of its own (test-k8s), and its cgroup v2 part, in the VM
# (test-v2).
test: reap-test-engines hostcheck-save assets-npm test-race test-js runtimes-image
	$(GO) vet ./...
	$(GO) vet -tags v2vm ./web
	$(GO) vet -tags k8s ./internal/kube ./internal/kubetest ./web ./deploy/helm
	$(GO) test -p 1 -count=1 -timeout 30m ./...
	engines/test-docker26.sh
	k8s/run.sh
	vm/run.sh
	engines/hostcheck.sh compare .hostcheck

# The runtimes image of the runtime-cpus lab (Java, Node.js and Python from
# Debian's packages, made with mmdebstrap and cached), on the local engine.
runtimes-image:
	images/runtimes/build.sh

# What make test must leave of the machine as it found it: its links
# (docker0 among them) and its top-level cgroups (engines/hostcheck.sh).
hostcheck-save:
	engines/hostcheck.sh save .hostcheck

# The engine suite's core against Debian 13's Docker 26.1 and containerd
# 1.7, unpacked (cached under ~/.cache/limitlab-engines) and started beside
# this machine's Docker 20.10, which stays as it is.
test-docker26: assets
	engines/test-docker26.sh

# The suite's Kubernetes part on a real cluster of its own (k8s/): this
# machine's node (cgroup v1), then the cgroup v2 VM joined as a second
# node; Kubernetes built from the Go module proxy (cached under
# ~/.cache/limitlab-k8s; minutes the first time), Debian's etcd and
# containerd unpacked, no image pulled, this machine's sysctls untouched.
test-k8s: assets
	k8s/run.sh

# The test cluster and the dashboard on it, for trying the Kubernetes labs
# in a browser (ADDR, DATA; NODES=2 adds the cgroup v2 VM as a second
# node); Ctrl-C stops everything by PID.
k8s-demo: assets
	k8s/demo.sh

# The engine suite's cgroup v2 part in a VM of our own: Debian's kernel
# under qemu (TCG), the host's root read-only over 9p, the host's dockerd on
# cgroup v2 inside. This machine's own cgroups stay as they are.
test-v2: assets
	vm/run.sh

# The v2 suite on this host (v1) and in the VM (v2), its figures side by
# side in docs/benchmarks.md.
bench-v2: assets
	vm/bench.sh docs/benchmarks.md

bench: assets
	$(GO) test -p 1 -run '^$$' -bench . -benchtime 3s ./...

# Drives a room for ten minutes (SOAK=60m: an hour) against the real server
# (50 participants on addresses of their own, 50 behind one, one through
# nginx with TLS, 10 scripts without cookies, a hostile client, 200
# viewers) and writes the figures into docs/benchmarks.md.
SOAK ?= 10m
soak: build
	$(GO) run ./cmd/soak -bin bin/limitlab -duration $(SOAK) -out docs/benchmarks.md

# What Limit Lab costs the host against `docker stats`, for the same twelve
# containers: three rounds of three 20 s windows, into docs/benchmarks.md.
# The dashboard on a pool of three dockerd started beside this machine's
# own (docs/deploying.md: More than one host); interrupt it to stop them all.
pool-demo: build
	$(GO) run ./cmd/pooldemo -bin bin/limitlab

bench-overhead: build
	$(GO) run ./cmd/overhead -bin bin/limitlab -out docs/benchmarks.md

# Runs every CPU lab three times and writes the fidelity table into
# docs/benchmarks.md (about ten minutes on a 2-core host).
bench-labs: assets
	$(GO) run ./cmd/labbench -runs 3 -out docs/benchmarks.md

clean:
	rm -rf bin node_modules
