package privilege

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
)

// RecordOptions is the record command.
type RecordOptions struct {
	Kube *cmdutil.KubeFlags
	// File is where the requests are appended (-o).
	File string
	// Command is the program run and its arguments.
	Command   []string
	namespace string
	upstream  *rest.Config
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// DefaultRecordFile is -o's default.
const DefaultRecordFile = "recording.jsonl"

// NewCmdRecord builds record.
func NewCmdRecord(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RecordOptions{IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:   "record [-o FILE] -- COMMAND [ARGS...]",
		Short: "Run a command against the cluster and record each request it makes, as the cluster authorizes it",
		Long: `record runs COMMAND (kubectl, helm, a Python or JavaScript client, a test
suite) with a kubeconfig of its own, whose one context reaches the selected
context's cluster through an endpoint on 127.0.0.1: the endpoint forwards each
request with the context's own credentials and appends it to FILE as the
cluster's authorizer sees it (verb, API group, resource, subresource,
namespace, name or non-resource URL, and the answer's code), parsed with
kube-apiserver's own request-info code. No audit log access is needed.

FILE holds audit.k8s.io/v1 Event lines, as kube-apiserver's audit log:
record several commands into one file, then run
"kubectl impersonate least-privilege --from FILE".

Only COMMAND reaches the endpoint: it serves TLS with a CA made for this run
and wants a bearer token made for this run, both in COMMAND's kubeconfig
(readable by you alone, removed at the end). The context's own credentials
stay in this process. COMMAND runs in the context's namespace (-n to change
it); a --context, --kubeconfig, --server or --token of its own bypasses the
recording. record exits with COMMAND's exit code; stopped (Ctrl-C, a
hang-up, SIGTERM, --command-timeout), it ends COMMAND's process group
(SIGTERM, then SIGKILL a second later) and removes its kubeconfig.`,
		Example: `  kubectl impersonate record -o ci.jsonl -- kubectl apply -f deploy/
  kubectl impersonate record -o ci.jsonl -n team-a -- helm upgrade --install web ./chart
  kubectl impersonate record -o ci.jsonl -- python3 tests/smoke.py
  kubectl impersonate least-privilege --from ci.jsonl --subject ServiceAccount:ci:deployer`,
		Args: cobra.MinimumNArgs(1),
		RunE: g.RunE(o),
	}
	// A recorded test suite runs as long as it runs: no bound by default.
	o.Kube = cmdutil.NewKubeFlagsTimeout(cmd.Flags(), g.Env, 0)
	o.Kube.RegisterCompletions(cmd)
	cmd.Flags().StringVarP(&o.File, "output", "o", DefaultRecordFile, "The file the requests are appended to "+
		"(audit.k8s.io/v1 Event lines; created readable by you alone)")
	return cmd
}

// Complete reads the command and builds the context's configuration.
func (o *RecordOptions) Complete(_ context.Context, args []string) error {
	o.Command = args
	ns, _, err := o.Kube.ClientConfig().Namespace()
	if err != nil {
		return fmt.Errorf("reading the context's namespace: %w", err)
	}
	o.namespace = ns
	o.upstream, err = o.Kube.Config()
	return err
}

// Validate refuses an empty output name.
func (o *RecordOptions) Validate() error {
	if o.File == "" {
		return errors.New("-o names no file: give the file the requests are appended to")
	}
	return nil
}

// NeedsAPIServer: record parses requests with kube-apiserver's own code.
func (o *RecordOptions) NeedsAPIServer() bool { return true }

// bypassFlags are the child's own flags that make it skip the recording.
var bypassFlags = []string{"--kubeconfig", "--context", "--server", "-s", "--token", "--cluster", "--user"}

// Run starts the endpoint, runs the command against it, and says what it
// recorded.
func (o *RecordOptions) Run(ctx context.Context) error {
	if len(stopSignals) > 0 { // none would relay every signal
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, stopSignals...)
		defer stop()
	}
	noDump() // the command, the same user, may not read this process's memory (the seal's key)
	for _, a := range o.Command[1:] {
		name, _, _ := strings.Cut(a, "=")
		if slices.Contains(bypassFlags, name) {
			logging.Noticef(o.ErrOut, "record: warning: the command's own %s bypasses the recording: leave it out "+
				"(record's --context and -n select the cluster)", name)
		}
	}
	f, err := safefile.OpenAppend("the recording", o.File)
	if err != nil {
		return err
	}
	defer f.Close()
	rc, err := upstream(o.upstream)
	if err != nil {
		return err
	}
	events := &memory{}
	rc.Log, rc.ErrorLog = events, o.ErrOut
	ep, err := o.global.APIServer.StartRecorder(rc)
	if err != nil {
		return err
	}
	code, runErr := o.runChild(ctx, ep)
	closeErr := ep.Close()
	key, err := writeSealed(f, events)
	closeErr = errors.Join(closeErr, err)
	written, refused := ep.Counts()
	logging.Noticef(o.ErrOut, "record: %d requests recorded (%d not seen allowed: refused, or undecided) in %s, "+
		"sealed by %s; next: kubectl impersonate least-privilege --from %s --recording-key %s", written, refused,
		o.File, key, o.File, key)
	if err := errors.Join(runErr, closeErr); err != nil {
		return err
	}
	if code != 0 {
		return cmdutil.ExitCode(code)
	}
	return nil
}

