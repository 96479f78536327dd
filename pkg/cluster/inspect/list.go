package inspect

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
)

// ListRequest is list's question: the objects of a resource (as typed)
// that Caller may list, and what Target may do to each.
type ListRequest struct {
	// Caller lists; Target (Identity, described) is reviewed: the same
	// client, or one acting as another identity.
	Caller, Target ListClient
	Identity       string
	// Resource is the resource listed (ListResource resolved it).
	Resource resource.Resource
	Selector string
	// Namespace, or every namespace, or those with ProjectLabel.
	Namespace     string
	AllNamespaces bool
	ProjectLabel  string
	Verbs         []string
	ForceSSAR     bool
	// RBACObjects: across namespaces, evaluate the RBAC objects read once
	// where that gives the server's answer (LocalRules).
	RBACObjects bool
	// Full keeps each whole object (-o json|yaml).
	Full    bool
	Verbose bool
	Warn    func(string)
	// Progress, when set, follows the rules reviews of many namespaces.
	Progress func(done, total int)
}

// ListResult is the outcome, for the table and the counts.
type ListResult struct {
	Resource   resource.Resource
	Identity   string
	Namespaces []string
	Decisions  []rbac.Decision
	Stats      rbac.FilterStats
	// Lists counts the list requests (namespaces and objects).
	Lists int
	// Check counts the requests that read the RBAC objects and checked
	// them against the server (LocalRules), when they were read.
	Check int
}

// ListResource resolves the resource typed as kubectl does
// (resource.Resolve), one that can be listed.
func ListResource(ctx context.Context, d Discoverer, typed string, warn func(string)) (resource.Resource, error) {
	res, err := resource.Resolve(ctx, d, false, warn, func(all []resource.Resource) (resource.Resource, error) {
		return resource.ResolveResource(all, typed)
	})
	if err != nil {
		return res, err
	}
	if !slices.Contains(res.Verbs, "list") {
		return res, fmt.Errorf("%s cannot be listed (its verbs: %s)", res, strings.Join(res.Verbs, ", "))
	}
	return res, nil
}

// List lists the resource's objects in the namespaces asked about, and
// decides for each what the target identity may do.
func List(ctx context.Context, q ListRequest) (*ListResult, error) {
	caller, res := q.Caller, q.Resource
	var err error
	r := &ListResult{Resource: res, Identity: q.Identity}
	listing, lists := kubeapi.CountRequests(ctx)
	if r.Namespaces, err = q.namespaces(listing, res); err != nil {
		return nil, err
	}
	var objs []resource.Object
	for _, ns := range r.Namespaces {
		got, err := caller.List(listing, res, ns, q.Selector, q.Full)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	r.Lists = lists.N()
	sort.SliceStable(objs, func(i, j int) bool {
		if objs[i].Namespace != objs[j].Namespace {
			return objs[i].Namespace < objs[j].Namespace
		}
		return objs[i].Name < objs[j].Name
	})
	opts := rbac.FilterOptions{Verbs: q.Verbs, ForceSSAR: q.ForceSSAR}
	if (q.AllNamespaces || q.ProjectLabel != "") && res.Namespaced && q.RBACObjects && !opts.ForceSSAR &&
		len(objs) > 0 {
		checking, check := kubeapi.CountRequests(ctx)
		if found := LocalRules(checking, Say{Warn: q.Warn, Verbose: q.Verbose}, caller, objs[0].Namespace,
			q.Target); found != nil {
			opts.LocalRules = found[0]
		}
		r.Check = check.N()
	}
	if opts.LocalRules == nil {
		opts.Progress = q.Progress
	}
	r.Decisions, r.Stats, err = q.Target.Filter(ctx, res, objs, opts)
	if err != nil && ctx.Err() != nil {
		seen := map[string]bool{}
		for _, obj := range objs {
			seen[obj.Namespace] = true
		}
		return nil,
			fmt.Errorf("interrupted while deciding %d objects in %d namespaces: %w", len(objs), len(seen), ctx.Err())
	}
	return r, err
}

// namespaces are those the objects are listed in ("" for all).
func (q *ListRequest) namespaces(ctx context.Context, res resource.Resource) ([]string, error) {
	switch {
	case !res.Namespaced || q.AllNamespaces:
		return []string{""}, nil
	case q.ProjectLabel != "":
		ns, err := q.Caller.NamespacesWith(ctx, q.ProjectLabel)
		if err != nil {
			return nil, fmt.Errorf("selecting the namespaces of --project-label=%s: %w", q.ProjectLabel, err)
		}
		return ns, nil
	}
	return []string{q.Namespace}, nil
}
