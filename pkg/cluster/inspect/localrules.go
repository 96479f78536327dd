package inspect

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// Say is where LocalRules says why it falls back: Warn, one line; Verbose
// also says the usual reasons (-v).
type Say struct {
	Warn    func(string)
	Verbose bool
}

// LocalRules prepares the evaluation of the RBAC objects across many
// namespaces (access -A, list -A and --project-label): the objects read
// once by reader, with the caller's own rights (4 lists), each identity
// named by the server (SelfSubjectReview), instead of one rules review per
// namespace. It is used only when it gives the server's answer: one rules
// review as each identity, in the namespace first, must be complete (RBAC
// is the only authorizer that lists rules; a webhook's review is
// incomplete) and list the same rules as the objects give. Otherwise, or
// when the objects cannot be read, it says why to Warn and returns nil:
// one rules review per namespace. It says nothing when the first
// identity's review is incomplete (the results say so), and, unless
// Verbose, when the caller may not read the objects (forbidden: the
// usual case of a project's admin, who gets the same answers, more
// slowly). The result has one LocalRules per identity, in order; the
// second is --diff-as's.
func LocalRules(
	ctx context.Context, say Say, reader RBACReader, first string, ids ...RulesClient,
) []rbaceval.LocalRules {
	warn, verbose := say.Warn, say.Verbose
	fallback := func(why string) []rbaceval.LocalRules {
		if ctx.Err() != nil {
			return nil // Ctrl-C: the caller says it
		}
		warn(why + ": one rules review per namespace")
		return nil
	}
	// The review, the objects and who each identity is, at once: one
	// round trip (where the review says incomplete, the objects were read
	// for nothing: 4 requests in that same round trip).
	type who struct {
		ui  *authnv1.UserInfo
		err error
	}
	whos := make([]who, len(ids))
	var served []authzv1.ResourceRule
	var incomplete bool
	var reviewErr error
	var wg sync.WaitGroup
	wg.Go(func() { served, incomplete, reviewErr = ids[0].RulesReview(ctx, first) })
	for i, id := range ids {
		wg.Go(func() {
			ui, _, err := id.WhoAmI(ctx)
			whos[i] = who{ui, err}
		})
	}
	snapshot, err := reader.ReadRBAC(ctx, "")
	wg.Wait()
	if Masters(whos[0].ui) && (len(ids) == 1 || Masters(whos[1].ui)) {
		// kube-apiserver's first authorizer, before any of its
		// configured chain (a webhook too), allows system:masters every
		// request; no rules review lists it.
		out := make([]rbaceval.LocalRules, len(ids))
		for i := range out {
			out[i] = rbaceval.Superuser
		}
		return out
	}
	switch {
	case errors.Is(reviewErr, kubeapi.ErrTooLarge):
		return nil // past a bound: the same review, one per namespace, says so and ends the command
	case reviewErr != nil:
		return fallback(fmt.Sprintf("reviewing the rules in %s: %s", logging.Printable(first),
			logging.OneLine(reviewErr.Error(), 200)))
	case incomplete:
		return nil // another authorizer in the chain: the results say so
	}
	if err != nil || snapshot == nil {
		if apiErr := (*kubeapi.APIError)(nil); errors.As(err, &apiErr) && apiErr.Code == http.StatusForbidden &&
			!verbose {
			return nil
		}
		return fallback("the RBAC objects cannot be read (" + logging.OneLine(fmt.Sprint(err), 200) + ")")
	}
	out := make([]rbaceval.LocalRules, len(ids))
	for i, id := range ids {
		var why string
		if out[i], why = checkedLocal(ctx, snapshot, id, i, whos[i].ui, whos[i].err, first, served); why != "" {
			return fallback(why)
		}
	}
	return out
}

// checkedLocal is the i-th identity's rules from the RBAC objects (ui,
// as the server named it), when they give the rules the server reviews in
// first (served, for the first identity); else why not.
func checkedLocal(
	ctx context.Context, snapshot *rbaceval.RBAC, id RulesClient, i int, ui *authnv1.UserInfo, whoErr error,
	first string, served []authzv1.ResourceRule,
) (rbaceval.LocalRules, string) {
	prefix, what := "", ""
	if i > 0 {
		prefix, what = "--diff-as: ", " for --diff-as"
	}
	if whoErr != nil {
		return nil, prefix + "asking who the identity is (" + logging.OneLine(whoErr.Error(), 200) + ")"
	}
	if strings.HasPrefix(ui.Username, "system:node:") || slices.Contains(ui.Groups, "system:nodes") {
		// The Node authorizer allows a node what no rule lists.
		return nil, prefix + "a node's requests are authorized by the Node authorizer, not by rules"
	}
	local := snapshot.Local(ui.Username, ui.Groups)
	if Masters(ui) {
		return local, "" // every request allowed, whatever its review lists
	}
	if i > 0 {
		// The other identity's rules are checked the same way: the
		// chain may list one identity's rules and not another's.
		var incomplete bool
		var err error
		if served, incomplete, err = id.RulesReview(ctx, first); err != nil || incomplete {
			return nil,
				"the RBAC objects do not give the rules the server reviews for --diff-as in " + logging.Printable(first)
		}
	}
	if mine, _ := local(first); !rbaceval.SameRules(mine, served) {
		return nil,
			"the RBAC objects do not give the rules the server reviews" + what + " in " + logging.Printable(first)
	}
	return local, ""
}

// Masters tells whether ui is in system:masters, the group kube-apiserver
// allows every request.
func Masters(ui *authnv1.UserInfo) bool {
	return ui != nil && slices.Contains(ui.Groups, rbaceval.SuperuserGroup)
}
