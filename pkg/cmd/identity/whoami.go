package identity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/inspect"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/kuberc"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// WhoAmIOptions is the whoami command.
type WhoAmIOptions struct {
	Kube   *cmdutil.KubeFlags
	Output *cmdutil.OutputFlags
	client selfSubjectReviewer
	// tokenSource describes the current user's cached token (nil when the
	// user does not run this plugin); it reads the local cache only.
	tokenSource func(ctx context.Context) *session.TokenSource
	// kubercHint says, when the kuberc refuses the user's plugin, why
	// and how to fix it (nil in tests).
	kubercHint func()
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// WhoAmIResult is what whoami prints with -o json|yaml.
type WhoAmIResult struct {
	APIVersion  string               `json:"selfSubjectReviewVersion"`
	Username    string               `json:"username"`
	UID         string               `json:"uid,omitempty"`
	Groups      []string             `json:"groups"`
	Extra       map[string][]string  `json:"extra,omitempty"`
	TokenSource *session.TokenSource `json:"tokenSource,omitempty"`
}

// NewCmdWhoAmI builds whoami.
func NewCmdWhoAmI(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &WhoAmIOptions{IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show who the API server says you are (SelfSubjectReview), and where your token comes from",
		Long: `whoami asks the API server for the identity it gives your credentials
(SelfSubjectReview v1, falling back to v1beta1 and v1alpha1): username, UID,
groups and extra; with --as/--as-group, the impersonated identity. When the
kubeconfig user runs this plugin, it also shows where the token comes from:
issuer, client, grant, exchange, cache storage and expiry. No token is printed.`,
		Example: `  kubectl impersonate whoami
  kubectl impersonate whoami --context=prod -o yaml
  # As another user or group (impersonation headers; needs the impersonate permission)
  kubectl impersonate whoami --as=bob@example.com --as-group=oidc:developers`,
		Args: cobra.NoArgs,
		RunE: g.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags(), g.Env)
	o.Kube.RegisterCompletions(cmd)
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "a table")
	return cmd
}

// Complete builds the client from the kubeconfig, and the token lookup.
func (o *WhoAmIOptions) Complete(ctx context.Context, args []string) error {
	var err error
	if o.client, err = o.Kube.APIClient(); err != nil {
		return err
	}
	o.kubercHint = func() { warnKuberc(o.ErrOut, o.Kube.ExecCommand(), o.global.Getenv) }
	o.tokenSource = func(ctx context.Context) *session.TokenSource {
		_, ts, err := gatedToken(ctx, o.Kube, o.global.Getenv)
		if errors.Is(err, session.ErrNotOurs) {
			return nil
		}
		warnKuberc(o.ErrOut, o.Kube.ExecCommand(), o.global.Getenv)
		return ts
	}
	return nil
}

// ValidateFlags checks -o, before anything is read.
func (o *WhoAmIOptions) ValidateFlags() error { return o.Output.Validate() }

// Run asks the API server.
func (o *WhoAmIOptions) Run(ctx context.Context) error {
	ssr, version, err := o.client.SelfSubjectReview(ctx)
	if err != nil {
		if o.kubercHint != nil {
			o.kubercHint() // the kuberc may be why: say how to fix it
		}
		return err
	}
	ui := &ssr.Status.UserInfo
	res := WhoAmIResult{APIVersion: "authentication.k8s.io/" + version, Username: ui.Username, UID: ui.UID,
		Groups: ui.Groups, Extra: inspect.ExtraOf(ui.Extra)}
	if o.tokenSource != nil {
		res.TokenSource = o.tokenSource(ctx)
	}
	// -o json|yaml|jsonpath: the SelfSubjectReview, exactly as kubectl auth
	// whoami prints it; the cached token's description rides in annotations.
	return o.Output.Print(o.Out, annotated(ssr, res.TokenSource), func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintf(tw, "ATTRIBUTE\tVALUE\n")
		fmt.Fprintf(tw, "Username\t%s\n", logging.Printable(res.Username))
		if res.UID != "" {
			fmt.Fprintf(tw, "UID\t%s\n", logging.Printable(res.UID))
		}
		fmt.Fprintf(tw, "Groups\t%s\n", "["+logging.Printable(strings.Join(res.Groups, " "))+"]")
		keys := make([]string, 0, len(res.Extra))
		for k := range res.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(tw, "Extra: %s\t%s\n", logging.Printable(k), logging.Printable(fmt.Sprint(res.Extra[k])))
		}
		if ts := res.TokenSource; ts != nil {
			fmt.Fprintf(tw, "Token issuer\t%s\n", logging.Printable(ts.Issuer))
			fmt.Fprintf(tw, "Token client\t%s\n", logging.Printable(ts.ClientID))
			fmt.Fprintf(tw, "Token grant\t%s\n", logging.Printable(ts.GrantType))
			if ts.Exchange != "" {
				fmt.Fprintf(tw, "Token exchange\t%s\n", logging.Printable(ts.Exchange))
			}
			fmt.Fprintf(tw, "Token cache\t%s\n", ts.Storage)
			if ts.Cached {
				fmt.Fprintf(tw, "Token expires\t%s (%s)\n", ts.Expiry.Local().Format(time.RFC3339),
					time.Until(ts.Expiry).Round(time.Second))
			}
		}
		_ = tw.Flush()
	})
}

// warnKuberc says when kubectl (>= 1.35) refuses to run command as a
// credential plugin under its kuberc policy, which this command's own
// client applies too, and how to fix it.
func warnKuberc(w io.Writer, command string, getenv func(string) string) {
	path, off, err := kuberc.Path(getenv)
	if err != nil || off || command == "" {
		return
	}
	if v, err := kuberc.Check(path, command); err == nil && (v == kuberc.NotListed || v == kuberc.DenyAll) {
		logging.Noticef(w, "kubectl refuses to run %s: the credentialPluginPolicy of %s does not allow it; run "+
			"\"kubectl impersonate setup --write-kuberc ...\" with your setup flags, or add it to "+
			"credentialPluginAllowlist", command, path)
	}
}

// TokenAnnotationPrefix prefixes the annotations whoami -o json adds to the
// SelfSubjectReview: the current user's cached token, as this plugin has it.
const TokenAnnotationPrefix = "kubectl-impersonate.io/token-"

// annotated is the API server's SelfSubjectReview as kubectl auth whoami
// prints it (the server's metadata kept), with ts (if any) under
// metadata.annotations.
func annotated(in *authnv1.SelfSubjectReview, ts *session.TokenSource) *authnv1.SelfSubjectReview {
	ssr := in.DeepCopy()
	// Ours alone under our prefix: never a server's (or anyone's) claim to be.
	maps.DeleteFunc(ssr.Annotations, func(k, _ string) bool { return strings.HasPrefix(k, TokenAnnotationPrefix) })
	if ts == nil {
		return ssr
	}
	a := map[string]string{TokenAnnotationPrefix + "issuer": ts.Issuer, TokenAnnotationPrefix + "client": ts.ClientID,
		TokenAnnotationPrefix + "grant": ts.GrantType, TokenAnnotationPrefix + "exchange": ts.Exchange,
		TokenAnnotationPrefix + "cache": ts.Storage}
	if ts.Cached {
		a[TokenAnnotationPrefix+"expiry"] = ts.Expiry.UTC().Format(time.RFC3339)
	}
	for k, v := range a {
		if v == "" {
			delete(a, k)
		}
	}
	if len(a) > 0 && ssr.Annotations == nil {
		ssr.Annotations = map[string]string{}
	}
	maps.Copy(ssr.Annotations, a)
	return ssr
}
