package serve

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
)

// SudoControllerOptions is sudo-controller.
type SudoControllerOptions struct {
	Kubeconfig     string
	InCluster      bool
	LeaseNamespace string
	Interval       time.Duration
	// WebhookListen, CertFile, KeyFile and ClientCAFile serve the
	// fail-closed authorization webhook.
	WebhookListen, CertFile, KeyFile, ClientCAFile string
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// NewCmdSudoController builds sudo-controller.
func NewCmdSudoController(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &SudoControllerOptions{IOStreams: streams, global: g, LeaseNamespace: "kubectl-impersonate",
		Interval: time.Second}
	cmd := &cobra.Command{
		Use:   "sudo-controller",
		Short: "Run direct mode's grant controller: sudo grants as RBAC without a proxy (Kubernetes 1.36+)",
		Long: `sudo-controller runs time-boxed elevation without the impersonating proxy, on
Kubernetes 1.36 and later (constrained impersonation). While it leads (a Lease:
run two or more replicas), each live SudoGrant is materialised as RBAC that lets
its requester impersonate themselves with the grant's group
(impersonate:user-info) for the requested role's verbs in the grant's namespace
(impersonate-on:user-info:VERB), and what serves a grant that ended, was revoked
or is gone is removed, every --interval. While no replica runs, ended grants
keep their RBAC: direct mode is fail-open then (docs/elevation.md has the lag).
The controller's credential needs deploy/sudo/controller.yaml's RBAC.

With --authorization-webhook-listen, every replica also serves kube-apiserver
an authorization webhook (deploy/sudo/authorization-config.yaml: before RBAC,
failurePolicy Deny, asked only about requests carrying a sudo: group). It
denies such a request unless it names, in the extra
kubectl-impersonate.io/sudo-grant, a grant of its user that counts now, and
never allows: RBAC decides the rest. Direct mode is then fail-closed: a new
request under an ended or revoked grant is refused once the replica sees it
(streams opened before run on), and while no replica answers, every elevated
request is refused (self-managed clusters: it needs kube-apiserver's
--authorization-config). Give --client-ca-file a CA of its own for
kube-apiserver's client certificate: docs/elevation.md has the bounds.`,
		Example: `  # In the cluster (deploy/sudo/controller.yaml)
  kubectl-impersonate sudo-controller --in-cluster

  # From a machine, with its own credential
  kubectl-impersonate sudo-controller --kubeconfig=controller.kubeconfig --lease-namespace=kubectl-impersonate

  # Fail-closed: also the authorization webhook kube-apiserver asks
  kubectl-impersonate sudo-controller --in-cluster --authorization-webhook-listen=:8443 \
    --tls-cert-file=/tls/tls.crt --tls-private-key-file=/tls/tls.key --client-ca-file=/tls/apiserver-ca.crt`,
		Args: cobra.NoArgs,
		RunE: g.RunE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "Kubeconfig of the controller's own credential")
	f.BoolVar(&o.InCluster, "in-cluster", false, "Use the pod's service account as the controller's credential")
	f.StringVar(&o.LeaseNamespace, "lease-namespace", o.LeaseNamespace, "Namespace of the Lease the replicas elect "+
		"a leader with")
	f.DurationVar(&o.Interval, "interval", o.Interval, "How often the leader reconciles grants and their RBAC")
	f.StringVar(&o.WebhookListen, "authorization-webhook-listen", "", "Address to serve the fail-closed "+
		"authorization webhook on (HOST:PORT; off when empty)")
	f.StringVar(&o.CertFile, "tls-cert-file", "", "The webhook's serving certificate (PEM)")
	f.StringVar(&o.KeyFile, "tls-private-key-file", "", "The webhook's serving key (PEM)")
	f.StringVar(&o.ClientCAFile, "client-ca-file", "", "When set, the webhook requires a client certificate "+
		"signed by these CAs (kube-apiserver's, from its webhook kubeconfig)")
	return cmd
}

// Complete routes client-go's log lines to stderr.
func (o *SudoControllerOptions) Complete(context.Context, []string) error {
	cmdutil.RouteKlog(o.ErrOut, true)
	return nil
}

// Validate checks the flags.
func (o *SudoControllerOptions) Validate() error {
	switch {
	case o.InCluster == (o.Kubeconfig != ""):
		return errors.New("give exactly one of --in-cluster and --kubeconfig for the controller's own credential")
	case o.LeaseNamespace == "":
		return errors.New("--lease-namespace is required: the namespace of the replicas' Lease")
	case o.Interval < 100*time.Millisecond:
		return errors.New("--interval must be at least 100ms")
	case o.WebhookListen != "" && (o.CertFile == "" || o.KeyFile == ""):
		return errors.New("--authorization-webhook-listen serves TLS: give --tls-cert-file and --tls-private-key-file")
	case o.WebhookListen == "" && (o.CertFile != "" || o.KeyFile != "" || o.ClientCAFile != ""):
		return errors.New("--tls-cert-file, --tls-private-key-file and --client-ca-file are the webhook's: " +
			"give --authorization-webhook-listen too")
	}
	return nil
}

// Run runs the controller until ctx ends.
func (o *SudoControllerOptions) Run(ctx context.Context) error {
	return o.global.APIServer.RunSudoController(ctx, kubecode.SudoControllerConfig{Kubeconfig: o.Kubeconfig,
		InCluster: o.InCluster, LeaseNamespace: o.LeaseNamespace, Interval: o.Interval, WebhookListen: o.WebhookListen,
		CertFile: o.CertFile, KeyFile: o.KeyFile, ClientCAFile: o.ClientCAFile, Log: o.ErrOut})
}

// NeedsAPIServer: the controller links client-go's typed clients.
func (o *SudoControllerOptions) NeedsAPIServer() bool { return true }
