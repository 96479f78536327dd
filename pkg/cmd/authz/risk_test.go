package authz

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbacgraph"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rolegen"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
)

// riskFixture is every escalation path Kubernetes names ("Role Based
// Access Control Good Practices", privilege escalation risks) and issue
// 56's list, with what is no risk: VERB RESOURCE[.GROUP][/SUBRESOURCE],
// the kind expected ("" for none) and a phrase of its why.
var riskFixture = []struct {
	verb, resource string
	kind           risk.Kind
	phrase         string
}{
	{"create", "pods", risk.Workload, "any service account of its namespace"},
	{"create", "deployments.apps", risk.Workload, "any service account of its namespace"},
	{"patch", "daemonsets.apps", risk.Workload, "any service account of its namespace"},
	{"create", "jobs.batch", risk.Workload, "any service account of its namespace"},
	{"update", "cronjobs.batch", risk.Workload, "any service account of its namespace"},
	{"create", "replicationcontrollers", risk.Workload, "any service account of its namespace"},
	{"patch", "pods", risk.Workload, "changing a pod's image"},
	{"update", "pods/ephemeralcontainers", risk.Workload, "ephemeral container"},
	{"get", "secrets", risk.Credentials, "Secrets hold service account tokens"},
	{"list", "secrets", risk.Credentials, "Secrets hold service account tokens"},
	{"create", "serviceaccounts/token", risk.Credentials, "issues tokens of service accounts"},
	{"create", "pods/exec", risk.Credentials, "runs commands in pods"},
	{"create", "pods/attach", risk.Credentials, "runs commands in pods"},
	{"get", "pods/exec", risk.Credentials, "before Kubernetes 1.35"},
	{"get", "nodes/proxy", risk.Node, "the kubelet's API"},
	{"create", "persistentvolumes", risk.Node, "hostPath"},
	{"patch", "namespaces", risk.ControlPlane, "Pod Security"},
	{"create", "validatingwebhookconfigurations.admissionregistration.k8s.io", risk.ControlPlane, "webhook"},
	{"patch", "mutatingwebhookconfigurations.admissionregistration.k8s.io", risk.ControlPlane, "webhook"},
	{"delete", "validatingadmissionpolicies.admissionregistration.k8s.io", risk.ControlPlane, "policies"},
	{"create", "apiservices.apiregistration.k8s.io", risk.ControlPlane, "APIService"},
	{"update", "certificatesigningrequests.certificates.k8s.io/approval", risk.ControlPlane, "approving a CSR"},
	{"approve", "signers.certificates.k8s.io", risk.ControlPlane, "approve or sign"},
	{"impersonate", "users", risk.Escalation, "impersonating acts"},
	{"impersonate", "serviceaccounts", risk.Escalation, "impersonating acts"},
	{"impersonate", "userextras.authentication.k8s.io/scopes", risk.Escalation, "impersonating acts"},
	{"bind", "clusterroles.rbac.authorization.k8s.io", risk.Escalation, "binding a role"},
	{"escalate", "roles.rbac.authorization.k8s.io", risk.Escalation, "permissions you do not hold"},
	{"impersonate:user-info", "users.authentication.k8s.io", risk.Escalation, "impersonate-on:user-info:VERB"},
	{"impersonate-on:user-info:list", "pods", risk.Escalation, "needs impersonate:user-info"},
	{"*", "secrets", risk.Wildcard, "Secrets hold service account tokens"},
	{"get", "pods", "", ""},
	{"list", "configmaps", "", ""},
	{"create", "configmaps", "", ""},
	{"escalate", "roles", "", ""},
	{"get", "deployments.apps", "", ""},
	{"patch", "deployments.apps/scale", "", ""},
}

