package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/config"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/install"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/kubeconfig"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/kuberc"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

// SetupOptions is the setup command.
type SetupOptions struct {
	Auth       *settings.AuthOptions
	User       string
	Kubeconfig string
	Context    string
	Write      bool
	// Server, ClusterCA and Cluster write a cluster entry for the context,
	// e.g. an impersonating proxy's URL.
	Server    string
	ClusterCA string
	Cluster   string
	// InteractiveMode is the exec entry's interactiveMode.
	InteractiveMode string
	// WriteKuberc adds the exec command to kubectl's kuberc allowlist
	// when its credential plugin policy is Allowlist.
	WriteKuberc bool
	// WriteCompletion puts kubectl_complete-impersonate beside Krew's link
	// (writeCompletion); alone, it is all setup does.
	WriteCompletion bool
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions

	// ClusterAudiences are CLUSTER=AUDIENCE pairs: one user for a fleet,
	// each cluster's token exchanged for its audience (empty: the login's
	// token).
	ClusterAudiences []string
	// flags are the command's flags (--cluster-audience sets the exchange
	// flags it implies).
	flags *pflag.FlagSet

	// FromKubelogin migrates the kubeconfig's kubelogin users.
	FromKubelogin bool
	// AuthConfig is the cluster's AuthenticationConfiguration, when the
	// user has it: setup checks that it accepts the entry's tokens.
	AuthConfig string

	// Executable is the absolute path of this binary (stubbable for tests).
	Executable string
	// fast is the fast get-token binary next to Executable, when installed.
	fast string
	// krewLink is Krew's stable link to the plugin, when run from Krew's
	// store (it runs the fast binary, which answers "get-token").
	krewLink string
}

// NewCmdSetup builds setup.
func NewCmdSetup(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdSetup(&SetupOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: g, User: "oidc",
		InteractiveMode: "IfAvailable"})
}

