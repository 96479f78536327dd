# Sourced by hack/bench-inspect.sh and hack/soak.sh: a local kube-apiserver
# 1.37 + etcd (the end-to-end suite's pinned peers) on 127.0.0.1 with static
# tokens, stopped (API server first, then etcd, 10 s each before SIGKILL)
# and its folder removed on exit. Set NAME (log prefix) and TOKENS (lines of
# kube-apiserver's --token-auth-file, the first user admin) before sourcing;
# it sets tools, work, api_port and writes $work/USER.kubeconfig for each
# token's user (kubeconfig USER TOKEN writes more), and builds the three
# binaries into $work. kube-apiserver runs from $work/apiserver.sh, which
# (re)starts it: it stops the one running (10 s before SIGKILL), starts a
# new one on the same port and etcd, and returns once it is ready (the
# soak's driver restarts it so).
tools="$(test/e2e/tools/build.sh 1.37)"
work="$(mktemp -d)"
pids=()
# alive PID: the process runs (a zombie, dead and not yet reaped, does not).
alive() { [ -r "/proc/$1/stat" ] && ! grep -qE '^[0-9]+ \(.*\) Z' "/proc/$1/stat"; }
# Stops what pids lists, the last started first (where "apiserver" stands,
# the kube-apiserver apiserver.sh started last), each given 10 s before
# SIGKILL.
stop_all() {
  local i pid
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid=${pids[i]}
    if [ "$pid" = apiserver ]; then pid=$(cat "$work/apiserver.pid" 2>/dev/null) || continue; fi
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
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
# kube-apiserver's (re)start; its variables expanded now, its own escaped.
cat > "$work/apiserver.sh" <<EOF
#!/usr/bin/env bash
# (Re)starts kube-apiserver; returns once it is ready.
set -uo pipefail
$(declare -f alive)
if pid=\$(cat "$work/apiserver.pid" 2>/dev/null); then
  kill "\$pid" 2>/dev/null
  for _ in \$(seq 100); do alive "\$pid" || break; sleep 0.1; done
  kill -KILL "\$pid" 2>/dev/null
fi
"$tools/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
  --secure-port="$api_port" --tls-cert-file="$work/tls.crt" --tls-private-key-file="$work/tls.key" --cert-dir="$work/certs" \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$work/sa.pub" \
  --service-account-signing-key-file="$work/sa.key" --service-cluster-ip-range=10.96.0.0/24 \
  --authorization-mode=Node,RBAC --endpoint-reconciler-type=none --token-auth-file="$work/tokens.csv" \
  --enable-priority-and-fairness=false --profiling=false >>"$work/apiserver.log" 2>&1 &
echo \$! > "$work/apiserver.pid"
for _ in \$(seq 300); do
  "$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" get --raw=/readyz >/dev/null 2>&1 && exit 0
  sleep 0.2
done
echo "kube-apiserver did not become ready:" >&2
tail -5 "$work/apiserver.log" >&2
exit 1
EOF
chmod +x "$work/apiserver.sh"
pids+=(apiserver)
"$work/apiserver.sh" || { echo "$NAME: kube-apiserver did not start" >&2; exit 1; }
