package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	authnv1 "k8s.io/api/authentication/v1"
)

// ErrNoSelfSubjectReview is returned when no version is served.
var ErrNoSelfSubjectReview = errors.New("the API server does not serve SelfSubjectReview: it needs Kubernetes ≥ 1.28 " +
	"(1.26-1.27 with the APISelfSubjectReview feature gate)")

// UnsupportedVersionError names the Kubernetes version that lacks an API
// and what works without it.
type UnsupportedVersionError struct {
	Version string
}

func (e *UnsupportedVersionError) Error() string {
	v := e.Version
	if v == "" {
		v = "an unknown version"
	}
	return fmt.Sprintf("the API server is Kubernetes %s and does not serve SelfSubjectReview (1.28+, v1 from 1.30; "+
		"supported releases are 1.35 to 1.37): whoami, groups and claims --compare are unavailable; access, list, "+
		"who-can and why still work", v)
}

func (e *UnsupportedVersionError) Unwrap() error { return ErrNoSelfSubjectReview }

// ServerVersion is the API server's /version gitVersion ("" when unknown).
func (c *Client) ServerVersion(ctx context.Context) string {
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := c.Get(ctx, "/version", &v); err != nil {
		return ""
	}
	return v.GitVersion
}

// selfSubjectReviewVersions in order of preference; the v1beta1 and
// v1alpha1 shapes are the same as v1's.
var selfSubjectReviewVersions = []string{"v1", "v1beta1", "v1alpha1"}

// WhoAmI asks the API server who the request's identity is (with
// impersonation headers, the impersonated identity). It returns the version
// that answered.
func (c *Client) WhoAmI(ctx context.Context) (*authnv1.UserInfo, string, error) {
	ssr, v, err := c.SelfSubjectReview(ctx)
	if err != nil {
		return nil, "", err
	}
	return &ssr.Status.UserInfo, v, nil
}

// SelfSubjectReview is the API server's answer to who the request's
// identity is, the whole object (kubectl auth whoami prints it), and the
// version that answered.
func (c *Client) SelfSubjectReview(ctx context.Context) (*authnv1.SelfSubjectReview, string, error) {
	for _, v := range selfSubjectReviewVersions {
		in := authnv1.SelfSubjectReview{}
		in.APIVersion, in.Kind = "authentication.k8s.io/"+v, "SelfSubjectReview"
		var out authnv1.SelfSubjectReview
		err := c.Post(ctx, "/apis/authentication.k8s.io/"+v+"/selfsubjectreviews", &in, &out)
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == http.StatusNotFound {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("asking the API server who you are: %w", err)
		}
		out.APIVersion, out.Kind = "authentication.k8s.io/"+v, "SelfSubjectReview"
		return &out, v, nil
	}
	return nil, "", &UnsupportedVersionError{Version: c.ServerVersion(ctx)}
}
