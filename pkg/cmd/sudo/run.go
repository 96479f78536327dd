package sudo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// GrantEnv names the grant a command runs under, for its prompt.
const GrantEnv = "KUBECTL_IMPERSONATE_SUDO_GRANT"

// RunOptions is sudo -- COMMAND and sudo shell: a command run under one of
// the caller's live grants, through the impersonating proxy.
type RunOptions struct {
	base
	Grant   string
	Direct  bool
	Command []string
	global  *cmdutil.GlobalOptions
	now     func() time.Time
	flags   *pflag.FlagSet
}

// bindRun binds what sudo -- COMMAND and sudo shell share.
func (o *RunOptions) bindRun(cmd *cobra.Command, g *cmdutil.GlobalOptions) {
	// No --command-timeout by default: a shell lasts as long as it lasts
	// (the grant's end is the proxy's to enforce).
	o.Kube = cmdutil.NewKubeFlagsTimeout(cmd.Flags(), g.Env, 0)
	o.flags = cmd.Flags()
	o.Kube.RegisterCompletions(cmd)
	cmd.Flags().StringVar(&o.Grant, "grant", "", "The grant to run under (default: your one live grant in "+
		"the namespace)")
	cmd.Flags().BoolVar(&o.Direct, "direct", false, "Direct mode (no proxy, Kubernetes 1.36+, sudo-controller "+
		"running): impersonate yourself with the grant's group and extras, which its RBAC allows")
}

func newCmdShell(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RunOptions{base: base{IOStreams: streams}, global: g, now: time.Now}
	cmd := &cobra.Command{
		Use:   "shell",
		Short: "Start your shell with kubectl, helm, k9s or any client under a live grant",
		Long: `shell starts your shell ($SHELL; %COMSPEC% on Windows) with KUBECONFIG set to a
kubeconfig of the current context that asks the impersonating proxy for one of
your live grants (kubectl's as and as-user-extra: yourself and
kubectl-impersonate.io/sudo-grant=NAMESPACE/NAME), in the grant's namespace.
Every client that reads KUBECONFIG works under the grant until it ends; the
proxy refuses what comes after. The kubeconfig is removed when the shell ends.`,
		Example: `  kubectl impersonate sudo shell -n payments
  kubectl impersonate sudo shell -n payments --grant sudo-7x2kq`,
		Args: cobra.NoArgs,
		RunE: g.RunE(o),
	}
	o.bindRun(cmd, g)
	return cmd
}

// connectionFlags are kubectl's flags the command's kubeconfig would not
// keep (it is the context's own, with --context and --server): given, the
// grant would be checked on another cluster or identity than the command
// uses.
var connectionFlags = []string{"cluster", "user", "token", "username", "password", "certificate-authority",
	"client-certificate", "client-key", "tls-server-name", "insecure-skip-tls-verify", "as", "as-group", "as-uid",
	"as-user-extra", "proxy-url"}

// Validate refuses the connection flags the command's kubeconfig would
// not keep.
func (o *RunOptions) Validate() error {
	for _, n := range connectionFlags {
		if f := o.flags.Lookup(n); f != nil && f.Changed {
			return fmt.Errorf("--%s is not kept in the command's kubeconfig: choose a context that has it "+
				"(--context) instead", n)
		}
	}
	return nil
}

// Complete builds the client; the command is the shell when none is given.
func (o *RunOptions) Complete(_ context.Context, args []string) error {
	if len(o.Command) == 0 {
		o.Command = args
	}
	if len(o.Command) == 0 {
		o.Command = []string{shell(o.global.Env)}
	}
	return o.complete()
}

// rawWriter is the stream under w (logging.Raw): the terminal itself.
func rawWriter(w io.Writer) io.Writer {
	if r, ok := logging.Raw(w).(io.Writer); ok {
		return r
	}
	return w
}

// shell is the user's shell.
func shell(getenv func(string) string) string {
	if runtime.GOOS == "windows" {
		if s := getenv("COMSPEC"); s != "" {
			return s
		}
		return "cmd.exe"
	}
	if s := getenv("SHELL"); s != "" {
		return s
	}
	return "/bin/sh"
}

