package resource

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
)

// Object is one listed object: its metadata, and the whole object when
// asked for.
type Object struct {
	Namespace string            `json:"namespace,omitempty"`
	Name      string            `json:"name"`
	Created   time.Time         `json:"creationTimestamp"`
	Labels    map[string]string `json:"labels,omitempty"`
	Raw       json.RawMessage   `json:"-"`
}

// path is the collection URL of r in namespace ("" for every namespace or
// a cluster-scoped resource).
func (r Resource) path(namespace string) string {
	p := "/apis/" + r.Group + "/" + r.Version
	if r.Group == "" {
		p = "/api/" + r.Version
	}
	if r.Namespaced && namespace != "" {
		p += "/namespaces/" + url.PathEscape(namespace)
	}
	return p + "/" + r.Name
}

// APIVersion is group/version, or the version of the core group.
func (r Resource) APIVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// metadataOnly asks the API server for object metadata only (the
// PartialObjectMetadataList kubectl's garbage collector uses), falling back
// to whole objects from servers that cannot.
const metadataOnly = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

// MaxObjects bounds the objects one list keeps, whatever its pages.
const MaxObjects = 500_000

// List lists r in namespace ("" for all namespaces) with a label
// selector, 500 at a time (kubectl's chunk size); full keeps each whole
// object in Raw.
func (c *Client) List(ctx context.Context, r Resource, namespace, selector string, full bool) ([]Object, error) {
	return c.list(ctx, r, namespace, selector, full, 500)
}

// list is List with limit objects a page, or all in one answer for 0.
func (c *Client) list(
	ctx context.Context, r Resource, namespace, selector string, full bool, limit int,
) ([]Object, error) {
	accept := metadataOnly
	if full {
		accept = "application/json"
	}
	var out []Object
	cont := ""
	for page := 0; ; page++ {
		q := url.Values{}
		if limit > 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		if selector != "" {
			q.Set("labelSelector", selector)
		}
		if cont != "" {
			q.Set("continue", cont)
		}
		var list listPage
		list.full = full
		if err := c.GetAs(ctx, r.path(namespace)+"?"+q.Encode(), accept, &list); err != nil {
			return nil, fmt.Errorf("listing %s%s: %w", r, InNamespace(namespace), err)
		}
		// kube-apiserver answers at most limit objects a page; an API server
		// that answers more, or more than MaxObjects in all, is refused
		// (what a list keeps is bounded: docs/security.md).
		if limit > 0 && len(list.Items) > limit {
			return nil,
				fmt.Errorf("listing %s%s: the API server answered %d objects for a page of at most %d", r,
					InNamespace(namespace), len(list.Items), limit)
		}
		if len(out)+len(list.Items) > MaxObjects {
			return nil, fmt.Errorf("listing %s%s: %w", r, InNamespace(namespace),
				kubeapi.TooLarge(fmt.Sprintf("more than %d objects, the limit for one list: narrow it (a namespace, "+
					"a label selector)", MaxObjects)))
		}
		for _, item := range list.Items {
			obj := item.Metadata
			if err := kubeapi.CheckLabels(obj.Labels); err != nil {
				return nil,
					fmt.Errorf("listing %s%s: refusing the API server's answer: object %.64q: %w", r,
						InNamespace(namespace), obj.Name, err)
			}
			if full {
				typed, err := withTypeMeta(item.raw, r)
				if err != nil {
					return nil, err
				}
				obj.Raw = typed
			}
			out = append(out, obj)
		}
		cont = list.Metadata.Continue
		if cont == "" {
			return out, nil
		}
		if page >= 10000 {
			return nil, fmt.Errorf("listing %s: more than 10000 pages", r)
		}
	}
}

// listPage is one page of a list: its items' metadata, decoded straight
// from the answer (no copy of each item is kept unless full asks for the
// whole objects).
type listPage struct {
	full     bool
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []listItem `json:"items"`
}

type listItem struct {
	Metadata Object `json:"metadata"`
	raw      json.RawMessage
}

// UnmarshalJSON decodes p, keeping each item's bytes when p.full.
func (p *listPage) UnmarshalJSON(b []byte) error {
	if !p.full {
		type plain listPage // without this method
		return json.Unmarshal(b, (*plain)(p))
	}
	var whole struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &whole); err != nil {
		return err
	}
	p.Metadata.Continue = whole.Metadata.Continue
	p.Items = make([]listItem, len(whole.Items))
	for i, raw := range whole.Items {
		if err := json.Unmarshal(raw, &p.Items[i]); err != nil {
			return err
		}
		p.Items[i].raw = raw
	}
	return nil
}

// withTypeMeta sets kind and apiVersion, which list items lack.
func withTypeMeta(raw json.RawMessage, r Resource) (json.RawMessage, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", r, err)
	}
	m["kind"], m["apiVersion"] = r.Kind, r.APIVersion()
	return json.Marshal(m)
}

// InNamespace is " in namespace NS" for a message, "" for every namespace.
func InNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in namespace " + ns
}

// NamespacesWith lists the namespaces matching a label selector: their
// metadata, in one request (as the RBAC objects are read: a thousand
// namespaces' metadata is some 300 kB, and pages of 500 would make it
// three requests).
func (c *Client) NamespacesWith(ctx context.Context, selector string) ([]string, error) {
	objs, err := c.list(ctx, Resource{Version: "v1", Name: "namespaces"}, "", selector, false, 0)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(objs))
	for i, o := range objs {
		// The server's to choose: a name no namespace can have would end
		// on a command line, a path or a shell's completion.
		if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
			return nil, fmt.Errorf("refusing the API server's list of namespaces: %.80q is not a namespace name (a "+
				"DNS-1123 label)", o.Name)
		}
		names[i] = o.Name
	}
	return names, nil
}