// newCmdSetup binds o to the command's flags.
func newCmdSetup(o *SetupOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Print, or --write, the kubeconfig user entry that runs get-token",
		Long: `setup prints the "kubectl config set-credentials" command that makes kubectl
run this plugin, with the flags given (only those that differ from the
defaults), or with --write puts the user entry into the kubeconfig itself.

The entry runs this binary by its absolute path, not "kubectl impersonate":
going through kubectl would add kubectl's own start-up to every command.
Client secrets never go into the kubeconfig: give them to kubectl through
--oidc-client-secret-file, a profile, or $` + credspec.EnvClientSecret + `.`,
		Example: `  # Print the command
  kubectl impersonate setup --oidc-issuer-url=https://dex.example.com --oidc-client-id=kubernetes --oidc-extra-scope=groups

  # Write the user "alice" into ~/.kube/config and use it in the context "prod"
  kubectl impersonate setup --profile=tenant-a --write --user=alice --context=prod

  # A context "prod-proxy" that reaches the cluster through kubectl-impersonate proxy
  kubectl impersonate setup --profile=tenant-a --write --user=alice --context=prod-proxy \
    --server=https://k8s-proxy.example.com:8443 --cluster-certificate-authority=proxy-ca.crt`,
		Args: cobra.NoArgs,
		RunE: o.global.RunE(o),
	}
	o.Auth.AddFlags(cmd.Flags())
	cmd.SetUsageFunc(cmdutil.GroupedUsage)
	cmd.Flags().BoolVar(&o.Write, "write", false, "Write the user entry into the kubeconfig instead of printing the "+
		"command")
	cmd.Flags().StringVar(&o.User, "user", o.User, "Name of the kubeconfig user entry")
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "Kubeconfig file to write (default: $KUBECONFIG's first "+
		"file, else ~/.kube/config)")
	cmd.Flags().StringVar(&o.Context, "context", "", "With --write, make this existing context use the user entry")
	cmd.Flags().StringVar(&o.Server, "server", "", "With --write and --context, also point the context at this API "+
		"server URL (e.g. an impersonating proxy), creating the context if needed")
	cmd.Flags().StringVar(&o.ClusterCA, "cluster-certificate-authority", "", "With --server, the CA file that signed "+
		"its serving certificate")
	cmd.Flags().StringVar(&o.Cluster, "cluster", "", "With --server, the name of the cluster entry (default: the "+
		"context's name)")
	cmd.Flags().StringVar(&o.InteractiveMode, "exec-interactive-mode", o.InteractiveMode, "interactiveMode of the "+
		"exec entry: IfAvailable, Never (robots, CI: never prompt) or Always")
	cmd.Flags().BoolVar(&o.FromKubelogin, "from-kubelogin", false, "Migrate the kubeconfig's users that run "+
		"int128/kubelogin (kubectl oidc-login get-token): show each change, and with --write apply it after a backup "+
		"of the file (its mode kept, other entries untouched); flags with no equivalent are reported, secrets move "+
		"to 0600 files")
	cmd.Flags().StringVar(&o.AuthConfig, "authentication-config", "", "The cluster's kube-apiserver "+
		"AuthenticationConfiguration, if you have it: setup checks that it accepts this entry's tokens (issuer, "+
		"audience) and says what to change")
	cmd.Flags().StringArrayVar(&o.ClusterAudiences, "cluster-audience", nil,
		"With --write: CLUSTER=AUDIENCE, repeatable: one user for a fleet of clusters, logged in once; each named "+
			"cluster's entry gets the exec extension "+credspec.ExecExtensionName+" with its audience (empty: the "+
			"login's token itself), its contexts use the user, and the "+
			"user exchanges the login's token for each cluster's audience (RFC 8693: implies "+
			"--exchange=token-exchange "+
			"--exchange-audience-from-cluster)")
	o.flags = cmd.Flags()
	cmd.Flags().BoolVar(&o.WriteCompletion, "write-completion", false, "Put kubectl_complete-impersonate beside "+
		"Krew's link to the plugin, so that kubectl (>= 1.26) completes \"kubectl impersonate ...\" (Krew links one "+
		"executable per plugin); alone, nothing else is written")
	cmd.Flags().BoolVar(&o.WriteKuberc, "write-kuberc", false, "Add the exec command to kubectl's kuberc allowlist "+
		"($KUBERC or ~/.kube/kuberc) when its credentialPluginPolicy is Allowlist (kubectl >= 1.35); the file's "+
		"other preferences and mode are kept")
	return cmd
}

// Complete resolves the executable, the settings and the paths.
func (o *SetupOptions) Complete(ctx context.Context, args []string) error {
	if len(o.ClusterAudiences) > 0 && o.flags != nil {
		// A fleet's user: the exchange whose audience each cluster names.
		if o.flags.Changed("exchange") && o.Auth.Exchange != credspec.ExchangeTokenExchange {
			return fmt.Errorf("--cluster-audience exchanges the login's token per cluster (--exchange=%s), not with "+
				"--exchange=%s", credspec.ExchangeTokenExchange, o.Auth.Exchange)
		}
		for name, value := range map[string]string{"exchange": credspec.ExchangeTokenExchange,
			"exchange-audience-from-cluster": "true"} {
			if err := o.flags.Set(name, value); err != nil {
				return fmt.Errorf("--cluster-audience: setting --%s: %w", name, err)
			}
		}
	}
	if err := o.Auth.Complete(o.global.Getenv, cmdutil.Notifier(o.ErrOut)); err != nil {
		return err
	}
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the path of this binary: %w", err)
		}
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		// setup --authentication-config runs in the apiserver binary: the
		// entry runs the full one beside it.
		if strings.TrimSuffix(filepath.Base(exe), ".exe") == install.APIServerBinaryName {
			full, ok := install.Sibling(exe, install.FullBinaryName)
			if !ok {
				return fmt.Errorf("%s is not next to %s: install the plugin's binaries side by side (the entry runs "+
					"it)", install.Exe(install.FullBinaryName), exe)
			}
			exe = full
		}
		o.Executable = exe
	}
	if fast, ok := install.Sibling(o.Executable, install.FastBinaryName); ok {
		o.fast = fast
	}
	if link, ok := install.KrewLink(o.Executable, o.global.Getenv); ok {
		o.krewLink = link
	}
	// The kubeconfig records the CA's absolute path; the cluster entry is
	// named after the context unless --cluster says otherwise.
	if o.ClusterCA != "" {
		abs, err := filepath.Abs(o.ClusterCA)
		if err != nil {
			return fmt.Errorf("--cluster-certificate-authority: %w", err)
		}
		o.ClusterCA = abs
	}
	if o.Server != "" && o.Cluster == "" {
		o.Cluster = o.Context
	}
	return nil
}

