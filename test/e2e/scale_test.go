//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scaleNamespaces is how many namespaces TestAccessAllNamespacesAtScale
// makes: 100 in make e2e, more with $KI_E2E_SCALE_NAMESPACES.
func scaleNamespaces() int {
	if n, err := strconv.Atoi(os.Getenv("KI_E2E_SCALE_NAMESPACES")); err == nil && n > 0 {
		return n
	}
	return 100
}

// TestAccessAllNamespacesAtScale: access -A over a cluster of N more
// namespaces (bindings to a user, a group and a service account, to Roles
// and ClusterRoles), as an admin asking about another identity (--as): the
// RBAC objects read once and evaluated here, counted in kube-apiserver's
// audit log from a cold discovery cache, at most 10 requests; one rules
// review per namespace (--rbac-objects=false) is the comparison, and every
// namespace's matrix is the same both ways (the RBAC differential compares
// the same with SubjectAccessReview).
func TestAccessAllNamespacesAtScale(t *testing.T) {
	api := st.api["legacy"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	n := scaleNamespaces()
	var m strings.Builder
	m.WriteString(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: scale-reader}
rules:
- {apiGroups: [""], resources: [configmaps, pods], verbs: [get, list, watch]}
- {apiGroups: [apps], resources: [deployments], verbs: [get], resourceNames: [web]}
`)
	for i := range n {
		ns := fmt.Sprintf("scale-ns-%04d", i)
		fmt.Fprintf(&m, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)
		fmt.Fprintf(&m, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: %s, labels: {scale: \"yes\"}}\n", ns)
		switch i % 3 {
		case 0:
			fmt.Fprintf(&m, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: reader, namespace: %s}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: scale-reader}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: scale-user}]\n", ns)
		case 1:
			fmt.Fprintf(&m, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: secrets, namespace: %s}\nrules: [{apiGroups: [\"\"], resources: [secrets], verbs: [get, delete]}]\n", ns)
			fmt.Fprintf(&m, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: secrets, namespace: %s}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: secrets}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: scale-group}]\n", ns)
		default:
			fmt.Fprintf(&m, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: builder, namespace: %s}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: scale-reader}\nsubjects: [{kind: ServiceAccount, name: builder, namespace: scale-ns-0000}]\n", ns)
		}
	}
	kubectlApply(t, admin, m.String())

	type matrix struct {
		diffMatrix
		Namespace string `json:"namespace"`
		RulesFrom string `json:"rulesFrom"`
	}
	access := func(as []string, extra ...string) (map[string]matrix, int, []string, time.Duration) {
		env := baseEnv(t.TempDir()) // a cold discovery cache
		var r result
		var elapsed time.Duration
		requests, uris := pluginRequests(t, api, func() {
			start := time.Now()
			r = run(t, env, false, append(append([]string{st.ki, "access", "-A", "-o", "json", "--max-reviews=0", "--kubeconfig=" + admin}, as...), extra...)...)
			elapsed = time.Since(start)
		})
		require.Equal(t, 0, r.code, r.stderr)
		var all []matrix
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &all))
		out := map[string]matrix{}
		for _, x := range all {
			out[x.Namespace] = x
		}
		return out, requests, uris, elapsed
	}
	for _, as := range [][]string{
		{"--as=scale-user"},
		{"--as=someone", "--as-group=scale-group"},
		{"--as=system:serviceaccount:scale-ns-0000:builder", "--as-group=system:serviceaccounts", "--as-group=system:serviceaccounts:scale-ns-0000"},
	} {
		local, localRequests, uris, localTime := access(as)
		perNS, perNSRequests, _, perNSTime := access(as, "--rbac-objects=false")
		t.Logf("%v over %d namespaces: from the RBAC objects %d requests (cold discovery included) in %s; one rules review per namespace %d requests in %s",
			as, len(local), localRequests, localTime.Round(time.Millisecond), perNSRequests, perNSTime.Round(time.Millisecond))
		assert.LessOrEqual(t, localRequests, 10, "%v: requests from the RBAC objects: %v", as, uris)
		assert.GreaterOrEqual(t, perNSRequests, len(local), "one rules review per namespace at least")
		assert.GreaterOrEqual(t, len(local), n)
		require.Equal(t, len(perNS), len(local))
		allowed := 0
		for ns, lm := range local {
			assert.Equal(t, "rbac-objects", lm.RulesFrom, ns)
			cells := cellsOf(lm.diffMatrix)
			assert.Equal(t, cellsOf(perNS[ns].diffMatrix), cells, "%v in %s: the same matrix both ways", as, ns)
			for _, a := range cells {
				if a {
					allowed++
				}
			}
		}
		assert.Positive(t, allowed, "%v holds something", as)
	}

	// The views that fit on a screen: a summary line per namespace, and
	// one row per namespace with --resource.
	env := baseEnv(t.TempDir())
	r := run(t, env, false, st.ki, "access", "-A", "--kubeconfig="+admin, "--as=scale-user")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	assert.Regexp(t, `^# \d+ namespaces; cells allowed`, r.stdout)
	assert.GreaterOrEqual(t, len(regexp.MustCompile(`(?m)^scale-ns-\d+ `).FindAllString(r.stdout, -1)), n, "a line per namespace")
	assert.Regexp(t, `(?m)^scale-ns-0000 +\d+ +configmaps\(get,list,watch\) deployments\.apps\(get\) pods\(get,list,watch\)$`, r.stdout, "deployments: some names only (~), held")
	assert.Regexp(t, `(?m)^scale-ns-0001 +\d+ +-$`, r.stdout)
	r = run(t, env, false, st.ki, "access", "-A", "--kubeconfig="+admin, "--as=scale-user", "--resource=cm", "--verb=get,delete")
	require.Equal(t, 0, r.code, r.stderr)
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	assert.Equal(t, "NAMESPACE", strings.Fields(rows[0])[0])
	assert.Regexp(t, `(?m)^scale-ns-0000 +configmaps +✔ +✗$`, r.stdout)
	assert.Regexp(t, `(?m)^scale-ns-0001 +configmaps +✗ +✗$`, r.stdout)
	t.Logf("access -A --resource=cm: %d rows; the summary: %d lines", len(rows)-1, len(lines))

	// list -A: the objects each identity (a user, a group, a service
	// account) may get across every namespace, the RBAC objects read once,
	// from a cold discovery cache in at most 9 requests besides the pages
	// of the object list (500 a page); the same objects by one rules
	// review per namespace, and kubectl auth can-i (a
	// SubjectAccessReview) agrees on a sample.
	list := func(as []string, extra ...string) (result, int, []string, time.Duration) {
		var r result
		var elapsed time.Duration
		requests, uris := pluginRequests(t, api, func() {
			start := time.Now()
			args := append([]string{st.ki, "list", "cm", "-A", "-l", "scale=yes", "-o", "json", "-v=1", "--kubeconfig=" + admin}, as...)
			r = run(t, baseEnv(t.TempDir()), false, append(args, extra...)...)
			elapsed = time.Since(start)
		})
		require.Equal(t, 0, r.code, r.stderr)
		return r, requests, uris, elapsed
	}
	objects := func(r result) []string {
		var l struct {
			Items []struct {
				Metadata struct{ Namespace, Name string }
			}
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &l))
		var out []string
		for _, it := range l.Items {
			out = append(out, it.Metadata.Namespace+"/"+it.Metadata.Name)
		}
		return out
	}
	everyThird := func(k int) int { return (n - k + 2) / 3 } // the i < n with i % 3 == k
	for _, tc := range []struct {
		as   []string
		kept int // the ConfigMaps it may get: those of its namespaces
	}{
		{as: []string{"--as=scale-user"}, kept: everyThird(0)},
		{as: []string{"--as=someone", "--as-group=scale-group"}, kept: 0}, // secrets only
		{as: []string{"--as=system:serviceaccount:scale-ns-0000:builder", "--as-group=system:serviceaccounts", "--as-group=system:serviceaccounts:scale-ns-0000"}, kept: everyThird(2)},
	} {
		listed, listRequests, listURIs, listTime := list(tc.as)
		perNSList, perNSListRequests, _, perNSListTime := list(tc.as, "--rbac-objects=false")
		pages := 0
		for _, u := range listURIs {
			if strings.HasPrefix(u, "/api/v1/configmaps?") {
				pages++
			}
		}
		assert.Equal(t, (n+499)/500, pages, "one list request per 500 objects")
		assert.LessOrEqual(t, listRequests, 9+pages, "%v: list -A from the RBAC objects: %v", tc.as, listURIs)
		assert.Contains(t, listed.stderr, fmt.Sprintf("(the rules of %d namespaces from them)", n), tc.as)
		kept := objects(listed)
		assert.Equal(t, objects(perNSList), kept, "%v: list -A, the same objects by one rules review per namespace", tc.as)
		assert.Len(t, kept, tc.kept, tc.as)
		assert.GreaterOrEqual(t, perNSListRequests, n, "one rules review per namespace at least")
		t.Logf("%v: list cm -A over %d namespaces: from the RBAC objects %d requests (cold discovery included, %d pages of objects) in %s; one rules review per namespace %d requests in %s",
			tc.as, n, listRequests, pages, listTime.Round(time.Millisecond), perNSListRequests, perNSListTime.Round(time.Millisecond))
	}
	// As the admin itself (system:masters): kube-apiserver allows it every
	// request before its configured chain, and no rules review lists that;
	// every object kept, as access reviews (--method=ssar) keep them.
	admins, adminRequests, adminURIs, _ := list(nil)
	assert.Len(t, objects(admins), n, "system:masters: every object")
	assert.LessOrEqual(t, adminRequests, 9+(n+499)/500, "system:masters from the RBAC objects path: %v", adminURIs)
	assert.NotContains(t, admins.stderr, "one rules review per namespace")
	bySSAR, _, _, _ := list(nil, "--method=ssar")
	assert.Equal(t, objects(bySSAR), objects(admins), "system:masters: the same objects by one access review each")

	listed, _, _, _ := list([]string{"--as=scale-user"})
	kept := objects(listed)
	for _, ns := range []string{"scale-ns-0000", "scale-ns-0001", "scale-ns-0002", fmt.Sprintf("scale-ns-%04d", n-1)} {
		r := run(t, baseEnv(t.TempDir()), false, st.kubectl, "--kubeconfig="+admin, "auth", "can-i", "get", "configmaps/web", "-n", ns, "--as=scale-user")
		assert.Equal(t, slices.Contains(kept, ns+"/web"), strings.TrimSpace(r.stdout) == "yes", "list -A and kubectl auth can-i in %s", ns)
	}
	assert.Contains(t, kept, "scale-ns-0000/web")

	// who-can -A --by-subject: where across the cluster each subject may
	// get configmaps, from a cold discovery cache in at most 6 requests;
	// kubectl auth can-i (a SubjectAccessReview) agrees in and out of them.
	var subjects []struct {
		Kind, Name, Namespace string
		ClusterWide           bool
		Namespaces            []string
	}
	requests, uris := pluginRequests(t, api, func() {
		r = run(t, baseEnv(t.TempDir()), false, st.ki, "who-can", "get", "cm", "-A", "--by-subject", "-o", "json", "--kubeconfig="+admin)
	})
	require.Equal(t, 0, r.code, r.stderr)
	assert.LessOrEqual(t, requests, 6, "who-can -A --by-subject: %v", uris)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &subjects))
	var userNS []string
	for _, sub := range subjects {
		if sub.Kind == "User" && sub.Name == "scale-user" {
			userNS = sub.Namespaces
		}
	}
	assert.Len(t, userNS, (n+2)/3, "scale-user's namespaces: every third")
	canI := func(ns string) bool {
		r := run(t, baseEnv(t.TempDir()), false, st.kubectl, "--kubeconfig="+admin, "auth", "can-i", "get", "configmaps", "-n", ns, "--as=scale-user")
		return strings.TrimSpace(r.stdout) == "yes"
	}
	for _, ns := range []string{"scale-ns-0000", "scale-ns-0003", "scale-ns-0001", "scale-ns-0002"} {
		assert.Equal(t, slices.Contains(userNS, ns), canI(ns), "who-can --by-subject and kubectl auth can-i in %s", ns)
	}
}
