#!/usr/bin/env bash
# make demo: a whole OIDC setup on this machine, for trying kubectl-impersonate
# without a provider of your own. It starts, on 127.0.0.1 with TLS:
#   etcd + kube-apiserver (1.37, trusting Dex through an AuthenticationConfiguration),
#   Dex (users alice and bob), and the impersonating proxy,
# writes a kubeconfig with the users alice (device code) and bob (browser), grants
# alice's group a Role in the namespace "demo", prints the commands to try, and
# stays up until Ctrl-C, then stops everything it started.
#
#   hack/demo.sh           interactive (make demo)
#   hack/demo.sh --check   runs the printed commands itself, a headless Chromium
#                          answering the device code, checks their output, stops
#
# The peers come from the end-to-end tests' caches (test/e2e/tools/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
check=false
[ "${1:-}" = "--check" ] && check=true

say() { echo "demo: $*" >&2; }
fail() { echo "demo: FAILED: $*" >&2; exit 1; }

# naming SIGNAL|list DIR: the processes whose command line names DIR, as a
# fixed string (pgrep and pkill take a regular expression, where DIR's "."
# matches anything and a "[" in $TMPDIR would be an error): "list" prints
# them, a signal is sent to them. An error of pgrep or pkill is the
# script's, not "none".
naming() {
  local pat rc=0
  pat=$(printf '%s' "$2" | sed 's/[][\.*^$+?(){}|]/\\&/g')
  if [ "$1" = list ]; then pgrep -af -- "$pat" || rc=$?; else pkill "-$1" -f -- "$pat" || rc=$?; fi
  [ "$rc" -le 1 ] || fail "pgrep/pkill failed (exit $rc) on the processes naming $2"
}

# --check-interrupt: Ctrl-C (SIGINT to the demo's process group, as a
# terminal sends it) while building, while kube-apiserver starts and once
# up: each run removes its directory and leaves no process. Each run gets
# a TMPDIR of its own, so what it left is what is found there.
if [ "${1:-}" = "--check-interrupt" ]; then
  # reap: whatever a run left, on any exit of this check (a failure
  # included): its process group, and every process naming its directory
  # (the demo's servers run in process groups of their own).
  pid="" tmp=""
  reap() {
    if [ -n "$pid" ]; then kill -KILL -- "-$pid" 2>/dev/null || true; fi
    if [ -n "$tmp" ]; then naming KILL "$tmp"; rm -rf "$tmp" "$tmp.log"; fi
  }
  trap reap EXIT
  for at in "building" "starting kube-apiserver" "running"; do
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/kubectl-impersonate-demo-interrupt.XXXXXX")
    log="$tmp.log"
    # In its own process group, with SIGINT's default action: a script's
    # background job starts with SIGINT ignored, which a terminal's
    # foreground job does not (and a shell cannot trap an ignored signal).
    TMPDIR="$tmp" python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.setsid(); os.execvp(sys.argv[1], sys.argv[1:])' \
      hack/demo.sh >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 9000); do # 15 minutes: a cold build
      grep -qx "demo: phase: $at" "$log" && break
      kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "the demo ended before \"$at\""; }
      sleep 0.1
    done
    grep -qx "demo: phase: $at" "$log" || fail "the demo did not reach \"$at\" within 15 minutes"
    kill -INT -- "-$pid"
    for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then fail "Ctrl-C while $at: the demo still runs after 60 s"; fi
    rc=0; wait "$pid" || rc=$?
    last=$(grep "^demo: phase: " "$log" | tail -1)
    [ "$last" = "demo: phase: $at" ] || fail "Ctrl-C meant for \"$at\" came at \"$last\""
    left_dirs=$(find "$tmp" -maxdepth 1 -name 'kubectl-impersonate-demo.*' | head -5)
    left_procs=$(naming list "$tmp")
    [ -z "$left_dirs" ] || fail "Ctrl-C while $at left $left_dirs"
    [ -z "$left_procs" ] || fail "Ctrl-C while $at left processes running: $left_procs"
    grep -q "stopped everything; nothing left running" "$log" || { cat "$log" >&2; fail "Ctrl-C while $at: the demo did not clean up"; }
    say "ok: Ctrl-C while $at (exit $rc): no directory, no process left"
    rm -rf "$tmp" "$log"
    pid="" tmp=""
  done
  exit 0
fi

command -v openssl >/dev/null || fail "openssl is missing (Debian: apt-get install openssl)"
if $check && ! command -v chromium >/dev/null; then
  fail "chromium is missing (Debian: apt-get install chromium)"