// Validate checks the settings; it changes nothing.
func (o *SetupOptions) Validate() error {
	if o.completionOnly() {
		return nil
	}
	if o.FromKubelogin {
		if o.Context != "" || o.Server != "" || o.AuthConfig != "" || o.Auth.Args() != nil {
			return errors.New("--from-kubelogin takes the settings from each kubelogin entry: give only --kubeconfig " +
				"and --write")
		}
		return nil
	}
	if o.User == "" {
		return errors.New("--user must not be empty")
	}
	if len(o.ClusterAudiences) > 0 {
		if !o.Write || o.Context != "" || o.Server != "" {
			return errors.New("--cluster-audience needs --write, and names the clusters itself: not with --context " +
				"or --server")
		}
		if _, err := parseClusterAudiences(o.ClusterAudiences); err != nil {
			return err
		}
	}
	switch o.InteractiveMode {
	case "IfAvailable", "Never", "Always":
	default:
		return fmt.Errorf("--exec-interactive-mode %q is not one of IfAvailable, Never, Always", o.InteractiveMode)
	}
	if o.Context != "" && !o.Write {
		return errors.New("--context takes effect with --write only")
	}
	if o.Server == "" && (o.ClusterCA != "" || o.Cluster != "") {
		return errors.New("--cluster and --cluster-certificate-authority take effect with --server only")
	}
	if o.Server != "" {
		if o.Context == "" {
			return errors.New("--server needs --write and --context: the context to point at it")
		}
		if u, err := url.Parse(o.Server); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("--server %q is not an https:// URL: bearer tokens go to it", o.Server)
		}
		if o.ClusterCA != "" {
			if _, err := os.Stat(o.ClusterCA); err != nil {
				return fmt.Errorf("--cluster-certificate-authority: %w", err)
			}
		}
	}
	// An entry that names a profile may not add what an exec entry may not
	// choose: get-token would refuse the entry setup writes.
	if o.Auth.Profile != "" {
		for _, a := range o.Auth.Args() {
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if name != "profile" && !settings.IsExecEntrySafe(name) {
				return fmt.Errorf("--%s with --profile: get-token would refuse it from the exec entry "+
					"(docs/security.md); put it in profile %q instead", name, o.Auth.Profile)
			}
		}
	}
	return o.Auth.Validate()
}

// ExecConfig is the exec entry for the settings: Krew's link when
// installed by Krew (the store path changes with every upgrade), else the
// fast get-token binary when it is installed next to this one (it takes
// get-token's flags), else this binary's get-token.
func (o *SetupOptions) ExecConfig() *clientcmdapi.ExecConfig { return o.execFor(o.Auth.Args()) }

// execFor is the exec entry that runs get-token with these flags.
func (o *SetupOptions) execFor(flags []string) *clientcmdapi.ExecConfig {
	command, args := o.Executable, append([]string{"get-token"}, flags...)
	switch {
	case o.krewLink != "":
		command = o.krewLink
	case o.fast != "":
		command, args = o.fast, flags
	}
	return &clientcmdapi.ExecConfig{
		Command:            command,
		Args:               args,
		APIVersion:         execcred.APIVersionV1,
		InteractiveMode:    clientcmdapi.ExecInteractiveMode(o.InteractiveMode),
		ProvideClusterInfo: true,
	}
}

