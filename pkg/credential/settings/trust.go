package settings

import (
	"errors"
	"fmt"
	"os/user"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/install"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/kuberc"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// The trust model (docs/security.md). get-token's arguments and
// environment are a kubeconfig exec entry's, written by whoever wrote the
// kubeconfig: a tenant portal, a colleague, a downloaded file. The profiles
// file and the command line a person types are the user's own. When the
// user has said that exec entries must not choose for them - the profile
// the entry names limits its tokens to allowedServers, or kubectl's kuberc
// allowlists this plugin - an exec entry may set only the settings below:
// none of them runs a program, reads or writes a file outside the plugin's
// own cache, weakens TLS or PKCE, or chooses where a token or a secret is
// sent. Everything else must come from a profile.
//
// Not --exchange-audience-from-cluster: a cluster without an audience gets
// the login's token, so from an entry it would switch the profile's
// exchange off. A profile that wants a fleet says so itself.
var execEntrySafe = map[string]bool{
	credspec.FlagProfile: true,
	// Only narrowing: applyProfile refuses a server the profile lacks.
	credspec.FlagAllowedServer: true, credspec.FlagAllowedServerCA: true,
	credspec.FlagForceRefresh: true, credspec.FlagSkipOpenBrowser: true, credspec.FlagAuthTimeout: true,
	credspec.FlagRequestTimeout: true, credspec.FlagLoginCooldown: true,
	credspec.FlagStorage: true, credspec.FlagListen: true,
	// Which identity to ask the profile's provider for: the token goes
	// nowhere else, and each choice is a cache key of its own.
	credspec.FlagClientID: true, credspec.FlagExtraScope: true, credspec.FlagUseAccessToken: true,
	credspec.FlagGrantType: true, credspec.FlagUsername: true,
	credspec.FlagExtraParams: true, credspec.FlagClientAuthMethod: true, credspec.FlagUserEmail: true,
	credspec.FlagCSRegion: true, credspec.FlagIPTenant: true,
	credspec.FlagExchangeAudience: true, credspec.FlagExchangeScope: true, credspec.FlagExchangeRequested: true,
	credspec.FlagExchangeSubjectType: true,
	credspec.FlagImpersonateUser:     true,
	// How the assertion names the profile's key: it goes to the profile's
	// provider alone, and a wrong kid only fails the request.
	credspec.FlagClientKeyID: true,
}

// IsFileSetting reports whether the flag name takes a file or directory
// (a profile holds those as absolute paths).
func IsFileSetting(name string) bool { return profileFileKeys[name] }

// IsExecEntrySafe reports whether an exec entry may set the flag name
// whatever the user's lock.
func IsExecEntrySafe(name string) bool { return execEntrySafe[name] }

// envExecEntrySafe are the only environment variables a locked exec
// entry may set. Any other can do what the unsafe flags do: choose where a
// token or secret goes (proxies, CAs, the keyring's bus), which files are
// read (HOME, XDG_*, the profiles file), which programs run and how (PATH,
// BROWSER, BASH_ENV and BASH_FUNC_* in the browser's shell scripts,
// DISPLAY), which credentials are used, where the kuberc lock is looked
// for: so, locked, everything else the entry sets is refused. An allowlist,
// not a list of the dangerous ones: the browser command inherits them all.
var envExecEntrySafe = map[string]bool{
	"KUBERNETES_EXEC_INFO": true, // client-go's, always set
	// The fast binary's note to the full one: at most it skips the keyring,
	// as --token-cache-storage (safe) may.
	tokencache.EnvKeyringUnavailable: true,
	// What a shell that runs get-token (kubectl impersonate get-token from
	// bash: kubectl execs the plugin in its place) sets for its children:
	// PWD must name the working directory to be used at all.
	"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true,
}

// errEnvNotRead: this platform's plugin does not read kubectl's
// environment (docs/security.md).
var errEnvNotRead = errors.New("kubectl's environment is not read on this platform")

// entryEnv are the variables the exec entry set that a locked entry may
// not: those named in EntryEnv when the caller knows the entry (login and
// whoami read it from the kubeconfig), else those whose value differs
// from kubectl's own environment. Nil where this platform cannot know
// (docs/security.md); an error where it could but did not (Linux: the
// parent's environment unreadable), so that a locked entry fails closed.
func (o *AuthOptions) entryEnv() ([]string, error) {
	var out []string
	add := func(name string) {
		if !envExecEntrySafe[name] && !slices.Contains(out, "$"+name) {
			out = append(out, "$"+name)
		}
	}
	if o.EntryEnv != nil {
		for _, name := range o.EntryEnv {
			add(name)
		}
		return out, nil
	}
	kubectl, err := o.kubectlEnv()
	if errors.Is(err, errEnvNotRead) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot tell the exec entry's environment variables from your own, which a locked "+
			"entry needs: %w; run kubectl-impersonate from kubectl, or name the settings in a profile "+
			"(docs/security.md)", err)
	}
	env := o.Environ
	if env == nil {
		env = environ.Environ
	}
	for _, kv := range env() {
		name, v, _ := strings.Cut(kv, "=")
		if old, ok := kubectl[name]; !ok || old != v {
			add(name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// kubectlEnv is kubectl's own environment, read once.
func (o *AuthOptions) kubectlEnv() (map[string]string, error) {
	if o.KubectlEnv == nil {
		o.KubectlEnv = readKubectlEnv
	}
	if !o.kubectlEnvRead {
		o.kubectlEnvMap, o.kubectlEnvErr = o.KubectlEnv()
		o.kubectlEnvRead = true
	}
	return o.kubectlEnvMap, o.kubectlEnvErr
}

// checkExecEntry refuses the settings an exec entry may not choose: the
// unsafe ones whenever the entry names a profile (the user's own) or the
// user has locked exec entries, and overrides of the profile's own values
// when locked. It runs after the profile is applied: f.Changed is then
// true only for what the entry's args set.
func (o *AuthOptions) checkExecEntry(getenv func(string) string) error {
	if o.flags == nil {
		return nil
	}
	var unsafe, overrides []string
	// VisitAll and Changed, not Visit: an alias (--audit-log,
	// --certificate-authority) marks its canonical flag changed without
	// pflag listing the canonical among the flags set.
	o.flags.VisitAll(func(f *pflag.Flag) {
		switch {
		case !f.Changed || !o.names[f.Name] || o.userSet[f.Name]:
		case !execEntrySafe[f.Name]:
			unsafe = append(unsafe, "--"+f.Name)
		case o.profileKeys[f.Name] && f.Name != credspec.FlagAllowedServer && f.Name != credspec.FlagAllowedServerCA:
			overrides = append(overrides, "--"+f.Name)
		}
	})
	if len(unsafe) == 0 && len(overrides) == 0 && o.Profile == "" {
		return nil // nothing to refuse, whatever the lock
	}
	why, err := o.lockReason(getenv)
	if err != nil {
		return err
	}
	if why == "" {
		if o.Profile == "" {
			return nil
		}
		why, overrides = fmt.Sprintf("it names your profile %q", o.Profile), nil
	}
	env, err := o.entryEnv()
	if err != nil {
		return err
	}
	unsafe = append(unsafe, env...)
	if len(unsafe) == 0 && len(overrides) == 0 {
		return nil
	}
	where := "a profile (docs/profiles.md; setup --profile writes one)"
	if o.Profile != "" {
		where = fmt.Sprintf("profile %q", o.Profile)
	}
	if len(overrides) > 0 {
		unsafe = append(unsafe, strings.Join(overrides, ", ")+" over the profile's")
	}
	if !slices.ContainsFunc(unsafe, func(s string) bool { return strings.HasPrefix(s, "--") }) {
		// Environment variables only: they belong in kubectl's own
		// environment, or a profile's flag does their work.
		where = "your own environment or " + where
	}
	return fmt.Errorf("the kubeconfig's exec entry sets %s, which only you may choose since %s: put it in %s, or "+
		"remove it from the exec entry (docs/security.md)",
		strings.Join(unsafe, ", "), why, where)
}

// lockReason says why exec entries are locked, "" when they are not.
func (o *AuthOptions) lockReason(getenv func(string) string) (string, error) {
	if len(o.profileServers) > 0 {
		return fmt.Sprintf("profile %q limits its tokens to allowedServers", o.Profile), nil
	}
	// kubectl's own KUBERC and HOME too: the entry's env may replace them.
	var more []string
	if kubectl, err := o.kubectlEnv(); err == nil {
		more = []string{kubectl[kuberc.EnvKuberc], kubectl["HOME"]}
	}
	path, err := KubercLocks(getenv, o.AccountHome, more...)
	if err != nil || path == "" {
		return "", err
	}
	return fmt.Sprintf("the kuberc %s allowlists this plugin", path), nil
}

// KubercLocks returns the kuberc that allowlists this plugin, "" if none
// does. An exec entry's env can move $KUBERC and $HOME, so it may add a
// lock but not remove one: more gives kubectl's own $KUBERC and $HOME
// (read from its environment), and without them the default kuberc under
// the account's home from the user database is read too. A kuberc that
// cannot be parsed locks (kubectl would refuse it).
//
// accountHome is the account's home from the user database (nil:
// AccountHome).
func KubercLocks(getenv func(string) string, accountHome func() string, more ...string) (string, error) {
	if accountHome == nil {
		accountHome = AccountHome
	}
	paths := kuberc.Candidates(getenv(kuberc.EnvKuberc), getenv("HOME"))
	// more: kubectl's own $KUBERC and $HOME, in that order.
	more = append(slices.Clone(more), "", "")
	paths = append(paths, kuberc.Candidates(more[0], more[1])...)
	// Without kubectl's own HOME (not read on this platform, or empty
	// under env -i), the account's home from the user database stands
	// for it.
	if more[1] == "" {
		paths = append(paths, kuberc.Candidates("", accountHome())...)
	}
	slices.Sort(paths)
	for _, p := range slices.Compact(paths) {
		locks, err := kuberc.AllowlistsAny(p, install.IsOurs)
		if err != nil || locks {
			// A kuberc that cannot be read or parsed locks: kubectl would
			// refuse it, and an entry must not make it unreadable to us.
			return p, nil
		}
	}
	return "", nil
}

// AccountHome is the account's home directory from the user database, ""
// when it cannot be read.
func AccountHome() string {
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}
