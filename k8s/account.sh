# Sourced after env.sh by run.sh and demo.sh: the server's account, and
# the sampler the nodes it does not run on need.
#
# account OUT [TTL] writes
# a kubeconfig of the server's service account, as deploy/kubernetes/
# rbac.yaml gives it, with a token of TTL (an hour), so that what the server does
# on the test cluster is what deploy/kubernetes/ allows, no more.
account() {
  local out=$1 ttl=${2:-1h}
  kubectl apply -f deploy/kubernetes/rbac.yaml -f deploy/kubernetes/networkpolicy.yaml >/dev/null
  cp "$KUBECONFIG" "$out"
  KUBECONFIG=$out kubectl config set-credentials limitlab --token="$(kubectl -n limitlab create token limitlab --duration="$ttl")" >/dev/null
  KUBECONFIG=$out kubectl config set-context --current --user=limitlab --namespace=limitlab >/dev/null
}

# sampler IMAGE: the sampler beside each node, deployed as
# deploy/kubernetes/sampler.yaml says, over TLS with a CA of its own.
sampler() {
  local certs; certs=$(mktemp -d)
  (
    cd "$certs"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=limitlab-sampler-ca 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout tls.key -out tls.csr -subj /CN=limitlab-sampler 2>/dev/null
    printf 'subjectAltName=DNS:limitlab-sampler\n' >san.ext
    openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt -days 1 -extfile san.ext 2>/dev/null
  )
  kubectl -n limitlab-sampler create secret generic limitlab-sampler --from-literal=token="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
    --from-file="$certs/tls.crt" --from-file="$certs/tls.key" --from-file="$certs/ca.crt" >/dev/null
  rm -rf "$certs"
  kubectl apply -f deploy/kubernetes/sampler.yaml >/dev/null
  kubectl -n limitlab-sampler set image daemonset/limitlab-sampler sampler="$1" >/dev/null
  kubectl -n limitlab-sampler rollout status daemonset/limitlab-sampler --timeout=60s >/dev/null || { echo "k8s: FAIL: the sampler DaemonSet did not roll out" >&2; exit 1; }
}
