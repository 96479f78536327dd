// Package elevationtest serves sudo grants and requests from memory, as
// kube-apiserver answers their reads, for the tests of elevation's readers.
//
//   - A GET of a namespace's list returns its objects ("" namespace: all).
//   - A GET of one object returns it, or a 404 when there is none.
//   - Writes and WhoAmI fail: readers only.
package elevationtest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
)

// API is an elevation.Client over Grants and Requests.
type API struct {
	Grants   []elevation.Grant
	Requests []elevation.Request
	// Fail, when set, is every GET's answer.
	Fail error
	// Asked are the paths read, in order.
	Asked []string
}

var _ elevation.Client = (*API)(nil)

// Get answers path as kube-apiserver would.
func (a *API) Get(_ context.Context, path string, out any) error {
	a.Asked = append(a.Asked, path)
	if a.Fail != nil {
		return a.Fail
	}
	rest := strings.TrimPrefix(path, "/apis/"+elevation.Group+"/"+elevation.Version+"/")
	ns := ""
	if after, ok := strings.CutPrefix(rest, "namespaces/"); ok {
		ns, rest, _ = strings.Cut(after, "/")
	}
	plural, name, one := strings.Cut(rest, "/")
	var found []any
	switch plural {
	case "sudogrants":
		for _, g := range a.Grants {
			if (ns == "" || g.Namespace == ns) && (!one || g.Name == name) {
				found = append(found, g)
			}
		}
	case "sudorequests":
		for _, r := range a.Requests {
			if (ns == "" || r.Namespace == ns) && (!one || r.Name == name) {
				found = append(found, r)
			}
		}
	default:
		return &kubeapi.APIError{Code: 404, Reason: "NotFound", Message: "the server could not find " + path}
	}
	var v any = map[string]any{"items": found}
	if one {
		if len(found) == 0 {
			return &kubeapi.APIError{Code: 404, Reason: "NotFound", Message: plural + " " + name + " not found"}
		}
		v = found[0]
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// Post fails: readers only.
func (a *API) Post(context.Context, string, any, any) error {
	return errors.New("elevationtest: read only")
}

// Put fails: readers only.
func (a *API) Put(context.Context, string, any, any) error {
	return errors.New("elevationtest: read only")
}

// WhoAmI fails: readers only.
func (a *API) WhoAmI(context.Context) (*authnv1.UserInfo, string, error) {
	return nil, "", errors.New("elevationtest: no identity")
}
