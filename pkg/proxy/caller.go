package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// OriginalUserExtra is the extra key under which a caller who impersonates
// through the proxy (--allow-caller-impersonation) is forwarded, so that
// kube-apiserver's audit log shows both: the impersonated user, and who
// asked for it.
const OriginalUserExtra = "kubectl-impersonate.io/original-user"

// ImpersonationAuthorizer answers whether spec's user may do spec's
// resource attributes: a SubjectAccessReview, asked of kube-apiserver.
type ImpersonationAuthorizer interface {
	Authorize(ctx context.Context, spec authzv1.SubjectAccessReviewSpec) (allowed bool, reason string, err error)
}

// callerImpersonation is what a caller's Impersonate-* headers ask for.
type callerImpersonation struct {
	user   string
	uid    string
	groups []string
	extra  map[string][]string
}

// Errors of a caller's impersonation headers (403 unless said).
var errImpersonationHeaders = errors.New("impersonation headers")

// readCallerImpersonation reads the caller's impersonation headers as
// kube-apiserver reads them (Impersonate-User, Impersonate-Group,
// Impersonate-Uid, Impersonate-Extra-<key> with the key percent-decoded and
// lowercased), nil when there are none. Spellings kube-apiserver would not
// read (underscores) or ambiguous ones (two users or UIDs) are refused, as
// is a request without a user, and the extra key the proxy sets itself.
func readCallerImpersonation(h http.Header) (*callerImpersonation, error) {
	var c callerImpersonation
	found := false
	for name, values := range h {
		n := normalHeader(name)
		if !strings.HasPrefix(n, "impersonate-") {
			continue
		}
		found = true
		if name != http.CanonicalHeaderKey(name) || strings.Contains(name, "_") {
			return nil, fmt.Errorf("%w: %q is not a spelling kube-apiserver reads", errImpersonationHeaders, name)
		}
		switch {
		case name == authnv1.ImpersonateUserHeader || name == authnv1.ImpersonateUIDHeader:
			if len(values) != 1 || values[0] == "" {
				return nil, fmt.Errorf("%w: %s must be given once, not empty", errImpersonationHeaders, name)
			}
			if name == authnv1.ImpersonateUserHeader {
				c.user = values[0]
			} else {
				c.uid = values[0]
			}
		case name == authnv1.ImpersonateGroupHeader:
			c.groups = append(c.groups, values...)
		case strings.HasPrefix(name, authnv1.ImpersonateUserExtraHeaderPrefix):
			// As kube-apiserver: lowercased, then percent-decoded.
			key, err := url.PathUnescape(strings.ToLower(strings.TrimPrefix(name, authnv1.ImpersonateUserExtraHeaderPrefix)))
			if err != nil || key == "" || !utf8.ValidString(key) {
				return nil, fmt.Errorf("%w: %s has no valid extra key", errImpersonationHeaders, name)
			}
			if key == OriginalUserExtra {
				return nil, fmt.Errorf("%w: the extra %s is the proxy's to set", errImpersonationHeaders, OriginalUserExtra)
			}
			if c.extra == nil {
				c.extra = map[string][]string{}
			}
			c.extra[key] = append(c.extra[key], values...)
		default:
			return nil, fmt.Errorf("%w: %s is not an impersonation header", errImpersonationHeaders, name)
		}
	}
	if !found {
		return nil, nil
	}
	if c.user == "" {
		return nil, fmt.Errorf("%w: impersonation without %s", errImpersonationHeaders, authnv1.ImpersonateUserHeader)
	}
	// One check per value: repeated values are one, and the values are
	// bounded (each costs a SubjectAccessReview); invalid UTF-8 would be
	// asked about as U+FFFD and forwarded as it is.
	c.groups = dedupe(c.groups)
	values := 1 + len(c.groups)
	for k, vs := range c.extra {
		c.extra[k] = dedupe(vs)
		values += len(c.extra[k])
	}
	if values > MaxImpersonatedValues {
		return nil, fmt.Errorf("%w: %d groups and extra values, over %d", errImpersonationHeaders, values-1, MaxImpersonatedValues)
	}
	for _, v := range append(append([]string{c.user, c.uid}, c.groups...), extraValues(c.extra)...) {
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("%w: a value is not valid UTF-8", errImpersonationHeaders)
		}
	}
	return &c, nil
}

// MaxImpersonatedValues bounds a caller's impersonation: the user, its
// groups and extra values (one SubjectAccessReview each).
const MaxImpersonatedValues = 32

