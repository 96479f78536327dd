package kubeapi

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	authzv1 "k8s.io/api/authorization/v1"
)

// The authorizer's reviews, as kubectl auth can-i asks them.

// RulesReview is a SelfSubjectRulesReview of namespace: the rules the
// authorizer chain lists for the client's identity, and whether the list
// is incomplete (an authorizer that cannot list rules, such as a webhook).
func (c *Client) RulesReview(ctx context.Context, namespace string) ([]authzv1.ResourceRule, bool, error) {
	in := authzv1.SelfSubjectRulesReview{Spec: authzv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
	in.APIVersion, in.Kind = "authorization.k8s.io/v1", "SelfSubjectRulesReview"
	var out authzv1.SelfSubjectRulesReview
	if err := c.Post(ctx, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", &in, &out); err != nil {
		return nil, false, err
	}
	return out.Status.ResourceRules, out.Status.Incomplete, nil
}

// SelfAccessReview asks the authorizer chain about the client's identity
// (a SelfSubjectAccessReview).
func (c *Client) SelfAccessReview(ctx context.Context,
	spec authzv1.SelfSubjectAccessReviewSpec) (*authzv1.SubjectAccessReviewStatus, error) {
	in := authzv1.SelfSubjectAccessReview{Spec: spec}
	in.APIVersion, in.Kind = "authorization.k8s.io/v1", "SelfSubjectAccessReview"
	var out authzv1.SelfSubjectAccessReview
	if err := c.Post(ctx, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", &in, &out); err != nil {
		return nil, err
	}
	return &out.Status, nil
}

// SubjectAccessReview asks the authorizer chain about another identity.
func (c *Client) SubjectAccessReview(ctx context.Context,
	spec authzv1.SubjectAccessReviewSpec) (*authzv1.SubjectAccessReviewStatus, error) {
	in := authzv1.SubjectAccessReview{Spec: spec}
	in.APIVersion, in.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
	var out authzv1.SubjectAccessReview
	if err := c.Post(ctx, "/apis/authorization.k8s.io/v1/subjectaccessreviews", &in, &out); err != nil {
		return nil, err
	}
	return &out.Status, nil
}

// AccessReviews asks the access reviews of attrs, concurrency at a time (8
// for 0), and hands each answer to answer(i, status) (one at a time).
// Nothing more is sent after the first failure, which is returned (how
// many were sent: CountRequests).
func (c *Client) AccessReviews(ctx context.Context, attrs []authzv1.ResourceAttributes, concurrency int,
	answer func(i int, st authzv1.SubjectAccessReviewStatus)) error {
	if concurrency <= 0 {
		concurrency = 8
	}
	var g errgroup.Group
	g.SetLimit(concurrency)
	var mu sync.Mutex
	failed := false
	stopped := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return failed || ctx.Err() != nil
	}
	for i := range attrs {
		if stopped() {
			break
		}
		g.Go(func() error {
			if stopped() { // failed while this one waited for its turn
				return nil
			}
			st, err := c.SelfAccessReview(ctx, authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs[i]})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = true
				a := attrs[i]
				return fmt.Errorf("reviewing %s on %s %s/%s: %w", a.Verb, a.Resource, a.Namespace, a.Name, err)
			}
			answer(i, *st)
			return nil
		})
	}
	return g.Wait()
}