// Run picks the grant, writes the kubeconfig, runs the command and ends
// with its exit code.
func (o *RunOptions) Run(ctx context.Context) error {
	g, err := o.pick(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kubectl-impersonate-sudo-")
	if err != nil {
		return fmt.Errorf("making the command's folder: %w", err)
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg, err := o.kubeconfig(g)
	if err != nil {
		return err
	}
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		return fmt.Errorf("writing the command's kubeconfig: %w", err)
	}
	logging.Noticef(o.ErrOut, "sudo: %s runs under grant %s (%s) until %s, %s from now; the proxy refuses "+
		"what comes after", logging.Printable(o.Command[0]), g.Ref(), logging.Printable(g.Spec.Role),
		g.Ends().UTC().Format(time.RFC3339), until(g.Ends(), o.now()))
	c := exec.CommandContext(ctx, o.Command[0], o.Command[1:]...)
	c.Env = append(slices.DeleteFunc(o.global.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return strings.EqualFold(k, "KUBECONFIG") || strings.EqualFold(k, GrantEnv)
	}), "KUBECONFIG="+kubeconfig, GrantEnv+"="+g.Ref())
	// The child gets the terminal itself, not the plugin's escaping
	// writers: a shell's prompt and job control, k9s's screen.
	c.Stdin, c.Stdout, c.Stderr = o.In, rawWriter(o.Out), rawWriter(o.ErrOut)
	// Stopped (Ctrl-C reaches the child from the terminal too), it is asked
	// to end, then killed; what it left running holds no pipe of ours long.
	c.Cancel = func() error {
		if err := c.Process.Signal(syscall.SIGTERM); err != nil {
			return c.Process.Kill()
		}
		return nil
	}
	c.WaitDelay = 10 * time.Second
	err = c.Run()
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		return cmdutil.ExitCode(max(exit.ExitCode(), 1))
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", o.Command[0], err)
	}
	return nil
}

// pick is the grant to run under: --grant, or the caller's one live grant
// in the namespace.
func (o *RunOptions) pick(ctx context.Context) (*elevation.Grant, error) {
	me, _, err := o.client.WhoAmI(ctx)
	if err != nil {
		return nil, fmt.Errorf("asking who you are: %w", err)
	}
	grants, err := elevation.Grants(ctx, o.client, o.namespace)
	if err != nil {
		return nil, err
	}
	reqs, err := elevation.Requests(ctx, o.client, o.namespace)
	if err != nil {
		return nil, err
	}
	now := o.now()
	var live []elevation.Grant
	for _, g := range grants {
		if g.Spec.Requester != me.Username || (o.Grant != "" && g.Name != o.Grant) {
			continue
		}
		ok, why := elevation.Check(g, elevation.RequestOf(g, reqs), now)
		if o.Grant != "" && !ok {
			return nil, fmt.Errorf("grant %s in %s does not count: %s", o.Grant, o.namespace, why)
		}
		if ok {
			live = append(live, g)
		}
	}
	switch {
	case len(live) == 1:
		return &live[0], nil
	case o.Grant != "":
		return nil, fmt.Errorf("no grant %s of yours in %s (kubectl impersonate sudo status -n %s)", o.Grant,
			o.namespace, o.namespace)
	case len(live) == 0:
		return nil, fmt.Errorf("no live grant of yours in %s: ask for one with kubectl impersonate sudo request -n "+
			"%s --role ROLE --for 30m --reason TEXT", o.namespace, o.namespace)
	}
	names := make([]string, 0, len(live))
	for _, g := range live {
		names = append(names, g.Name)
	}
	return nil, fmt.Errorf("you hold %d live grants in %s (%s): choose one with --grant", len(live), o.namespace,
		strings.Join(names, ", "))
}

// kubeconfig is the current context alone (its paths absolute, as
// loaded), in the grant's namespace, asking for the grant as its user.
func (o *RunOptions) kubeconfig(g *elevation.Grant) (*clientcmdapi.Config, error) {
	raw, err := o.Kube.ClientConfig().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if name := o.Kube.ContextFlag(); name != "" {
		raw.CurrentContext = name
	}
	if err := clientcmdapi.MinifyConfig(&raw); err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	kctx := raw.Contexts[raw.CurrentContext]
	user := raw.AuthInfos[kctx.AuthInfo]
	if user == nil {
		return nil, fmt.Errorf("the context %s has no user", raw.CurrentContext)
	}
	if server := o.Kube.ServerFlag(); server != "" && raw.Clusters[kctx.Cluster] != nil {
		raw.Clusters[kctx.Cluster].Server = server
	}
	me := g.Spec.Requester
	kctx.Namespace = g.Namespace
	user.Impersonate, user.ImpersonateGroups, user.ImpersonateUID = me, nil, ""
	user.ImpersonateUserExtra = map[string][]string{elevation.GrantExtra: {g.Ref()}}
	if o.Direct {
		user.Impersonate, user.ImpersonateGroups, user.ImpersonateUserExtra = elevation.DirectKubeconfigAs(*g)
	}
	return &raw, nil
}