// completionOnly: --write-completion is all the command line asks.
func (o *SetupOptions) completionOnly() bool {
	return o.WriteCompletion && o.Auth.Args() == nil && !o.FromKubelogin && !o.Write && o.AuthConfig == ""
}

// Run prints or writes the entry.
func (o *SetupOptions) Run(context.Context) error {
	if o.WriteCompletion {
		if err := o.writeCompletion(); err != nil || o.completionOnly() {
			return err
		}
	}
	if o.Auth.SecretOnCommandLine() || (o.Auth.ClientSecret != "" && o.Auth.ClientSecretFile == "") {
		logging.Noticef(o.ErrOut, "the client secret is not written into the kubeconfig: kubectl must find it in $%s, "+
			"or use --%s or a profile", credspec.EnvClientSecret, credspec.FlagClientSecretFile)
	}
	if o.FromKubelogin {
		if err := o.fromKubelogin(); err != nil || !o.Write {
			return err
		}
		return o.kuberc(o.ExecConfig().Command)
	}
	if err := o.checkAuthConfig(); err != nil {
		return err
	}
	exec := o.ExecConfig()
	profile, settingsOf, err := o.profileFor()
	if err != nil {
		return err
	}
	if profile != "" {
		exec = o.execFor([]string{"--profile=" + profile})
		if err := o.writeProfile(profile, settingsOf); err != nil {
			return err
		}
	}
	if !o.Write {
		args := []string{"kubectl", "config", "set-credentials", o.User,
			"--exec-api-version=" + exec.APIVersion,
			"--exec-interactive-mode=" + string(exec.InteractiveMode),
			"--exec-provide-cluster-info=true",
			"--exec-command=" + exec.Command,
		}
		for _, a := range exec.Args {
			args = append(args, "--exec-arg="+a)
		}
		fmt.Fprintln(o.Out, strings.Join(logging.ShellQuoteArgs(args), " \\\n  "))
		fmt.Fprintf(o.Out, "\n# then: kubectl config set-context --current --user=%s\n", logging.ShellQuote(o.User))
		fmt.Fprintf(o.Out, "# kubectl >= 1.35 with credentialPluginPolicy: Allowlist in its kuberc runs only listed "+
			"plugins;\n# this entry allows it (setup --write-kuberc adds it):\n#   credentialPluginAllowlist:\n#   - "+
			"name: %s\n", exec.Command)
		return o.kuberc(exec.Command)
	}
	if err := o.write(exec); err != nil {
		return err
	}
	return o.kuberc(exec.Command)
}

// profileFor decides whether the entry's settings must go into a profile:
// when the user has locked exec entries (a kuberc that allowlists the
// plugin, or will once --write-kuberc runs; or allowed servers), get-token
// refuses the settings an exec entry may not choose (docs/security.md), so
// setup puts them all into a profile named after the user entry and the
// entry says only --profile. It returns "" when the args can stay.
func (o *SetupOptions) profileFor() (string, map[string][]string, error) {
	if o.Auth.Profile != "" {
		return "", nil, nil
	}
	values, unsafe := profileValues(o.Auth.Args())
	if !unsafe {
		return "", nil, nil
	}
	locked := len(o.Auth.AllowedServers) > 0
	if !locked {
		var err error
		if locked, err = o.kubercLocks(); err != nil {
			return "", nil, err
		}
	}
	if !locked {
		return "", nil, nil
	}
	return o.User, values, nil
}

// kubercLocks tells whether a kuberc allowlists the plugin, or will once
// --write-kuberc has added it.
func (o *SetupOptions) kubercLocks() (bool, error) {
	path, err := settings.KubercLocks(o.global.Getenv, nil)
	if err != nil || path != "" {
		return path != "", err
	}
	if o.WriteKuberc {
		if path, off, err := kuberc.Path(o.global.Getenv); err == nil && !off {
			v, _ := kuberc.Check(path, o.ExecConfig().Command)
			return v == kuberc.NotListed, nil
		}
	}
	return false, nil
}