fi

# Everything the demo creates is under $demo, removed with every process it
# started on any exit: Ctrl-C or a failure while building, while starting
# the servers, or once up (hack/demo.sh --check-interrupt checks all three).
demo="$(mktemp -d "${TMPDIR:-/tmp}/kubectl-impersonate-demo.XXXXXX")"
chmod 700 "$demo"
pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for _ in $(seq 150); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  # Then whatever else names the demo's directory (a login's browser, which
  # the plugin starts to outlive the login): TERM, then KILL, each waited for.
  for sig in TERM KILL; do
    naming "$sig" "$demo"
    for _ in $(seq 50); do [ -n "$(naming list "$demo")" ] || break; sleep 0.1; done
  done
  left=$(naming list "$demo")
  rm -rf "$demo"
  if [ -n "$left" ]; then echo "demo: processes left running: $left" >&2; exit 1; fi
  say "stopped everything; nothing left running"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "phase: building"
say "building the peers (cached after the first time) and the plugin..."
# Only what the demo runs (no Helm), and kube-apiserver and etcd as
# installed when they are there at 1.37 and 3.6 ($KUBEBUILDER_ASSETS, as
# setup-envtest installs them, or PATH); build.sh says what is left to build
# and about how long.
tools="$(KI_E2E_PEERS="kube-apiserver kubectl dex etcd" KI_E2E_USE_INSTALLED=1 test/e2e/tools/build.sh 1.37)"
mkdir -p "$demo/bin" "$demo/logs"
# The plugin's four binaries, kubectl_complete-impersonate among them: what
# kubectl runs to complete "kubectl impersonate ...". Built as the release
# builds them (CGO_ENABLED=0, -trimpath: .goreleaser.yaml), which also
# reuses what make test's snapshot compiled before the demo.
CGO_ENABLED=0 go build -trimpath -o "$demo/bin/" ./cmd/kubectl-impersonate ./cmd/kubectl-impersonate-get_token ./cmd/kubectl-impersonate-apiserver ./cmd/kubectl_complete-impersonate
ln -s "$tools/kubectl" "$demo/bin/kubectl"
if $check; then go build -o "$demo/bin/e2e-browser" ./test/e2e/browser; fi
say "phase: starting"

