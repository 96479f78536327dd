// Package identity decides who a request through the impersonating proxy
// goes upstream as.
//
//   - ReadHeaders reads a caller's Impersonate-* headers as kube-apiserver
//     reads them, and refuses spellings it would not read.
//   - Filter is kube-apiserver's own impersonation filter, asking an
//     Authorizer (SubjectAccessReviewer: kube-apiserver itself) each question.
//   - ForwardedAs is the identity the filter allowed, with the caller under
//     OriginalUserExtra.
//   - Forwardable refuses identities a token could not produce, or that
//     would change in transit.
package identity

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/attributes"
)

// OriginalUserExtra is the extra key under which a caller who impersonates
// through the proxy (--allow-caller-impersonation) is forwarded, so that
// kube-apiserver's audit log shows both: the impersonated user, and who
// asked for it.
const OriginalUserExtra = "kubectl-impersonate.io/original-user"

// Authorizer answers kube-apiserver's impersonation filter
// (k8s.io/apiserver/pkg/endpoints/filters/impersonation) whether the caller may impersonate what
// it asks: SubjectAccessReviewer asks kube-apiserver.
type Authorizer = authorizer.UnconditionalAuthorizer

// Asked is what a caller's Impersonate-* headers ask for.
type Asked struct {
	user   string
	uid    string
	groups []string
	extra  map[string][]string
}

// Errors of a caller's impersonation headers (403 unless said).
var errImpersonationHeaders = errors.New("impersonation headers")

// ReadHeaders reads the caller's impersonation headers as
// kube-apiserver reads them (Impersonate-User, Impersonate-Group,
// Impersonate-Uid, Impersonate-Extra-<key> with the key percent-decoded and
// lowercased), nil when there are none. Spellings kube-apiserver would not
// read (underscores) or ambiguous ones (two users or UIDs) are refused, as
// is a request without a user, and the extra key the proxy sets itself.
func ReadHeaders(h http.Header) (*Asked, error) {
	var c Asked
	found := false
	for name, values := range h {
		n := attributes.NormalHeader(name)
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
			key, err := url.PathUnescape(
				strings.ToLower(strings.TrimPrefix(name, authnv1.ImpersonateUserExtraHeaderPrefix)))
			if err != nil || key == "" || !utf8.ValidString(key) {
				return nil, fmt.Errorf("%w: %s has no valid extra key", errImpersonationHeaders, name)
			}
			if strings.EqualFold(key, OriginalUserExtra) {
				return nil,
					fmt.Errorf("%w: the extra %s is the proxy's to set", errImpersonationHeaders, OriginalUserExtra)
			}
			// An escaped capital (%41) survives kube-apiserver's lowercasing
			// of the header here, but not the header's way upstream: the
			// key would arrive as another one.
			if key != strings.ToLower(key) {
				return nil,
					fmt.Errorf("%w: the extra key %q has capital letters, which would not arrive as sent",
						errImpersonationHeaders, key)
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
	// The values are bounded, repeats counted (kube-apiserver's filter
	// asks one SubjectAccessReview each, as sent); invalid UTF-8 would be
	// asked about as U+FFFD and forwarded as it is.
	values := 1 + len(c.groups)
	for _, vs := range c.extra {
		values += len(vs)
	}
	if values > MaxValues {
		return nil, fmt.Errorf("%w: %d groups and extra values beside the user, over %d in all",
			errImpersonationHeaders, values-1, MaxValues)
	}
	for _, v := range append(append([]string{c.user, c.uid}, c.groups...), extraValues(c.extra)...) {
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("%w: a value is not valid UTF-8", errImpersonationHeaders)
		}
	}
	return &c, nil
}

// MaxValues bounds a caller's impersonation: the user, its
// groups and extra values (one SubjectAccessReview each).
const MaxValues = 32

func extraValues(extra map[string][]string) []string {
	var out []string
	for _, vs := range extra {
		out = append(out, vs...)
	}
	return out
}

// SubjectAccessReviewer asks kube-apiserver (upstream, through RT: the
// proxy's own credential, which needs create on subjectaccessreviews)
// each question of the impersonation filter, as kube-apiserver's webhook
// authorizer puts it (k8s.io/apiserver's plugin/pkg/authorizer/webhook,
// whose package would link every API group's scheme): the user's name,
// UID, groups and extra, the resource or non-resource attributes, the
// request's selectors. Nothing is cached (kube-apiserver's RBAC answers
// each question afresh); each question has Timeout (DefaultTimeout unless
// set).
type SubjectAccessReviewer struct {
	Upstream *url.URL
	RT       http.RoundTripper
	Timeout  time.Duration
}

var _ Authorizer = SubjectAccessReviewer{}

// DefaultTimeout bounds a question, as kube-apiserver's --request-timeout
// bounds a request.
const DefaultTimeout = 60 * time.Second

// Authorize posts a SubjectAccessReview: Allow when it allows, Deny when
// it denies, else no opinion (which the filter refuses).
func (s SubjectAccessReviewer) Authorize(
	ctx context.Context, a authorizer.Attributes,
) (authorizer.Decision, string, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(s.Timeout, DefaultTimeout))
	defer cancel()
	in := authzv1.SubjectAccessReview{Spec: ReviewSpec(a)}
	in.APIVersion, in.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
	body, err := json.Marshal(in)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	sar := s.Upstream.JoinPath("/apis/authorization.k8s.io/v1/subjectaccessreviews").String()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sar, bytes.NewReader(body))
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.RT.RoundTrip(req)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", errors.New("asking kube-apiserver: upstream unavailable")
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return authorizer.DecisionNoOpinion, "", fmt.Errorf("SubjectAccessReview: HTTP %d (the proxy's credential "+
			"needs create on subjectaccessreviews)", resp.StatusCode)
	}
	var out authzv1.SubjectAccessReview
	if err := json.Unmarshal(b, &out); err != nil {
		return authorizer.DecisionNoOpinion, "", fmt.Errorf("reading the SubjectAccessReview: %w", err)
	}
	switch {
	case out.Status.Denied:
		return authorizer.DecisionDeny, out.Status.Reason, nil
	case out.Status.Allowed:
		return authorizer.DecisionAllow, out.Status.Reason, nil
	}
	return authorizer.DecisionNoOpinion, out.Status.Reason, nil
}