// profileValues are get-token flags (--name=value) as profile values, and
// whether any of them is one a locked exec entry may not set.
func profileValues(args []string) (map[string][]string, bool) {
	values := map[string][]string{}
	unsafe := false
	for _, a := range args {
		name, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if settings.IsFileSetting(name) && !filepath.IsAbs(v) && !strings.HasPrefix(v, "~/") {
			if abs, err := filepath.Abs(v); err == nil {
				v = abs // a profile's paths are absolute: kubectl runs it from anywhere
			}
		}
		values[name] = append(values[name], v)
		unsafe = unsafe || !settings.IsExecEntrySafe(name)
	}
	return values, unsafe
}

// writeProfile writes (with --write) or prints the profile setup made.
func (o *SetupOptions) writeProfile(name string, values map[string][]string) error {
	path, err := config.DefaultPath(o.global.Getenv)
	if err != nil {
		return err
	}
	if !o.Write {
		b, err := yaml.Marshal(map[string]any{"profiles": map[string]any{name: values}})
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "# exec entries are locked (docs/security.md): add this profile to %s\n%s\n", path, b)
		return nil
	}
	changed, err := config.SetProfile(path, name, values)
	if errors.Is(err, config.ErrProfileDiffers) {
		return fmt.Errorf("%w: choose another --user, or give --profile=%s to use it as it is", err, name)
	}
	if err != nil {
		return err
	}
	if changed {
		fmt.Fprintf(o.Out, "Wrote the profile %q to %s: exec entries are locked (docs/security.md), so its settings "+
			"live there, not in the kubeconfig.\n", name, path)
	}
	return nil
}

// checkAuthConfig reads the cluster's AuthenticationConfiguration
// (--authentication-config) as kube-apiserver validates it and says, in
// one line with the fix, when it would refuse the tokens this entry gets:
// no entry for the issuer, or an audience the tokens do not carry. Tokens
// whose aud setup cannot know (access tokens, exchanged tokens without
// --exchange-audience) are checked for the issuer only; CloudSigma's are
// not the provider's.
func (o *SetupOptions) checkAuthConfig() error {
	a := o.Auth
	if o.AuthConfig == "" || a.Exchange == credspec.ExchangeCloudSigma {
		return nil
	}
	var aud string
	switch {
	case a.GrantType == credspec.GrantIdentityPlatform:
		aud = credspec.IdentityPlatformProject(a.IssuerURL)
	case a.Exchange == credspec.ExchangeTokenExchange && len(a.ExchangeAudiences) == 1:
		aud = a.ExchangeAudiences[0]
	case a.Exchange == credspec.ExchangeNone && !a.UseAccessToken && a.GrantType != credspec.GrantClientCredentials:
		// An ID token's aud. Client credentials mostly get no ID token, and
		// kubectl then gets the access token, whose aud the provider chooses.
		aud = a.ClientID
	}
	note, err := o.global.APIServer.CheckAuthConfig(o.AuthConfig, a.IssuerURL, aud)
	if err != nil {
		return fmt.Errorf("--authentication-config: %w", err)
	}
	if note != "" {
		logging.Notice(o.ErrOut, note)
	}
	return nil
}

// NeedsAPIServer: --authentication-config is checked with kube-apiserver's
// configuration types.
func (o *SetupOptions) NeedsAPIServer() bool { return o.AuthConfig != "" }

