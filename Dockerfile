# The dashboard as an image built with nothing pulled: FROM scratch, holding
# the one static binary that `make build` makes (it is the server, and the
# workload program it puts in its own workload image). `make image` builds
# it as limitlab:local; docker-compose.yml runs it.
FROM scratch
COPY bin/limitlab /limitlab
ENTRYPOINT ["/limitlab"]
