#!/usr/bin/env bash
# Benchmarks an inspection command against kubectl's own: "kubectl-impersonate
# access -n NS" (the full binary: start-up, discovery, the rules review)
# against "kubectl auth can-i --list -n NS" (the pinned kubectl, its
# discovery cache warm), both as a user bound to one Role, on a local
# kube-apiserver + etcd (the end-to-end suite's pinned peers, static tokens,
# 127.0.0.1 only). Prints one Markdown table of hyperfine medians; everything
# it starts, it stops.
#
# Usage: hack/bench-inspect.sh [RUNS]   (default 100)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-100}"
command -v hyperfine >/dev/null || { echo "bench-inspect: install hyperfine (Debian package)" >&2; exit 1; }
command -v openssl >/dev/null || { echo "bench-inspect: install openssl (Debian package)" >&2; exit 1; }
tools="$(test/e2e/tools/build.sh 1.37)"
work="$(mktemp -d)"
pids=()
# Stops the API server, then etcd (the reverse of the start), each given
# 10 s before SIGKILL.
stop_all() {
  local i pid
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid=${pids[i]}
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap stop_all EXIT
echo "bench-inspect: building into $work" >&2
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/" ./cmd/kubectl-impersonate ./cmd/kubectl-impersonate-get_token ./cmd/kubectl-impersonate-apiserver

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
openssl rsa -in "$work/sa.key" -pubout -out "$work/sa.pub" 2>/dev/null
printf 'bench-admin-token,bench-admin,admin-uid,system:masters\nbench-alice-token,alice,alice-uid,dev\n' > "$work/tokens.csv"
etcd_port=$(free_port); peer_port=$(free_port); api_port=$(free_port)
"$tools/etcd" --name=bench --data-dir="$work/etcd" --unsafe-no-fsync \
  --listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
  --listen-peer-urls="http://127.0.0.1:$peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
  --initial-cluster="bench=http://127.0.0.1:$peer_port" >"$work/etcd.log" 2>&1 &
pids+=($!)
"$tools/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
  --secure-port="$api_port" --tls-cert-file="$work/tls.crt" --tls-private-key-file="$work/tls.key" --cert-dir="$work/certs" \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$work/sa.pub" \
  --service-account-signing-key-file="$work/sa.key" --service-cluster-ip-range=10.96.0.0/24 \
  --authorization-mode=Node,RBAC --endpoint-reconciler-type=none --token-auth-file="$work/tokens.csv" \
  --enable-priority-and-fairness=false --profiling=false >"$work/apiserver.log" 2>&1 &
pids+=($!)
kubeconfig() { # user token
  cat > "$work/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster: {server: "https://127.0.0.1:$api_port", certificate-authority: "$work/tls.crt"}
users:
- name: $1
  user: {token: $2}
contexts:
- name: bench
  context: {cluster: bench, user: $1, namespace: team-a}
current-context: bench
EOF
}
kubeconfig admin bench-admin-token
kubeconfig alice bench-alice-token
ready=""
for _ in $(seq 300); do
  if "$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" get --raw=/readyz >/dev/null 2>&1; then ready=1; break; fi
  sleep 0.2
done
[ -n "$ready" ] || { echo "bench-inspect: kube-apiserver did not become ready:" >&2; tail -5 "$work/apiserver.log" >&2; exit 1; }
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" create namespace team-a >/dev/null
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" -n team-a create role dev --verb=get,list,watch --resource=pods,configmaps,deployments.apps >/dev/null
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" -n team-a create rolebinding dev --role=dev --group=dev >/dev/null

export HOME="$work/home"
mkdir -p "$HOME"
can_i="$tools/kubectl --kubeconfig=$work/alice.kubeconfig auth can-i --list -n team-a"
access="$work/kubectl-impersonate access -n team-a --kubeconfig=$work/alice.kubeconfig"
# Both answer (and kubectl's discovery cache is warm) before timing.
$can_i >/dev/null
$access >/dev/null
hyperfine -N --style none --warmup 5 --runs "$RUNS" --export-json "$work/inspect.json" \
  -n "kubectl auth can-i --list -n NS" "$can_i" -n "kubectl impersonate access -n NS" "$access" >/dev/null
python3 - "$work/inspect.json" "$RUNS" <<'PY'
import json, sys
rows = {r["command"]: r["median"] for r in json.load(open(sys.argv[1]))["results"]}
base = rows["kubectl auth can-i --list -n NS"]
print(f"Inspection, {sys.argv[2]} runs each against a local kube-apiserver 1.37 (hyperfine medians; kubectl's discovery cache warm):")
print()
print("| command | median ms | × can-i |")
print("| --- | --- | --- |")
for name, m in rows.items():
    print(f"| {name} | {m * 1000:.2f} | {m / base:.2f} |")
PY