// maxRecording bounds the events record keeps in memory until it seals
// them (a million requests are about 600 MiB).
const maxRecording = 1 << 30

// memory holds the events until the command has ended: it runs as the
// same user, and could write to the file while it runs.
type memory struct{ bytes.Buffer }

func (m *memory) Write(p []byte) (int, error) {
	if m.Len()+len(p) > maxRecording {
		return 0, fmt.Errorf("the recording is over %d MiB", maxRecording>>20)
	}
	return m.Buffer.Write(p)
}

// writeSealed appends events and their seal, signed by a key made for
// this run (its private half never leaves memory), to f, and returns the
// key to verify them with.
func writeSealed(f *os.File, events *memory) (string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("making the recording's key: %w", err)
	}
	b, err := auditlog.Seal(events.Bytes(), priv)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return "", fmt.Errorf("writing the recording: %w", err)
	}
	return auditlog.FormatKey(pub), nil
}

// upstream is the context's server and client-go's transports to it
// (kubeapi.UpstreamTransports), and whether the context impersonates.
func upstream(cfg *rest.Config) (kubecode.RecordConfig, error) {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return kubecode.RecordConfig{}, fmt.Errorf("reading the context's server: %w", err)
	}
	plain, upgrade, err := kubeapi.UpstreamTransports(cfg)
	if err != nil {
		return kubecode.RecordConfig{}, err
	}
	imp := cfg.Impersonate
	return kubecode.RecordConfig{Upstream: u, Transport: plain, UpgradeTransport: upgrade,
		Impersonates: imp.UserName != "" || imp.UID != "" || len(imp.Groups) > 0 || len(imp.Extra) > 0}, nil
}

// childKubeconfig is the command's kubeconfig: one context, the endpoint
// with its one-time CA and token, in namespace.
func childKubeconfig(ep kubecode.Recorder, namespace string) *clientcmdapi.Config {
	e := ep.Endpoint()
	c := clientcmdapi.NewConfig()
	c.Clusters["record"] = &clientcmdapi.Cluster{Server: e.URL, CertificateAuthorityData: e.CAPEM}
	c.AuthInfos["record"] = &clientcmdapi.AuthInfo{Token: e.Token}
	c.Contexts["record"] = &clientcmdapi.Context{Cluster: "record", AuthInfo: "record", Namespace: namespace}
	c.CurrentContext = "record"
	return c
}

// stopGrace is how long the command has to end once record is stopped
// (interrupted, hung up, terminated, or past --command-timeout) before its
// process group is killed: within the watchdog's grace past the timeout,
// so that record itself still removes the command's folder.
const stopGrace = time.Second

// runChild runs the command with its kubeconfig, and returns its exit
// code. Stopped (ctx), it asks the command's process group to end, then
// kills it; the command's folder is removed in every case.
func (o *RecordOptions) runChild(ctx context.Context, ep kubecode.Recorder) (int, error) {
	dir, err := os.MkdirTemp("", "kubectl-impersonate-record-")
	if err != nil {
		return 0, fmt.Errorf("making the command's folder: %w", err)
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*childKubeconfig(ep, o.namespace), kubeconfig); err != nil {
		return 0, fmt.Errorf("writing the command's kubeconfig: %w", err)
	}
	c := exec.Command(o.Command[0], o.Command[1:]...)
	c.Env = childEnv(o.global.Environ(), kubeconfig, filepath.Join(dir, "cache"))
	c.Stdin, c.Stdout, c.Stderr = o.In, o.Out, o.ErrOut
	restore := inGroup(c, o.In)
	if err := c.Start(); err != nil {
		return 0, fmt.Errorf("running %s: %w", o.Command[0], err)
	}
	defer restore()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err = <-done:
		// What the command left running in its group (a server it
		// started, a watch in the background) ends with it.
		terminate(c.Process)
	case <-ctx.Done():
		terminate(c.Process)
		select {
		case err = <-done:
		case <-time.After(stopGrace):
			kill(c.Process)
			err = <-done
		}
	}
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		return max(exit.ExitCode(), 1), nil
	}
	if err != nil {
		return 0, fmt.Errorf("running %s: %w", o.Command[0], err)
	}
	return 0, nil
}

// childEnv is env with the command's kubeconfig and discovery cache (a
// cache of its own: the endpoint's port changes on every run), and
// 127.0.0.1 kept away from any HTTP proxy.
func childEnv(env []string, kubeconfig, cache string) []string {
	out := make([]string, 0, len(env)+4)
	noProxy := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "KUBECONFIG", "KUBECACHEDIR":
			continue
		case "NO_PROXY":
			noProxy[k] = v
			continue
		}
		out = append(out, kv)
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		v := noProxy[k]
		if v != "" {
			v += ","
		}
		out = append(out, k+"="+v+"127.0.0.1,localhost")
	}
	return append(out, "KUBECONFIG="+kubeconfig, "KUBECACHEDIR="+cache)
}
