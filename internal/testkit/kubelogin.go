package testkit

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
	clientcmdapiv1 "k8s.io/client-go/tools/clientcmd/api/v1"
)

// Kubelogin is the entry of a kubeconfig written for int128/kubelogin;
// its zero value is kubelogin's README: https://issuer.example.com, client
// k8s, cluster https://k8s.example.com.
type Kubelogin struct {
	Server, CA       string // the cluster's
	Issuer, ClientID string
	Extra            []string // after --oidc-issuer-url and --oidc-client-id
}

// KubeloginKubeconfig is a kubeconfig as kubelogin's README sets one up:
// context c, on cluster c, whose user oidc runs "kubectl oidc-login
// get-token --oidc-issuer-url=… --oidc-client-id=…" and then k.Extra;
// edit, when set, changes the rest (an env, another user).
func KubeloginKubeconfig(t testing.TB, k Kubelogin, edit func(*clientcmdapi.Config)) []byte {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["c"] = &clientcmdapi.Cluster{Server: cmp.Or(k.Server, "https://k8s.example.com"), CertificateAuthority: k.CA}
	c.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "oidc"}
	c.CurrentContext = "c"
	c.AuthInfos["oidc"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "kubectl",
		Args: append([]string{"oidc-login", "get-token", "--oidc-issuer-url=" + cmp.Or(k.Issuer, "https://issuer.example.com"),
			"--oidc-client-id=" + cmp.Or(k.ClientID, "k8s")}, k.Extra...),
		InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode,
	}}
	if edit != nil {
		edit(c)
	}
	// JSON, which kubectl reads as YAML, with every control character
	// escaped (encoding/json leaves DEL and C1 as they are, which YAML
	// refuses): the attack tests put them in the entry.
	var v1 clientcmdapiv1.Config
	if err := clientcmdlatest.Scheme.Convert(c, &v1, nil); err != nil {
		t.Fatalf("converting the kubelogin fixture: %v", err)
	}
	v1.Kind, v1.APIVersion = "Config", "v1"
	b, err := json.Marshal(v1)
	if err != nil {
		t.Fatalf("writing the kubelogin fixture: %v", err)
	}
	var out strings.Builder
	for _, r := range string(b) {
		if unicode.IsControl(r) {
			fmt.Fprintf(&out, `\u%04x`, r)
			continue
		}
		out.WriteRune(r)
	}
	return []byte(out.String())
}
