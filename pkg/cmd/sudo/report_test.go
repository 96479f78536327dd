package sudo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
)

// event is a kube-apiserver audit event of the proxy's request as alice,
// under grant (none when "").
func event(id, verb, uri, group, resource, name string, code int, grant string) string {
	extra := map[string][]string{}
	if grant != "" {
		extra["kubectl-impersonate.io/sudo-grant"] = []string{grant}
	}
	e := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
		"auditID": id, "stage": "ResponseComplete", "verb": verb, "requestURI": uri,
		"user":             map[string]any{"username": "e2e-proxy"},
		"impersonatedUser": map[string]any{"username": "alice", "groups": []string{"sudo:payments:edit"}, "extra": extra},
		"objectRef":        map[string]any{"resource": resource, "apiGroup": group, "namespace": "payments", "name": name},
		"responseStatus":   map[string]any{"code": code},
		"annotations":      map[string]string{"authorization.k8s.io/decision": "allow"}}
	b, _ := json.Marshal(e)
	return string(b)
}

// report lists every request made under the grant, from kube-apiserver's
// log or the proxy's, and marks what may outlive it with the project's
// risks: a Secret and a CronJob made under it, not a read, not a refused
// create, not another grant's.
func TestReport(t *testing.T) {
	const g = "payments/sudo-x"
	log := strings.Join([]string{
		event("1", "create", "/api/v1/namespaces/payments/secrets", "", "secrets", "keep", 201, g),
		event("2", "create", "/apis/batch/v1/namespaces/payments/cronjobs", "batch", "cronjobs", "nightly", 201, g),
		event("3", "list", "/api/v1/namespaces/payments/pods", "", "pods", "", 200, g),
		event("4", "create", "/api/v1/namespaces/payments/secrets", "", "secrets", "other", 201, "payments/sudo-y"),
		event("5", "create", "/api/v1/namespaces/payments/configmaps", "", "configmaps", "c", 201, g),
		event("6", "create", "/api/v1/namespaces/payments/serviceaccounts/ci/token", "", "serviceaccounts", "ci", 201, ""),
		`{"time":"2026-11-29T12:00:00Z","verb":"POST","path":"/apis/rbac.authorization.k8s.io/v1/namespaces/payments/rolebindings",` +
			`"code":201,"latencyMs":3,"answered":true,"user":"alice","grant":"payments/sudo-x","request":{"verb":"create",` +
			`"apiGroup":"rbac.authorization.k8s.io","resource":"rolebindings","namespace":"payments","code":0}}`,
		"not json",
	}, "\n")
	for _, output := range []string{"json", ""} {
		var out, errOut bytes.Buffer
		o := &ReportOptions{AuditLog: "-", Namespace: "payments", grant: "sudo-x",
			IOStreams: genericiooptions.IOStreams{In: strings.NewReader(log), Out: &out, ErrOut: &errOut}}
		o.Output = &cmdutil.OutputFlags{Format: output}
		require.NoError(t, o.Validate())
		require.NoError(t, o.Run(context.Background()))
		if output == "" {
			s := out.String()
			assert.Contains(t, s, "5 requests under grant payments/sudo-x:")
			assert.Contains(t, s, "3 may outlive the grant:")
			assert.Contains(t, s, "create cronjobs.batch payments/nightly: workload: ")
			continue
		}
		var rep Report
		require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
		assert.Len(t, rep.Requests, 5, "the grant's: kube-apiserver's four and the proxy's line")
		var outlive []string
		for _, m := range rep.MayOutlive {
			outlive = append(outlive, fmt.Sprintf("%s %s %s %s", m.Request.Verb, m.Request.Resource,
				m.Request.Created, m.Risk.Kind))
		}
		assert.Equal(t, []string{"create secrets keep credentials", "create cronjobs nightly workload",
			"create rolebindings  escalation"}, outlive)
		assert.Equal(t, 1, rep.Skipped)
	}
}

func TestReportValidate(t *testing.T) {
	for _, c := range []struct {
		o   ReportOptions
		err string
	}{
		{ReportOptions{Namespace: "p", grant: "g"}, "--from-audit is required"},
		{ReportOptions{AuditLog: "-", grant: "g"}, "-n is required"},
		{ReportOptions{AuditLog: "-", Namespace: "p", grant: "p/g"}, "is a name"},
	} {
		assert.ErrorContains(t, c.o.Validate(), c.err)
	}
}