// ReviewSpec is the SubjectAccessReview of a: the webhook authorizer's
// (webhook.go Authorize, resourceAttributesFrom and the selector
// conversions, v0.37.2).
func ReviewSpec(a authorizer.Attributes) authzv1.SubjectAccessReviewSpec {
	var spec authzv1.SubjectAccessReviewSpec
	if u := a.GetUser(); u != nil {
		spec = authzv1.SubjectAccessReviewSpec{User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
		if extra := u.GetExtra(); extra != nil {
			spec.Extra = make(map[string]authzv1.ExtraValue, len(extra))
			for k, v := range extra {
				spec.Extra[k] = v
			}
		}
	}
	if !a.IsResourceRequest() {
		spec.NonResourceAttributes = &authzv1.NonResourceAttributes{Path: a.GetPath(), Verb: a.GetVerb()}
		return spec
	}
	ra := &authzv1.ResourceAttributes{Namespace: a.GetNamespace(), Verb: a.GetVerb(), Group: a.GetAPIGroup(),
		Version:  a.GetAPIVersion(),
		Resource: a.GetResource(), Subresource: a.GetSubresource(), Name: a.GetName()}
	fs, _ := a.GetFieldSelector()
	ra.FieldSelector = fieldSelector(fs)
	ls, _ := a.GetLabelSelector()
	ra.LabelSelector = labelSelector(ls)
	spec.ResourceAttributes = ra
	return spec
}

// fieldSelector is the webhook authorizer's conversion of a request's
// field selector: nil when no requirement converts.
func fieldSelector(fs fields.Requirements) *authzv1.FieldSelectorAttributes {
	var reqs []metav1.FieldSelectorRequirement
	for _, r := range fs {
		req := metav1.FieldSelectorRequirement{Key: r.Field, Values: []string{r.Value}}
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals, selection.In:
			req.Operator = metav1.FieldSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			req.Operator = metav1.FieldSelectorOpNotIn
		default:
			continue // requirements narrow: leaving one out asks for more, never less
		}
		reqs = append(reqs, req)
	}
	if reqs == nil {
		return nil
	}
	return &authzv1.FieldSelectorAttributes{Requirements: reqs}
}

// labelSelector is the webhook authorizer's conversion of a request's
// label selector: nil when no requirement converts.
func labelSelector(ls labels.Requirements) *authzv1.LabelSelectorAttributes {
	var reqs []metav1.LabelSelectorRequirement
	for _, r := range ls {
		req := metav1.LabelSelectorRequirement{Key: r.Key(), Values: r.ValuesUnsorted()}
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			req.Operator = metav1.LabelSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			req.Operator = metav1.LabelSelectorOpNotIn
		case selection.Exists:
			req.Operator = metav1.LabelSelectorOpExists
		case selection.DoesNotExist:
			req.Operator = metav1.LabelSelectorOpDoesNotExist
		default:
			continue // requirements narrow: leaving one out asks for more, never less
		}
		if len(req.Values) == 0 {
			req.Values = nil
		}
		reqs = append(reqs, req)
	}
	if reqs == nil {
		return nil
	}
	return &authzv1.LabelSelectorAttributes{Requirements: reqs}
}

