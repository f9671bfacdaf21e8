# Sourced after env.sh by run.sh and demo.sh: account OUT [TTL] writes
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
