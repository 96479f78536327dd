#!/usr/bin/env bash
# Benchmarks an inspection command against kubectl's own and rakkess's:
# "kubectl-impersonate access -n NS" (the full binary: start-up, discovery,
# the rules review) against "kubectl auth can-i --list -n NS" (the pinned
# kubectl, its discovery cache warm) and "rakkess --namespace NS" (v0.5.1,
# built from the module proxy through test/bench/rakkess: one
# SelfSubjectAccessReview per resource and verb), all as a user bound to one
# Role, on a local kube-apiserver + etcd (the end-to-end suite's pinned
# peers, static tokens, 127.0.0.1 only). Prints one Markdown table of
# hyperfine medians; everything it starts, it stops.
#
# Then the same cluster with NAMESPACES more namespaces (default 1000; a
# ConfigMap in each, a RoleBinding in every third for alice's group, a Role
# and binding in every other): access -A about alice as the admin (--as),
# from the RBAC objects (the summary, and -o json) and with one rules review
# per namespace (--rbac-objects=false, -o json), list cm -A (the ConfigMaps
# alice may get) both ways, who-can -A --by-subject, and, run once each as
# loops over the namespaces, kubectl auth can-i --list and rakkess, each run
# after a cold discovery cache, into a second table. The request counts are
# asserted by test/e2e TestAccessAllNamespacesAtScale.
#
# Usage: hack/bench-inspect.sh [RUNS]   (default 100; NAMESPACES=N, SCALE_RUNS=N)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-100}"
NAMESPACES="${NAMESPACES:-1000}"
SCALE_RUNS="${SCALE_RUNS:-5}"
command -v hyperfine >/dev/null || { echo "bench-inspect: install hyperfine (Debian package)" >&2; exit 1; }
command -v openssl >/dev/null || { echo "bench-inspect: install openssl (Debian package)" >&2; exit 1; }
NAME=bench-inspect
TOKENS=$'bench-admin-token,admin,admin-uid,system:masters\nbench-alice-token,alice,alice-uid,dev'
# rakkess, built once per version from the module proxy (as the e2e peers).
rakkess_version="$(grep -Eo 'github.com/corneliusweig/rakkess v[^ ]+' test/bench/rakkess/go.mod | awk '{print $2}')"
rakkess="${KI_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-impersonate-e2e}/rakkess-$rakkess_version-$(go env GOVERSION)/rakkess"
if [ ! -x "$rakkess" ]; then
  echo "bench-inspect: building rakkess $rakkess_version from the Go module proxy (once)" >&2
  mkdir -p "$(dirname "$rakkess")"
  (cd test/bench/rakkess && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags '-s -w' -o "$rakkess.tmp" github.com/corneliusweig/rakkess)
  mv "$rakkess.tmp" "$rakkess"
fi
# shellcheck source=hack/lib-apiserver.sh
. hack/lib-apiserver.sh
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" create namespace team-a >/dev/null
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" -n team-a create role dev --verb=get,list,watch --resource=pods,configmaps,deployments.apps >/dev/null
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" -n team-a create rolebinding dev --role=dev --group=dev >/dev/null

export HOME="$work/home"
mkdir -p "$HOME"
can_i="$tools/kubectl --kubeconfig=$work/alice.kubeconfig auth can-i --list -n team-a"
access="$work/kubectl-impersonate access -n team-a --kubeconfig=$work/alice.kubeconfig"
rakkess_ns="$rakkess --namespace team-a --kubeconfig=$work/alice.kubeconfig"
# All answer (and kubectl's discovery cache is warm) before timing.
$can_i >/dev/null
$access >/dev/null
$rakkess_ns >/dev/null 2>&1
hyperfine -N --style none --warmup 5 --runs "$RUNS" --export-json "$work/inspect.json" \
  -n "kubectl auth can-i --list -n NS" "$can_i" -n "kubectl impersonate access -n NS" "$access" \
  -n "rakkess --namespace NS" "$rakkess_ns" >/dev/null
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

# Inspection at scale.
python3 - "$NAMESPACES" > "$work/scale.yaml" <<'PY'
import sys
n = int(sys.argv[1])
docs = ["apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: scale-reader}\nrules:\n- {apiGroups: [\"\"], resources: [configmaps, pods], verbs: [get, list, watch]}\n"]
for i in range(n):
    ns = f"scale-{i:04d}"
    docs.append(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n")
    docs.append(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: web, namespace: {ns}}}\n")
    if i % 3 == 0:
        docs.append(f"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: reader, namespace: {ns}}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: scale-reader}}\nsubjects: [{{apiGroup: rbac.authorization.k8s.io, kind: Group, name: dev}}]\n")
    if i % 2 == 0:
        docs.append(f"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: secrets, namespace: {ns}}}\nrules: [{{apiGroups: [\"\"], resources: [secrets], verbs: [get]}}]\n")
        docs.append(f"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: secrets, namespace: {ns}}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: secrets}}\nsubjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: ops}}]\n")
