#!/usr/bin/env bash
# The proxy's soak (make soak; not in make test): hack/soak's driver against
# two proxy replicas in front of a local kube-apiserver 1.37 + etcd
# (hack/lib-apiserver.sh), for SOAK_DURATION (default 10m; 60s is the short
# form). kube-apiserver is restarted at 4/5 of a run of 3 minutes or more
# (hack/lib-apiserver.sh's apiserver.sh). The proxy's credential may only
# impersonate; the 20 users (group
# soak) may read team-a's pods and configmaps. Writes the report into
# docs/proxy.md between its soak markers unless SOAK_WRITE=0, and fails as
# the driver does (any error but a retried restart cut, RSS growth beyond
# the bound, an answer under a sudo grant that disagrees with its end).
# Everything it starts, it stops.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v openssl >/dev/null || { echo "soak: install openssl (Debian package)" >&2; exit 1; }
NAME=soak
TOKENS=$'soak-admin-token,admin,admin-uid,system:masters\nsoak-proxy-token,soak-proxy,proxy-uid,'
# shellcheck source=hack/lib-apiserver.sh
. hack/lib-apiserver.sh
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: soak, namespace: team-a}
data: {hello: world}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: soak-impersonator}
rules:
- {apiGroups: [""], resources: [users, groups], verbs: [impersonate]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: soak-proxy}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: soak-impersonator}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: soak-proxy}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: soak-reader, namespace: team-a}
rules:
- {apiGroups: [""], resources: [pods, configmaps], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: soak-readers, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: soak-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: soak}]
YAML
# Time-boxed elevation (docs/elevation.md): the kinds and their admission,
# the proxy's right to watch grants and set their extras, and in team-a a
# policy allowing soak-secrets (reading Secrets), which the elevation
# group holds.
k() { "$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" "$@"; }
k apply --server-side -f deploy/sudo/crds.yaml -f deploy/sudo/rbac.yaml >/dev/null
k wait --for=condition=established --timeout=60s crd/sudopolicies.sudo.kubectl-impersonate.io \
  crd/sudorequests.sudo.kubectl-impersonate.io crd/sudogrants.sudo.kubectl-impersonate.io >/dev/null
k apply --server-side -f deploy/sudo/admission.yaml -f deploy/proxy/rbac-sudo.yaml >/dev/null
k apply -f - >/dev/null <<'YAML'
apiVersion: sudo.kubectl-impersonate.io/v1alpha1
kind: SudoPolicy
metadata: {name: default, namespace: team-a}
spec: {roles: [soak-secrets], maxDurationSeconds: 3600}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: soak-secrets, namespace: team-a}
rules:
- {apiGroups: [""], resources: [secrets], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-soak-secrets, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: soak-secrets}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "sudo:team-a:soak-secrets"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-requesters, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-requester.kubectl-impersonate.io}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: soak-0@example.com}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: soak-proxy-sudo}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kubectl-impersonate-proxy-sudo}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: soak-proxy}]
YAML
# The policy's admission takes its parameter from the cache: wait until a
# request is judged by it (one made for nobody is refused).
for _ in $(seq 100); do
  if ! k create --dry-run=server -f - >/dev/null 2>&1 <<'YAML'
apiVersion: sudo.kubectl-impersonate.io/v1alpha1
kind: SudoRequest
metadata: {name: probe, namespace: team-a}
spec: {requester: nobody, role: soak-secrets, durationSeconds: 60, reason: probe}
YAML
  then break; fi
  sleep 0.2
done
duration="${SOAK_DURATION:-10m}"
echo "soak: $duration, the report every 10 s at the end" >&2
go build -o "$work/soak" ./hack/soak
rc=0
# In the background, so that the exit trap stops it (and it its replicas)
# first, however the script ends.
"$work/soak" -bin "$work/kubectl-impersonate-apiserver" -upstream-kubeconfig "$work/soak-proxy.kubeconfig" \
  -tls-cert-file "$work/tls.crt" -tls-private-key-file "$work/tls.key" -ca "$work/tls.crt" \
  -api "https://127.0.0.1:$api_port" -admin-token soak-admin-token -duration "$duration" -out "$work/soak.md" \
  -restart-apiserver "$work/apiserver.sh" &
pids+=($!)
wait "$!" || rc=$?
if [ "${SOAK_WRITE:-1}" = 1 ] && [ -s "$work/soak.md" ]; then
  python3 - docs/proxy.md "$work/soak.md" <<'PY'
import re, sys
doc, report = open(sys.argv[1]).read(), open(sys.argv[2]).read()
begin, end = "<!-- soak: begin (hack/soak.sh writes this) -->", "<!-- soak: end -->"
if begin not in doc or end not in doc:
    sys.exit("soak: docs/proxy.md has no soak markers")
head, rest = doc.split(begin, 1)
_, tail = rest.split(end, 1)
open(sys.argv[1], "w").write(head + begin + "\n" + report.rstrip("\n") + "\n" + end + tail)
PY
  echo "soak: the report is in docs/proxy.md" >&2
fi
exit "$rc"