// TestOneRiskVerdict: who-can, why, access, least-privilege and the
// graphs give the same verdict on each row of the fixture (they all ask
// risk.Of or risk.OfRule; a command that answered on its own would part
// from the others here).
func TestOneRiskVerdict(t *testing.T) {
	const ns = "team-a"
	for _, tt := range riskFixture {
		t.Run(tt.verb+" "+tt.resource, func(t *testing.T) {
			target := rbaceval.ParseTarget(tt.verb, tt.resource, "", ns)
			rule := rbacv1.PolicyRule{APIGroups: []string{target.Group}, Resources: []string{target.ResourceWithSub()},
				Verbs: []string{tt.verb}}
			grant := &rbaceval.RBAC{
				Roles: map[string][]rbacv1.PolicyRule{ns + "/r": {rule}},
				RoleBindings: []rbacv1.RoleBinding{{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns},
					RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: []rbacv1.Subject{{Kind: "Group",
						Name: "dev"}}}},
			}
			res := resource.Resource{Group: target.Group, Name: target.ResourceWithSub(), Namespaced: true}
			verdict := func(what, text string) {
				t.Helper()
				if tt.kind == "" {
					for _, k := range []risk.Kind{risk.Workload, risk.Credentials, risk.Node,
						risk.ControlPlane, risk.Escalation, risk.Wildcard} {
						assert.NotContains(t, text, string(k)+": ", "%s: no risk", what)
					}
					assert.NotContains(t, text, "a path to", "%s: no risk", what)
					assert.NotContains(t, text, "an escalation path", "%s: no risk", what)
					return
				}
				assert.Contains(t, text, tt.phrase, "%s", what)
			}

			// who-can: the sentence above the table.
			streams, out, _ := testStreams()
			f := newCluster(&fakeCluster{fakeDiscovery: fakeDiscovery{resources: []resource.Resource{res}},
				fakeObjects: fakeObjects{rbac: grant}})
			require.NoError(t, completeAndRun(&WhoCanOptions{Output: &cmdutil.OutputFlags{}, IOStreams: streams,
				global: testGlobal(), client: f, target: target}))
			verdict("who-can", out.String())

			// why: "This is ...", and its risk in -o json.
			streams, out, _ = testStreams()
			f = newCluster(&fakeCluster{fakeIdentity: fakeIdentity{user: alice},
				fakeDiscovery:  fakeDiscovery{resources: []resource.Resource{res}},
				fakeObjects:    fakeObjects{rbac: grant},
				fakeAuthorizer: fakeAuthorizer{why: authzv1.SubjectAccessReviewStatus{Allowed: true}}})
			_ = completeAndRun(&WhyOptions{Output: &cmdutil.OutputFlags{Format: "json"}, IOStreams: streams,
				global: testGlobal(), client: f, target: target})
			var why struct {
				Risk risk.Risk `json:"risk"`
			}
			require.NoError(t, json.Unmarshal([]byte(out.String()), &why), out.String())
			assert.Equal(t, tt.kind, why.Risk.Kind, "why -o json")
			verdict("why", why.Risk.String())

			// access: the risks held below the matrix.
			m := &rbac.Matrix{Namespace: ns, Verbs: []string{tt.verb}, Rows: []rbac.Row{{Resource: res.String(),
				Cells: map[string]rbac.Cell{tt.verb: {Allowed: true, Source: rbac.FromRules}}}}}
			m.SetRisks()
			var b strings.Builder
			printMatrix(&b, m, false)
			verdict("access", b.String())
			if tt.kind != "" {
				assert.Contains(t, b.String(), string(tt.kind)+": ", "access")
			}

			// least-privilege: the rule generated from its use.
			res2, sub, _ := strings.Cut(target.ResourceWithSub(), "/")
			p := rolegen.Generate([]auditlog.Request{{Verb: tt.verb, APIGroup: target.Group, Resource: res2,
				Subresource: sub, Namespace: ns, Code: 200, Decision: auditlog.Allow}}, rolegen.PolicyOptions{})
			var lp string
			for _, e := range p.Escalations {
				lp += e.String() + "\n"
			}
			if tt.verb == "*" {
				lp = risk.OfRule(rule).String() // a request never names "*" (not granted)
			}
			verdict("least-privilege", lp)

			// the graphs: who-can --graph's target, access --graph's rule.
			g := rbacgraph.ForGrants(target, grant.WhoCan(target))
			var marked []string
			for _, n := range g.Nodes {
				marked = append(marked, n.Escalation)
			}
			verdict("who-can --graph", strings.Join(marked, "\n"))
			assert.Equal(t, tt.kind != "", strings.Join(marked, "") != "", "who-can --graph marks it")
		})
	}
}