// Filter is kube-apiserver's impersonation filter (k8s.io/apiserver's,
// imported) in front of next, each question within WithDeadline's time.
//   - constrained: constrained impersonation with the classic one as its
//     fallback (kube-apiserver 1.36+, where the ConstrainedImpersonation
//     gate is on by default);
//   - else the classic filter alone (1.35, or a cluster that turned the
//     gate off).
//
// Its refusals are kube-apiserver's Status answers.
func Filter(next http.Handler, a Authorizer, constrained bool) http.Handler {
	a = boundedAuthorizer{a}
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(scheme)
	if constrained {
		return impersonation.WithConstrainedImpersonation(next, a, codecs)
	}
	return impersonation.WithImpersonation(next, a, codecs)
}

// WithAuthenticated is the caller as kube-apiserver's authenticator gives
// it to the filter: a token's user is in system:authenticated.
func WithAuthenticated(u user.Info) user.Info {
	if slices.Contains(u.GetGroups(), user.AllAuthenticated) {
		return u
	}
	return &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(),
		Groups: append(slices.Clone(u.GetGroups()), user.AllAuthenticated), Extra: u.GetExtra()}
}

// asked is the identity the headers name, before kube-apiserver's
// defaults: what forwardable checks before any question is asked.
func (c *Asked) Info() user.Info {
	return &user.DefaultInfo{Name: c.user, UID: c.uid, Groups: c.groups, Extra: c.extra}
}

// ForwardedAs is the identity the filter let the caller take, as the proxy
// forwards it.
//
//   - Without the system:authenticated the filter added: kube-apiserver adds
//     it to an impersonated user itself, and the proxy's credential would
//     need to impersonate the group. One the caller asked for is forwarded.
//   - With the caller under OriginalUserExtra, set last and in place of any
//     spelling of it, so that no extra of the caller's takes its place.
func ForwardedAs(got, caller user.Info, c *Asked) user.Info {
	groups := slices.Clone(got.GetGroups())
	if !slices.Contains(c.groups, user.AllAuthenticated) {
		groups = slices.DeleteFunc(groups, func(g string) bool { return g == user.AllAuthenticated })
	}
	extra := map[string][]string{}
	for k, v := range got.GetExtra() {
		if !strings.EqualFold(k, OriginalUserExtra) {
			extra[k] = v
		}
	}
	extra[OriginalUserExtra] = []string{caller.GetName()}
	return &user.DefaultInfo{Name: got.GetName(), UID: got.GetUID(), Groups: groups, Extra: extra}
}

// deadlineKey carries a request's deadline to the impersonation filter's
// questions: the filter's context is the request's, whose deadline would
// also cut a watch once forwarded.
type deadlineKey struct{}

// WithDeadline bounds the filter's questions about a request by d, and
// leaves the request's own context without a deadline.
func WithDeadline(ctx context.Context, d time.Time) context.Context {
	return context.WithValue(ctx, deadlineKey{}, d)
}

// boundedAuthorizer asks each question within the request's deadline.
type boundedAuthorizer struct{ next Authorizer }

func (b boundedAuthorizer) Authorize(
	ctx context.Context, a authorizer.Attributes,
) (authorizer.Decision, string, error) {
	if d, ok := ctx.Value(deadlineKey{}).(time.Time); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	return b.next.Authorize(ctx, a)
}

// Forwardable refuses what the proxy must not forward as an identity.
//
//   - What kube-apiserver would never produce from a token.
//   - What would change in transit: HTTP/1.1 trims white space around
//     header values, so " system:masters" would arrive as "system:masters".
//   - A system: user or group, unless allowSystem.
func Forwardable(u user.Info, allowSystem bool) error {
	check := func(what, v string) error {
		if v != strings.TrimFunc(v, unicode.IsSpace) {
			return fmt.Errorf("%s %q has leading or trailing white space", what, v)
		}
		for _, c := range v {
			if unicode.IsControl(c) {
				return fmt.Errorf("%s %q has a control character", what, v)
			}
		}
		return nil
	}
	if err := check("username", u.GetName()); err != nil {
		return err
	}
	if !allowSystem && strings.HasPrefix(u.GetName(), "system:") {
		return fmt.Errorf("username %q is a system: identity (--allow-system-identities)", u.GetName())
	}
	if err := check("uid", u.GetUID()); err != nil {
		return err
	}
	for _, g := range u.GetGroups() {
		if err := check("group", g); err != nil {
			return err
		}
		if !allowSystem && strings.HasPrefix(g, "system:") {
			return fmt.Errorf("group %q is a system: identity (--allow-system-identities)", g)
		}
	}
	for k, vs := range u.GetExtra() {
		if err := check("extra key", k); err != nil {
			return err
		}
		for _, v := range vs {
			if err := check("extra value", v); err != nil {
				return err
			}
		}
	}
	return nil
}