print("---\n".join(docs))
PY
echo "bench-inspect: creating $NAMESPACES namespaces" >&2
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" apply --server-side -f "$work/scale.yaml" >/dev/null
admin="--kubeconfig=$work/admin.kubeconfig"
cold="rm -rf $HOME/.kube/cache"
summary="$work/kubectl-impersonate access -A $admin --as=alice --as-group=dev"
local_a="$summary -o json"
per_ns="$local_a --rbac-objects=false"
list_a="$work/kubectl-impersonate list cm -A $admin --as=alice --as-group=dev"
who_can="$work/kubectl-impersonate who-can get configmaps -A --by-subject $admin"
namespaces="\$($tools/kubectl $admin get ns -o name | cut -d/ -f2)"
can_i_loop="bash -c 'for ns in $namespaces; do $tools/kubectl $admin auth can-i --list -n \$ns --as=alice --as-group=dev >/dev/null; done'"
rakkess_loop="bash -c 'for ns in $namespaces; do $rakkess $admin --namespace \$ns --as=alice --as-group=dev >/dev/null 2>&1; done'"
# list -A keeps the same ConfigMaps both ways (-o json: the table has ages).
[ "$($list_a -o json)" = "$($list_a -o json --rbac-objects=false)" ] || { echo "bench-inspect: list -A differs between the RBAC objects and the rules reviews" >&2; exit 1; }
hyperfine --style none --runs "$SCALE_RUNS" --prepare "$cold" --export-json "$work/scale.json" \
  -n "access -A (RBAC objects, the summary)" "$summary" -n "access -A -o json (RBAC objects)" "$local_a" \
  -n "access -A -o json (one rules review per namespace)" "$per_ns" \
  -n "list cm -A (RBAC objects)" "$list_a" -n "list cm -A (one rules review per namespace)" "$list_a --rbac-objects=false" \
  -n "who-can -A --by-subject" "$who_can" >/dev/null
hyperfine --style none --runs 1 --export-json "$work/can-i.json" -n "kubectl auth can-i --list, per namespace" "$can_i_loop" \
  -n "rakkess --namespace, per namespace" "$rakkess_loop" >/dev/null
python3 - "$work/scale.json" "$work/can-i.json" "$NAMESPACES" <<'PY'
import json, sys
rows = []
for f in sys.argv[1:3]:
    rows += json.load(open(f))["results"]
base = {k: next(r["median"] for r in rows if r["command"] == k + " (one rules review per namespace)")
        for k in ("access -A -o json", "list cm -A")}
print()
print(f"With {sys.argv[3]} more namespaces, about another identity (--as) as an admin, each run after a cold discovery cache (hyperfine medians; × rules reviews: against access -A -o json with one rules review per namespace, the list rows against list cm -A with one):")
print()
print("| command | median ms | × rules reviews |")
print("| --- | --- | --- |")
for r in rows:
    b = base["list cm -A"] if r["command"].startswith("list") else base["access -A -o json"]
    print(f"| {r['command']} | {r['median'] * 1000:.0f} | {r['median'] / b:.2f} |")
PY

# The same commands against the cluster 50 ms away: test/bench/latency, a
# TCP proxy on 127.0.0.1 that delays every chunk 25 ms each way (TLS passes
# through), in front of the API server.
go build -o "$work/latency" ./test/bench/latency
"$work/latency" -target "127.0.0.1:$api_port" -delay 25ms > "$work/latency.addr" &
pids+=($!)
for _ in $(seq 50); do [ -s "$work/latency.addr" ] && break; sleep 0.1; done
far_addr="$(cat "$work/latency.addr")"
[ -n "$far_addr" ] || { echo "bench-inspect: the latency proxy did not start" >&2; exit 1; }
sed "s|127.0.0.1:$api_port|$far_addr|" "$work/admin.kubeconfig" > "$work/far.kubeconfig"
far="--kubeconfig=$work/far.kubeconfig --as=alice --as-group=dev"
hyperfine --style none --runs "$SCALE_RUNS" --prepare "$cold" --export-json "$work/far.json" \
  -n "access -A (RBAC objects)" "$work/kubectl-impersonate access -A $far" \
  -n "access -A (one rules review per namespace)" "$work/kubectl-impersonate access -A $far --rbac-objects=false" \
  -n "list cm -A (RBAC objects)" "$work/kubectl-impersonate list cm -A $far" \
  -n "list cm -A (one rules review per namespace)" "$work/kubectl-impersonate list cm -A $far --rbac-objects=false" >/dev/null
python3 - "$work/far.json" "$NAMESPACES" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
base = {r["command"].split(" (")[0]: r["median"] for r in rows if "one rules review" in r["command"]}
print()
print(f"The same cluster 50 ms away (a proxy adding 25 ms each way), the summaries (hyperfine medians; × the same command with one rules review per namespace):")
print()
print("| command | median ms | × rules reviews |")
print("| --- | --- | --- |")
for r in rows:
    print(f"| {r['command']} | {r['median'] * 1000:.0f} | {r['median'] / base[r['command'].split(' (')[0]]:.2f} |")
PY