// kuberc reports kubectl's credential plugin policy for command, and with
// --write-kuberc allows it.
func (o *SetupOptions) kuberc(command string) error {
	path, off, err := kuberc.Path(o.global.Getenv)
	if err != nil || off {
		return err
	}
	if !o.WriteKuberc {
		v, err := kuberc.Check(path, command)
		if err != nil {
			return err
		}
		if v == kuberc.NotListed || v == kuberc.DenyAll {
			logging.Noticef(o.ErrOut, "kubectl will refuse to run %s: %s has credentialPluginPolicy %s without it; "+
				"run setup again with --write-kuberc", command, path,
				map[kuberc.Verdict]string{kuberc.NotListed: "Allowlist", kuberc.DenyAll: "DenyAll"}[v])
		}
		return nil
	}
	v, changed, err := kuberc.Allow(path, command)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case changed:
		fmt.Fprintf(o.Out, "Added %s to the credential plugin allowlist of %s.\n", command, path)
	case v == kuberc.Listed:
		fmt.Fprintf(o.Out, "%s already allows %s.\n", path, command)
	default:
		fmt.Fprintf(o.Out, "%s sets no credential plugin policy: kubectl runs every plugin, nothing to add.\n", path)
	}
	return nil
}

// clusterAudience is one --cluster-audience.
type clusterAudience struct{ cluster, audience string }

func parseClusterAudiences(pairs []string) ([]clusterAudience, error) {
	var out []clusterAudience
	for _, p := range pairs {
		cluster, audience, ok := strings.Cut(p, "=")
		if !ok || cluster == "" {
			return nil, fmt.Errorf("--cluster-audience %q is not CLUSTER=AUDIENCE (AUDIENCE empty for the login's "+
				"token)", p)
		}
		raw, _ := json.Marshal(credspec.ClusterExtension{Audience: audience})
		if _, err := credspec.ParseClusterExtension(raw); err != nil {
			return nil, fmt.Errorf("--cluster-audience %q: %w", p, err)
		}
		out = append(out, clusterAudience{cluster, audience})
	}
	return out, nil
}

func (o *SetupOptions) write(exec *clientcmdapi.ExecConfig) error {
	kc := kubeconfig.Open(o.Kubeconfig)
	userFile := kc.FileOf("users", o.User)
	clusterFile := kc.FileOf("clusters", o.Cluster)
	fleet, err := parseClusterAudiences(o.ClusterAudiences)
	if err != nil {
		return err
	}
	var fleetLines []string
	err = kc.Edit(func(cfg *clientcmdapi.Config) error {
		kubeconfig.SetUser(cfg, o.User, exec)
		if o.Server != "" {
			kubeconfig.SetCluster(cfg, o.Cluster, o.Server, o.ClusterCA)
		}
		for _, f := range fleet {
			contexts, moved, err := kubeconfig.SetClusterAudience(cfg, f.cluster, credspec.ExecExtensionName,
				func(raw []byte) ([]byte, error) {
					// Keep what else the extension says (allowedServer).
					ext, _ := credspec.ParseClusterExtension(raw)
					ext.Audience = f.audience
					return json.Marshal(ext)
				}, o.User)
			if err != nil {
				return err
			}
			what := fmt.Sprintf("the login's token exchanged for audience %q", f.audience)
			if f.audience == "" {
				what = "the login's token itself"
			}
			line := fmt.Sprintf("Cluster %q: %s; contexts %s use the user.", f.cluster, what,
				logging.PrintableList(contexts))
			if len(moved) > 0 {
				line += " Before, " + logging.PrintableList(moved) + "."
			}
			fleetLines = append(fleetLines, line)
		}
		if o.Context != "" {
			return kubeconfig.SetContext(cfg, kc.Files(), o.Context, o.Cluster, o.User)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "Wrote the user %q to %s.\n", o.User, userFile)
	for _, l := range fleetLines {
		fmt.Fprintln(o.Out, l)
	}
	if o.Server != "" {
		fmt.Fprintf(o.Out, "Wrote the cluster %q (%s) to %s.\n", o.Cluster, o.Server, clusterFile)
	}
	if o.Context != "" {
		fmt.Fprintf(o.Out, "The context %q now uses it: try \"kubectl --context=%s auth whoami\".\n", o.Context,
			o.Context)
	} else {
		fmt.Fprintf(o.Out, "Use it with: kubectl config set-context --current --user=%s\n", logging.ShellQuote(o.User))
	}
	return nil
}
