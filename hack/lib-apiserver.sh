# Sourced by hack/bench-inspect.sh and hack/soak.sh: a local kube-apiserver
# 1.37 + etcd (the end-to-end suite's pinned peers) on 127.0.0.1 with static
# tokens, stopped (API server first, then etcd, 10 s each before SIGKILL)
# and its folder removed on exit. Set NAME (log prefix) and TOKENS (lines of
# kube-apiserver's --token-auth-file, the first user admin) before sourcing;
# it sets tools, work, api_port and writes $work/USER.kubeconfig for each
# token's user (kubeconfig USER TOKEN writes more), and builds the three
# binaries into $work.
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
echo "$NAME: building into $work" >&2
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/" ./cmd/kubectl-impersonate ./cmd/kubectl-impersonate-get_token ./cmd/kubectl-impersonate-apiserver

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
openssl rsa -in "$work/sa.key" -pubout -out "$work/sa.pub" 2>/dev/null
printf '%s\n' "$TOKENS" > "$work/tokens.csv"
etcd_port=$(free_port); peer_port=$(free_port); api_port=$(free_port)
"$tools/etcd" --name=local --data-dir="$work/etcd" --unsafe-no-fsync \
  --listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
  --listen-peer-urls="http://127.0.0.1:$peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
  --initial-cluster="local=http://127.0.0.1:$peer_port" >"$work/etcd.log" 2>&1 &
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
- name: local
  cluster: {server: "https://127.0.0.1:$api_port", certificate-authority: "$work/tls.crt"}
users:
- name: $1
  user: {token: $2}
contexts:
- name: local
  context: {cluster: local, user: $1, namespace: team-a}
current-context: local
EOF
}
while IFS=, read -r token user _; do kubeconfig "$user" "$token"; done < "$work/tokens.csv"
ready=""
for _ in $(seq 300); do
  if "$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" get --raw=/readyz >/dev/null 2>&1; then ready=1; break; fi
  sleep 0.2
done
[ -n "$ready" ] || { echo "$NAME: kube-apiserver did not become ready:" >&2; tail -5 "$work/apiserver.log" >&2; exit 1; }
