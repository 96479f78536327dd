// Package execcred speaks the client-go exec credential plugin protocol
// (client.authentication.k8s.io v1 and v1beta1).
//
//   - It reads the request that kubectl passes in KUBERNETES_EXEC_INFO.
//   - It writes the ExecCredential reply.
//
// Spec: https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins
//
// The types are written by hand rather than imported from
// k8s.io/client-go/pkg/apis/clientauthentication: this package sits on the
// cached get-token path, which runs on every kubectl call, and must not pull
// in apimachinery's scheme machinery. The tests check the output against
// client-go's own decoder.
package execcred

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

const (
	// EnvExecInfo is the variable client-go sets for the plugin.
	EnvExecInfo = "KUBERNETES_EXEC_INFO"
	// APIVersionV1 is the GA version of the protocol.
	APIVersionV1 = "client.authentication.k8s.io/v1"
	// APIVersionV1beta1 is the beta version, still used by older kubeconfigs.
	APIVersionV1beta1  = "client.authentication.k8s.io/v1beta1"
	kindExecCredential = "ExecCredential"
)

// Cluster is spec.cluster, present only with provideClusterInfo: true.
type Cluster struct {
	Server                   string          `json:"server"`
	TLSServerName            string          `json:"tls-server-name,omitempty"`
	InsecureSkipTLSVerify    bool            `json:"insecure-skip-tls-verify,omitempty"`
	CertificateAuthorityData []byte          `json:"certificate-authority-data,omitempty"`
	ProxyURL                 string          `json:"proxy-url,omitempty"`
	DisableCompression       bool            `json:"disable-compression,omitempty"`
	Config                   json.RawMessage `json:"config,omitempty"`
}

// Request is what kubectl asked for.
type Request struct {
	// APIVersion is the version the reply must carry.
	APIVersion string
	// Interactive tells whether the plugin may prompt the user (spec.interactive).
	Interactive bool
	// Cluster is the cluster the credential is for, when kubectl provides it.
	Cluster *Cluster
	// FromKubectl is false when KUBERNETES_EXEC_INFO was not set, i.e. the
	// plugin was run by hand (or see ByClientWithoutExecInfo).
	FromKubectl bool
	// ByClientWithoutExecInfo: a client that sets no KUBERNETES_EXEC_INFO
	// runs the plugin (FromEnvironment); FromKubectl is true.
	ByClientWithoutExecInfo bool
}

type wireSpec struct {
	Interactive bool     `json:"interactive"`
	Cluster     *Cluster `json:"cluster,omitempty"`
}

type wireRequest struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Spec       wireSpec `json:"spec"`
}

// ParseRequest reads the value of KUBERNETES_EXEC_INFO. An empty value means
// the plugin runs outside kubectl: the reply is then v1.
func ParseRequest(value string) (*Request, error) {
	if value == "" {
		return &Request{APIVersion: APIVersionV1}, nil
	}
	var w wireRequest
	if err := json.Unmarshal([]byte(value), &w); err != nil {
		return nil, fmt.Errorf("invalid %s: %w", EnvExecInfo, err)
	}
	switch w.APIVersion {
	case APIVersionV1, APIVersionV1beta1:
	case "":
		return nil, fmt.Errorf("invalid %s: apiVersion is missing", EnvExecInfo)
	default:
		return nil, fmt.Errorf("invalid %s: apiVersion %q is not supported (want %s or %s); set apiVersion in the "+
			"kubeconfig exec entry",
			EnvExecInfo, w.APIVersion, APIVersionV1, APIVersionV1beta1)
	}
	if w.Kind != kindExecCredential {
		return nil, fmt.Errorf("invalid %s: kind %q, want %s", EnvExecInfo, w.Kind, kindExecCredential)
	}
	return &Request{APIVersion: w.APIVersion, Interactive: w.Spec.Interactive, Cluster: w.Spec.Cluster,
		FromKubectl: true}, nil
}

type wireStatus struct {
	ExpirationTimestamp string `json:"expirationTimestamp,omitempty"`
	Token               string `json:"token" datapolicy:"token"`
}

type wireReply struct {
	Kind       string     `json:"kind"`
	APIVersion string     `json:"apiVersion"`
	Spec       wireSpec   `json:"spec"`
	Status     wireStatus `json:"status"`
}

// WriteReply writes the ExecCredential for token to w, in the request's
// apiVersion (client-go rejects any other). The expiry is rounded down to
// the second, as metav1.Time carries seconds only.
func WriteReply(w io.Writer, req *Request, token string, expiry time.Time) error {
	if token == "" {
		return fmt.Errorf("refusing to write an ExecCredential with an empty token")
	}
	apiVersion := req.APIVersion
	if apiVersion == "" {
		apiVersion = APIVersionV1
	}
	reply := wireReply{
		Kind:       kindExecCredential,
		APIVersion: apiVersion,
		Spec:       wireSpec{Interactive: req.Interactive},
		Status:     wireStatus{Token: token},
	}
	if !expiry.IsZero() {
		reply.Status.ExpirationTimestamp = expiry.UTC().Truncate(time.Second).Format(time.RFC3339)
	}
	b, err := reply.marshal()
	if err != nil {
		return fmt.Errorf("encoding ExecCredential: %w", err)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("writing ExecCredential: %w", err)
	}
	return nil
}

// marshal writes the reply by hand: encoding/json's reflection over the
// reply type is a measurable part of a cached get-token. Strings still go
// through json.Marshal, which escapes them correctly without reflection
// over a struct.
func (r *wireReply) marshal() ([]byte, error) {
	b := make([]byte, 0, 256+len(r.Status.Token))
	b = append(b, `{"kind":"ExecCredential","apiVersion":`...)
	var err error
	if b, err = appendString(b, r.APIVersion); err != nil {
		return nil, err
	}
	b = append(b, `,"spec":{"interactive":`...)
	b = strconv.AppendBool(b, r.Spec.Interactive)
	b = append(b, `},"status":{`...)
	if r.Status.ExpirationTimestamp != "" {
		b = append(b, `"expirationTimestamp":`...)
		if b, err = appendString(b, r.Status.ExpirationTimestamp); err != nil {
			return nil, err
		}
		b = append(b, ',')
	}
	b = append(b, `"token":`...)
	if b, err = appendString(b, r.Status.Token); err != nil {
		return nil, err
	}
	return append(b, "}}\n"...), nil
}

func appendString(b []byte, s string) ([]byte, error) {
	q, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return append(b, q...), nil
}