func dedupe(vs []string) []string {
	var out []string
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func extraValues(extra map[string][]string) []string {
	var out []string
	for _, vs := range extra {
		out = append(out, vs...)
	}
	return out
}

// checks are the SubjectAccessReviews kube-apiserver's impersonation
// filter asks (the impersonate verb: users, or a service account in its
// namespace; each group; the UID; each extra value), for caller.
func (c *callerImpersonation) checks(caller user.Info) []authzv1.SubjectAccessReviewSpec {
	// The caller as kube-apiserver authenticates it: a token's user gets
	// system:authenticated.
	groups := caller.GetGroups()
	if !slices.Contains(groups, user.AllAuthenticated) {
		groups = append(slices.Clone(groups), user.AllAuthenticated)
	}
	base := authzv1.SubjectAccessReviewSpec{User: caller.GetName(), UID: caller.GetUID(), Groups: groups}
	if extra := caller.GetExtra(); len(extra) > 0 {
		base.Extra = map[string]authzv1.ExtraValue{}
		for k, v := range extra {
			base.Extra[k] = v
		}
	}
	ask := func(group, resource, sub, ns, name string) authzv1.SubjectAccessReviewSpec {
		s := base
		s.ResourceAttributes = &authzv1.ResourceAttributes{Verb: "impersonate", Group: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
		return s
	}
	var out []authzv1.SubjectAccessReviewSpec
	if ns, name, err := serviceaccount.SplitUsername(c.user); err == nil {
		out = append(out, ask("", "serviceaccounts", "", ns, name))
	} else {
		out = append(out, ask("", "users", "", "", c.user))
	}
	for _, g := range c.groups {
		out = append(out, ask("", "groups", "", "", g))
	}
	if c.uid != "" {
		out = append(out, ask(authnv1.SchemeGroupVersion.Group, "uids", "", "", c.uid))
	}
	keys := make([]string, 0, len(c.extra))
	for k := range c.extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range c.extra[k] {
			out = append(out, ask(authnv1.SchemeGroupVersion.Group, "userextras", k, "", v))
		}
	}
	return out
}

// identity is who the request is forwarded as: the impersonated user, its
// groups (a service account's own when none are asked, as kube-apiserver
// gives them), UID and extra, and the caller under OriginalUserExtra.
func (c *callerImpersonation) identity(caller user.Info) user.Info {
	groups := c.groups
	if ns, _, err := serviceaccount.SplitUsername(c.user); err == nil && len(groups) == 0 {
		groups = serviceaccount.MakeGroupNames(ns)
	}
	extra := map[string][]string{OriginalUserExtra: {caller.GetName()}}
	for k, v := range c.extra {
		extra[k] = v
	}
	return &user.DefaultInfo{Name: c.user, UID: c.uid, Groups: groups, Extra: extra}
}

// authorizeCaller asks, for each check, whether the authenticated caller
// may impersonate it (never whether the proxy may): the first denial is
// the error.
func (h *Handler) authorizeCaller(ctx context.Context, caller user.Info, c *callerImpersonation) error {
	for _, spec := range c.checks(caller) {
		allowed, reason, err := h.CallerImpersonation.Authorize(ctx, spec)
		if err != nil {
			return fmt.Errorf("asking whether you may impersonate: %w", err)
		}
		if !allowed {
			a := spec.ResourceAttributes
			what := a.Resource
			if a.Subresource != "" {
				what += "/" + a.Subresource
			}
			msg := fmt.Sprintf("%s may not impersonate %s %q", caller.GetName(), what, a.Name)
			if reason != "" {
				msg += ": " + reason
			}
			return errors.New(msg)
		}
	}
	return nil
}

// SubjectAccessReviewer asks kube-apiserver (upstream, through rt: the
// proxy's own credential, which needs create on subjectaccessreviews).
type SubjectAccessReviewer struct {
	Upstream *url.URL
	RT       http.RoundTripper
}

// Authorize posts a SubjectAccessReview.
func (s SubjectAccessReviewer) Authorize(ctx context.Context, spec authzv1.SubjectAccessReviewSpec) (bool, string, error) {
	in := authzv1.SubjectAccessReview{Spec: spec}
	in.APIVersion, in.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
	body, err := json.Marshal(in)
	if err != nil {
		return false, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Upstream.JoinPath("/apis/authorization.k8s.io/v1/subjectaccessreviews").String(), bytes.NewReader(body))
	if err != nil {
		return false, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.RT.RoundTrip(req)
	if err != nil {
		return false, "", errors.New("upstream unavailable")
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false, "", err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return false, "", fmt.Errorf("SubjectAccessReview: HTTP %d (the proxy's credential needs create on subjectaccessreviews)", resp.StatusCode)
	}
	var out authzv1.SubjectAccessReview
	if err := json.Unmarshal(b, &out); err != nil {
		return false, "", fmt.Errorf("reading the SubjectAccessReview: %w", err)
	}
	return out.Status.Allowed, out.Status.Reason, nil
}