# start NAME ARGV...: in its own process group, output to logs/NAME.log.
start() {
  local name="$1"; shift
  setsid "$@" >"$demo/logs/$name.log" 2>&1 &
  pids+=("$!")
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_ok() { # URL [curl args]: bounded, 60 s
  local url="$1"; shift
  for _ in $(seq 300); do
    if curl -fsS --cacert "$demo/ca.crt" "$@" "$url" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  fail "$url did not answer within 60 s (logs: $demo/logs)"
}

# Certificates: one CA, one serving certificate for 127.0.0.1, the service
# account key.
(
  cd "$demo"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=kubectl-impersonate demo CA" \
    -keyout ca.key -out ca.crt 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" -keyout serving.key -out serving.csr 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > ext.cnf
  openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile ext.cnf -out serving.crt 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  chmod 600 ./*.key
)

dex_port=$(free_port); api_port=$(free_port); proxy_port=$(free_port); etcd_port=$(free_port); peer_port=$(free_port)
issuer="https://127.0.0.1:$dex_port"
secret="$(openssl rand -hex 16)"
printf '%s\n' "$secret" > "$demo/alice-client.secret"; chmod 600 "$demo/alice-client.secret"
go build -o "$demo/bin/hashpw" ./hack/demo/hashpw
alice_hash="$("$demo/bin/hashpw" alice-password)"
bob_hash="$("$demo/bin/hashpw" bob-password)"
cat > "$demo/dex.yaml" <<EOF
issuer: $issuer
storage: {type: memory}
web: {https: 127.0.0.1:$dex_port, tlsCert: $demo/serving.crt, tlsKey: $demo/serving.key}
oauth2: {skipApprovalScreen: true}
expiry: {idTokens: 10m, deviceRequests: 5m}
enablePasswordDB: true
staticPasswords:
- {email: alice@example.com, hash: "$alice_hash", username: alice, userID: alice-id, groups: [developers]}
- {email: bob@example.com, hash: "$bob_hash", username: bob, userID: bob-id, groups: [guests]}
staticClients:
- {id: kubectl, name: "kubectl (people)", public: true}
- {id: kubectl-device, name: "kubectl (device code)", secret: "$secret", redirectURIs: [/device/callback]}
EOF
start dex "$tools/dex" serve "$demo/dex.yaml"
wait_ok "$issuer/.well-known/openid-configuration"

mkdir -p "$demo/etcd"
start etcd "$tools/etcd" --name=demo --data-dir="$demo/etcd" --unsafe-no-fsync \
  --listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
  --listen-peer-urls="http://127.0.0.1:$peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
  --initial-cluster="demo=http://127.0.0.1:$peer_port"
for _ in $(seq 150); do curl -fsS "http://127.0.0.1:$etcd_port/health" >/dev/null 2>&1 && break; sleep 0.2; done

admin_token="$(openssl rand -hex 16)"; proxy_token="$(openssl rand -hex 16)"
printf '%s,demo-admin,demo-admin,system:masters\n%s,demo-proxy,demo-proxy\n' "$admin_token" "$proxy_token" > "$demo/tokens.csv"
chmod 600 "$demo/tokens.csv"
ca_yaml="$(sed 's/^/      /' "$demo/ca.crt")"
cat > "$demo/authn.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: $issuer
    audiences: [kubectl, kubectl-device]
    audienceMatchPolicy: MatchAny
    certificateAuthority: |
$ca_yaml
  claimMappings:
    username: {claim: email, prefix: "oidc:"}
    groups: {claim: groups, prefix: "oidc:"}
EOF
say "phase: starting kube-apiserver"
start kube-apiserver "$tools/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
  --tls-cert-file="$demo/serving.crt" --tls-private-key-file="$demo/serving.key" --cert-dir="$demo/apiserver" \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$demo/sa.pub" \
  --service-account-signing-key-file="$demo/sa.key" --service-cluster-ip-range=10.96.0.0/24 \
  --authorization-mode=Node,RBAC --endpoint-reconciler-type=none --token-auth-file="$demo/tokens.csv" \
  --authentication-config="$demo/authn.yaml" --enable-priority-and-fairness=false --profiling=false
api="https://127.0.0.1:$api_port"
wait_ok "$api/readyz" -H "Authorization: Bearer $admin_token"

export PATH="$demo/bin:$PATH" KUBECONFIG="$demo/kubeconfig"
kubectl config set-cluster demo --server="$api" --certificate-authority="$demo/ca.crt" --embed-certs >/dev/null
kubectl config set-credentials admin --token="$admin_token" >/dev/null
kubectl config set-context admin --cluster=demo --user=admin >/dev/null
kubectl config set-context alice --cluster=demo --namespace=demo --user=nobody >/dev/null
kubectl config set-context bob --cluster=demo --namespace=demo --user=nobody >/dev/null
kubectl config use-context alice >/dev/null
chmod 600 "$KUBECONFIG"
kubectl --context=admin apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: demo}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: welcome, namespace: demo}
data: {hello: world}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: developer, namespace: demo}
rules:
- apiGroups: [""]
  resources: [pods, configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: developers, namespace: demo}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: developer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "oidc:developers"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: namespace-reader}
rules:
- apiGroups: [""]
  resources: [namespaces]
  verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: developers-list-namespaces}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: namespace-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "oidc:developers"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonator}
rules:
- apiGroups: [""]
  resources: [users, groups]
  verbs: [impersonate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: demo-proxy-impersonates}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: demo-proxy}
EOF

# Time-boxed elevation (docs/elevation.md): alice may ask for the role
# demo-editor in "demo" for up to an hour, bob approves, and the proxy
# (--sudo) enforces the grant.
kubectl --context=admin apply --server-side -f deploy/sudo/crds.yaml -f deploy/sudo/rbac.yaml >/dev/null
kubectl --context=admin wait --for=condition=established --timeout=60s crd/sudopolicies.sudo.kubectl-impersonate.io \
  crd/sudorequests.sudo.kubectl-impersonate.io crd/sudogrants.sudo.kubectl-impersonate.io >/dev/null
kubectl --context=admin apply --server-side -f deploy/sudo/admission.yaml -f deploy/proxy/rbac-sudo.yaml >/dev/null
kubectl --context=admin apply -f - >/dev/null <<EOF
apiVersion: sudo.kubectl-impersonate.io/v1alpha1
kind: SudoPolicy
metadata: {name: default, namespace: demo}
spec: {roles: [demo-editor], maxDurationSeconds: 3600}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-requesters, namespace: demo}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-requester.kubectl-impersonate.io}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "oidc:developers"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-approvers, namespace: demo}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-approver.kubectl-impersonate.io}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "oidc:bob@example.com"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: demo-editor, namespace: demo}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-demo-editor, namespace: demo}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: demo-editor}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "sudo:demo:demo-editor"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: demo-proxy-sudo}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kubectl-impersonate-proxy-sudo}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: demo-proxy}]
EOF

# The people: alice logs in with a device code (works over SSH), bob in a
# browser. Tokens are cached on disk inside the demo folder.
browser=()
if $check; then browser=(--browser-command="$demo/bin/e2e-browser"); fi
common=(--oidc-issuer-url="$issuer" --certificate-authority="$demo/ca.crt" --oidc-extra-scope=email
  --oidc-extra-scope=groups --oidc-extra-scope=offline_access --token-cache-storage=disk --token-cache-dir="$demo/cache")
alice_login=("${common[@]}" --oidc-client-id=kubectl-device --oidc-client-secret-file="$demo/alice-client.secret" --grant-type=device-code "${browser[@]}")
bob_login=("${common[@]}" --oidc-client-id=kubectl "${browser[@]}")
kubectl-impersonate setup --write --user=alice --context=alice "${alice_login[@]}" >/dev/null
kubectl-impersonate setup --write --user=bob --context=bob "${bob_login[@]}" >/dev/null

# The impersonating proxy in front of the same API server, with a
# credential that may only impersonate; the context alice-via-proxy uses it.
cat > "$demo/proxy.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: up, cluster: {server: "$api", certificate-authority: "$demo/ca.crt"}}]
users: [{name: proxy, user: {token: "$proxy_token"}}]
contexts: [{name: up, context: {cluster: up, user: proxy}}]
current-context: up
EOF
chmod 600 "$demo/proxy.kubeconfig"
start proxy "$demo/bin/kubectl-impersonate" proxy --listen="127.0.0.1:$proxy_port" \
  --tls-cert-file="$demo/serving.crt" --tls-private-key-file="$demo/serving.key" \
  --upstream-kubeconfig="$demo/proxy.kubeconfig" --authentication-config="$demo/authn.yaml" --sudo \
  --audit-log="$demo/logs/proxy-audit.log"
wait_ok "https://127.0.0.1:$proxy_port/readyz"
kubectl-impersonate setup --write --user=alice --context=alice-via-proxy --server="https://127.0.0.1:$proxy_port" \
  --cluster-certificate-authority="$demo/ca.crt" "${alice_login[@]}" >/dev/null
kubectl config set-context alice-via-proxy --namespace=demo >/dev/null

cat <<EOF

kubectl-impersonate demo is up (kube-apiserver 1.37 at $api, Dex at $issuer).
Users: alice / alice-password (group developers: may read pods and configmaps in "demo"),
       bob / bob-password (group guests: may read nothing). Dex's certificate is the demo's
       own CA ($demo/ca.crt): your browser will warn about it.

In another terminal:

  export PATH="$demo/bin:\$PATH" KUBECONFIG="$demo/kubeconfig"
  source <(kubectl completion bash)                  # zsh: source <(kubectl completion zsh)
  kubectl get pods                                   # as alice: prints a device code to enter at Dex
  kubectl get configmaps
  kubectl impersonate whoami
  kubectl impersonate claims --authentication-config=$demo/authn.yaml --compare
  kubectl impersonate access -n demo
  kubectl impersonate access -n <TAB>                # completes the namespaces alice may list
  kubectl impersonate why get po<TAB>                # and resources, from kubectl's discovery cache
  kubectl impersonate list configmaps -n demo
  kubectl impersonate who-can list configmaps -n demo --context=admin
  kubectl --context=bob get pods                     # as bob: a browser login, then Forbidden
  kubectl --context=alice-via-proxy get configmaps   # through the impersonating proxy

  # Time-boxed elevation: alice asks, bob approves, alice acts under the grant
  kubectl impersonate sudo request --role demo-editor --for 10m --reason "try sudo"
  kubectl impersonate sudo approve REQUEST --context=bob
  kubectl impersonate sudo --context=alice-via-proxy -- kubectl create configmap made-under-sudo
  kubectl impersonate sudo status

Logs: $demo/logs. Press Ctrl-C to stop everything.
EOF

say "phase: running"
if ! $check; then
  # wait returns on a signal at once (a foreground sleep would delay the trap).
  while true; do sleep 3600 & wait $!; done
fi

# --check: run the commands above and check what they print.
export E2E_CHROMIUM="$(command -v chromium)" E2E_USER=alice@example.com E2E_PASSWORD=alice-password
export E2E_BROWSER_LOG="$demo/logs/browser.log"
# The browser a login starts outlives it (as a person's does): each login
# below waits for it, and its Chromium profile is inside the demo's folder.
mkdir -p "$demo/tmp"
browser_done() { # WHOSE
  for _ in $(seq 900); do [ -n "$(naming list "$demo/bin/e2e-browser")" ] || return 0; sleep 0.1; done
  fail "$1's browser still runs 90 s after the login"
}
expect() { # WHAT PATTERN OUTPUT
  if ! grep -qE -- "$2" <<<"$3"; then fail "$1: expected /$2/ in: $3"; fi
  say "ok: $1"
}
out=$(TMPDIR="$demo/tmp" kubectl-impersonate login "${alice_login[@]}" 2>&1) || fail "alice's device-code login: $out"
browser_done alice
expect "alice logs in with a device code" "enter the code" "$out"
out=$(kubectl get pods 2>&1) || fail "kubectl get pods: $out"
expect "kubectl get pods as alice" "No resources found in demo namespace" "$out"
out=$(kubectl get configmaps 2>&1) || fail "kubectl get configmaps: $out"
expect "kubectl get configmaps as alice" "welcome" "$out"
# TAB, as the printed set-up gives it: kubectl's completion asks
# kubectl_complete-impersonate in the demo's bin/ (kubectl __complete is
# what "source <(kubectl completion bash)" runs on TAB).
out=$(kubectl __complete impersonate access -n "" 2>&1) || fail "completing access -n: $out"
expect "TAB after access -n offers the demo's namespaces" $'^demo(\t|$)' "$out"
out=$(kubectl __complete impersonate why get po 2>&1) || fail "completing why get po: $out"
expect "TAB after why get po offers pods" $'^pods(\t|$)' "$out"
out=$(kubectl impersonate whoami 2>&1) || fail "whoami: $out"
expect "whoami" "oidc:alice@example.com" "$out"
expect "whoami groups" "oidc:developers" "$out"
out=$(kubectl impersonate claims --authentication-config="$demo/authn.yaml" --compare 2>&1) || fail "claims --compare: $out"
expect "claims verified" "verified against the trusted issuer's keys" "$out"
expect "claims agrees with the API server" "differences +none" "$out"
out=$(kubectl impersonate access -n demo 2>&1) || fail "access: $out"
expect "access" "configmaps" "$out"
out=$(kubectl impersonate list configmaps -n demo 2>&1) || fail "list: $out"
expect "list" "welcome" "$out"
out=$(kubectl impersonate who-can list configmaps -n demo --context=admin 2>&1) || fail "who-can: $out"
expect "who-can" "oidc:developers" "$out"
out=$(kubectl --context=alice-via-proxy get configmaps 2>&1) || fail "through the proxy: $out"
expect "kubectl through the proxy" "welcome" "$out"
out=$(TMPDIR="$demo/tmp" E2E_USER=bob@example.com E2E_PASSWORD=bob-password kubectl-impersonate login "${bob_login[@]}" 2>&1) || fail "bob's browser login: $out"
browser_done bob
out=$(kubectl --context=bob get pods 2>&1) && fail "bob may list pods: $out"
expect "bob is Forbidden" 'User "oidc:bob@example.com" cannot list resource "pods"' "$out"
out=$(kubectl impersonate sudo request --role demo-editor --for 10m --reason "try sudo" 2>&1) || fail "sudo request: $out"
expect "alice asks for demo-editor" "sudorequest/sudo-[a-z0-9]+ created in demo: demo-editor for 10m0s" "$out"
request=$(sed -n 's|^sudorequest/\(sudo-[a-z0-9]*\) created.*|\1|p' <<<"$out")
out=$(kubectl --context=alice-via-proxy create configmap made-under-sudo 2>&1) && fail "alice may create: $out"
expect "without the grant alice may not create" 'cannot create resource "configmaps"' "$out"
out=$(kubectl impersonate sudo approve "$request" --context=bob 2>&1) || fail "bob's approval: $out"
expect "bob approves" "sudogrant/$request created in demo: oidc:alice@example.com holds demo-editor until" "$out"
out=""
for _ in $(seq 50); do # the proxy sees the grant within a second or two
  out=$(kubectl impersonate sudo --context=alice-via-proxy -- kubectl create configmap made-under-sudo 2>&1) && break
  sleep 0.2
done
expect "alice creates under the grant, through the proxy" "configmap/made-under-sudo created" "$out"
out=$(kubectl impersonate sudo status 2>&1) || fail "sudo status: $out"
expect "sudo status" "$request +demo-editor +oidc:bob@example.com" "$out"
say "all checks passed"
