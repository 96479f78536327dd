package privilege

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
)

// least-privilege --sudo-role proposes the role of a sudo request: the
// one namespace's Role (what the cluster allowed there, nothing it
// refused), bound to the group a grant of it carries, and the request;
// what was used elsewhere is listed, not granted. A recording across
// namespaces needs -n; flags it replaces are refused.
func TestLeastPrivilegeSudoRole(t *testing.T) {
	file, key := recording(t,
		auditlog.Request{Verb: "get", Resource: "deployments", APIGroup: "apps", Namespace: "payments", Name: "checkout",
			Code: 200, Decision: auditlog.Allow},
		auditlog.Request{Verb: "patch", Resource: "deployments", APIGroup: "apps", Namespace: "payments",
			Name: "checkout", Code: 200, Decision: auditlog.Allow},
		auditlog.Request{Verb: "delete", Resource: "secrets", Namespace: "payments", Name: "db", Code: 403,
			Decision: auditlog.Forbid},
		auditlog.Request{Verb: "get", Resource: "nodes", Name: "n1", Code: 200, Decision: auditlog.Allow},
	)
	twoNS, twoKey := recording(t,
		auditlog.Request{Verb: "list", Resource: "pods", Namespace: "payments", Code: 200, Decision: auditlog.Allow},
		auditlog.Request{Verb: "list", Resource: "pods", Namespace: "checkout", Code: 200, Decision: auditlog.Allow},
	)
	run := func(args ...string) (string, string, error) {
		t.Helper()
		s, out, errOut := streams()
		cmd := NewCmdLeastPrivilege(&cmdutil.GlobalOptions{Getenv: func(string) string { return "" }}, s)
		cmd.SetArgs(append([]string{"--held=false"}, args...))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		return out.String(), errOut.String(), err
	}

	out, _, err := run("--from", file, "--recording-key", key, "--sudo-role", "hotfix")
	require.NoError(t, err)
	assert.Contains(t, out, "# not in the role: 1 cell at cluster scope or in other namespaces (a grant elevates "+
		"requests in payments only; the others go as yourself)\n")
	assert.Contains(t, out, "add hotfix to spec.roles of the SudoPolicy in payments, then ask: kubectl impersonate "+
		"sudo request -n payments --role hotfix --for 30m --reason TEXT\n")
	docs := strings.Split(out, "---\n")
	require.Len(t, docs, 2, "the Role and its RoleBinding, no ClusterRole: %s", out)
	var role rbacv1.Role
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0][strings.Index(docs[0], "apiVersion"):]), &role))
	assert.Equal(t, []string{"Role", "payments", "hotfix"}, []string{role.Kind, role.Namespace, role.Name})
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"},
		ResourceNames: []string{"checkout"}, Verbs: []string{"get", "patch"}}}, role.Rules,
		"what the cluster allowed, not the refused delete")
	var binding rbacv1.RoleBinding
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &binding))
	assert.Equal(t, []string{"RoleBinding", "payments", "hotfix"}, []string{binding.Kind, binding.Namespace,
		binding.Name})
	assert.Equal(t, []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "sudo:payments:hotfix"}},
		binding.Subjects)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "hotfix"}, binding.RoleRef)

	out, _, err = run("--from", file, "--recording-key", key, "--sudo-role", "hotfix", "-o", "jsonpath={.sudo}")
	require.NoError(t, err)
	var p SudoProposal
	require.NoError(t, json.Unmarshal([]byte(out), &p))
	assert.Equal(t, "sudo:payments:hotfix", p.Group)
	require.Len(t, p.LeftOut, 1)
	assert.Equal(t, "nodes", p.LeftOut[0].Resource)

	out, _, err = run("--from", twoNS, "--recording-key", twoKey, "--sudo-role", "reader", "-n", "checkout")
	require.NoError(t, err)
	assert.Contains(t, out, "namespace: checkout")
	assert.NotContains(t, out, "namespace: payments")

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", twoNS, "--recording-key", twoKey, "--sudo-role", "reader"},
			"the recording used 2 namespaces (checkout, payments) and a sudo grant is for one: choose it with -n"},
		{[]string{"--from", twoNS, "--recording-key", twoKey, "--sudo-role", "reader", "-n", "web"},
			"the recording used nothing in namespace web the cluster allowed (it used checkout, payments)"},
		{[]string{"--from", file, "--sudo-role", "hotfix", "--subject", "User:x"}, "leave out --subject"},
		{[]string{"--from", file, "--sudo-role", "hotfix", "--name", "x"}, "leave out --name"},
		{[]string{"--from", file, "--sudo-role", "a/b"}, `--sudo-role "a/b" is not a Role name`},
		{[]string{"--from", file, "--sudo-role", "a:b"}, `--sudo-role "a:b" is not a Role name`},
		{[]string{"--from", file, "--sudo-role", ".."}, `--sudo-role ".." is not a Role name`},
	} {
		out, _, err := run(tt.args...)
		assert.ErrorContains(t, err, tt.want, "%v", tt.args)
		assert.Empty(t, out, "%v: nothing printed", tt.args)
	}
	// Roles and bindings written stay out: admission refuses them under a
	// grant (a binding made would outlive it: risk.WritesGrants); reading
	// and deleting them stay in, as admission lets them through.
	rbacUse, rbacKey := recording(t,
		auditlog.Request{Verb: "list", Resource: "rolebindings", APIGroup: "rbac.authorization.k8s.io",
			Namespace: "payments", Code: 200, Decision: auditlog.Allow},
		auditlog.Request{Verb: "create", Resource: "rolebindings", APIGroup: "rbac.authorization.k8s.io",
			Namespace: "payments", Name: "keep", Code: 201, Decision: auditlog.Allow},
		auditlog.Request{Verb: "delete", Resource: "rolebindings", APIGroup: "rbac.authorization.k8s.io",
			Namespace: "payments", Name: "old", Code: 200, Decision: auditlog.Allow},
		auditlog.Request{Verb: "get", Resource: "configmaps", Namespace: "payments", Name: "web", Code: 200,
			Decision: auditlog.Allow},
	)
	out, _, err = run("--from", rbacUse, "--recording-key", rbacKey, "--sudo-role", "fix it")
	require.NoError(t, err)
	assert.Contains(t, out, "# not in the role: 1 cell writing roles or bindings (deploy/sudo's admission refuses them "+
		"under a grant: a binding would outlive it)\n")
	assert.Contains(t, out, "then ask: kubectl impersonate sudo request -n payments --role 'fix it' --for 30m")
	assert.NotContains(t, out, "create", "no RBAC write in the Role, nor its risk above it")
	docs = strings.Split(out, "---\n")
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0][strings.Index(docs[0], "apiVersion"):]), &role))
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"web"}, Verbs: []string{"get"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: []string{"list"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, ResourceNames: []string{"old"},
			Verbs: []string{"delete"}},
	}, role.Rules)
	onlyWrites, onlyKey := recording(t, auditlog.Request{Verb: "create", Resource: "rolebindings",
		APIGroup: "rbac.authorization.k8s.io", Namespace: "payments", Name: "keep", Code: 201, Decision: auditlog.Allow})
	_, _, err = run("--from", onlyWrites, "--recording-key", onlyKey, "--sudo-role", "x")
	assert.ErrorContains(t, err, "writes roles or bindings only, which a sudo grant may not")

	// A recording with nothing allowed in a namespace proposes nothing.
	nodes, nodesKey := recording(t,
		auditlog.Request{Verb: "get", Resource: "nodes", Name: "n1", Code: 200, Decision: auditlog.Allow})
	_, _, err = run("--from", nodes, "--recording-key", nodesKey, "--sudo-role", "x")
	assert.ErrorContains(t, err, "the recording used nothing in a namespace the cluster allowed")
}
