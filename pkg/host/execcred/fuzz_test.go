package execcred

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzParseRequest: any KUBERNETES_EXEC_INFO gives a request or a one-line
// error; a request always gets a reply kubectl can decode, in its apiVersion.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":true}}`,
		`{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","spec":{"interactive":false,"cluster":{"server":"https://k8s:6443","certificate-authority-data":"AAAA","config":{"x":1}}}}`,
		`{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1alpha1"}`,
		`{"kind":"Other","apiVersion":"client.authentication.k8s.io/v1"}`,
		``, `{}`, `null`, `[]`, `{"apiVersion":1}`, "{\"spec\":{\"cluster\":{\"server\":\"\\u0000\"}}}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		req, err := ParseRequest(value)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := WriteReply(&buf, req, "token-\"\\\u2028", time.Unix(1_800_000_000, 0)); err != nil {
			t.Fatalf("reply to a valid request: %v", err)
		}
		var out struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Status     struct {
				Token string `json:"token"`
			} `json:"status"`
		}
		if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
			t.Fatalf("reply is not JSON: %v: %s", err, buf.Bytes())
		}
		if out.APIVersion != req.APIVersion || out.Kind != "ExecCredential" || out.Status.Token != "token-\"\\\u2028" {
			t.Fatalf("reply %+v for request %+v", out, req)
		}
	})
}
