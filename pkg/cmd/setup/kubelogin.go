package setup

import (
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/config"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/kubeconfig"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

// kubelogin is int128/kubelogin (kubectl oidc-login). Its get-token flags
// (v1.36.3's --help) map to ours: most by the same name, a few by another
// name or a conversion; the rest have no equivalent and are reported.
type kubeloginFlag struct {
	// to is our flag ("" with convert: convert decides; both "": none).
	to      string
	boolean bool
	// convert turns the value into our flags.
	convert func(v string) ([]string, error)
	// secret: the value goes into a 0600 file named by this flag of ours.
	secret string
	// note says why a flag without an equivalent is dropped.
	note string
}

var kubeloginFlags = map[string]kubeloginFlag{
	"oidc-issuer-url":                {to: "oidc-issuer-url"},
	"oidc-client-id":                 {to: "oidc-client-id"},
	"oidc-client-secret":             {secret: "oidc-client-secret-file"},
	"oidc-extra-scope":               {to: "oidc-extra-scope"},
	"oidc-use-access-token":          {to: "oidc-use-access-token", boolean: true},
	"oidc-redirect-url":              {to: "oidc-redirect-url"},
	"oidc-auth-request-extra-params": {to: "oidc-auth-request-extra-params"},
	"oidc-request-header":            {to: "oidc-request-header"},
	"oidc-pkce-method":               {to: "oidc-pkce-method"},
	"grant-type":                     {to: "grant-type"},
	"listen-address":                 {to: "listen-address"},
	"listen-port": {convert: func(v string) ([]string, error) {
		if _, err := strconv.Atoi(v); err != nil {
			return nil, fmt.Errorf("--listen-port %q is not a port", v)
		}
		return []string{"--listen-address=127.0.0.1:" + v}, nil
	}},
	"skip-open-browser":             {to: "skip-open-browser", boolean: true},
	"browser-command":               {to: "browser-command"},
	"local-server-cert":             {to: "local-server-cert"},
	"local-server-key":              {to: "local-server-key"},
	"open-url-after-authentication": {to: "open-url-after-authentication"},
	"authentication-timeout-sec": {convert: func(v string) ([]string, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--authentication-timeout-sec %q is not a positive number", v)
		}
		return []string{"--authentication-timeout=" + (time.Duration(n) * time.Second).String()}, nil
	}},
	"username":                   {to: "username"},
	"password":                   {secret: "password-file"},
	"certificate-authority":      {to: "oidc-certificate-authority"},
	"certificate-authority-data": {to: "certificate-authority-data"},
	"insecure-skip-tls-verify":   {to: "insecure-skip-tls-verify", boolean: true},
	"token-cache-storage":        {to: "token-cache-storage"},
	"force-refresh":              {to: "force-refresh", boolean: true},
	"token-cache-dir": {note: "kubectl-impersonate keeps its own cache " +
		"(~/.kube/cache/kubectl-impersonate): log in once after the migration"},
	"oidc-redirect-url-hostname": {note: "deprecated in kubelogin; give the whole --oidc-redirect-url " +
		"instead"},
	"tls-renegotiation-once": {boolean: true, note: "TLS renegotiation is not supported (Go's default: " +
		"never)"},
	"tls-renegotiation-freely": {boolean: true, note: "TLS renegotiation is not supported (Go's default: " +
		"never)"},
	"v":                                   {note: "verbosity is not carried over (use -v when debugging)"},
	"oidc-redirect-url-authcode-keyboard": {note: "give --oidc-redirect-url with --grant-type=authcode-keyboard"},
}

// kubeloginArgs recognises an exec entry that runs kubelogin's get-token
// (kubectl oidc-login get-token, kubelogin get-token, kubectl-oidc_login
// get-token) and returns get-token's arguments.
func kubeloginArgs(e *clientcmdapi.ExecConfig) ([]string, bool) {
	if e == nil {
		return nil, false
	}
	args := e.Args
	switch filepath.Base(e.Command) {
	case "kubectl", "kubectl.exe":
		if len(args) < 1 || args[0] != "oidc-login" {
			return nil, false
		}
		args = args[1:]
	case "kubelogin", "kubelogin.exe", "kubectl-oidc_login", "kubectl-oidc_login.exe":
	default:
		return nil, false
	}
	if len(args) < 1 || args[0] != "get-token" {
		return nil, false
	}
	return args[1:], true
}

// migration is one user's move from kubelogin.
type migration struct {
	User    string
	Old     *clientcmdapi.ExecConfig
	Args    []string          // our get-token flags
	Secrets map[string]string // file -> content, written 0600 with --write
	Notes   []string          // flags dropped, and why
}

// migrateArgs maps kubelogin's get-token args; secrets go to files under
// secretDir named after the user.
func migrateArgs(user string, in []string, secretDir string) (*migration, error) {
	m := &migration{User: user, Secrets: map[string]string{}}
	for i := 0; i < len(in); i++ {
		a := in[i]
		if !strings.HasPrefix(a, "-") {
			m.Notes = append(m.Notes, fmt.Sprintf("argument %q is not a flag: dropped", a))
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f, known := kubeloginFlags[name]
		if !known {
			m.Notes = append(m.Notes, fmt.Sprintf("--%s has no equivalent: dropped (check what it did)", name))
			if !hasValue && i+1 < len(in) && !strings.HasPrefix(in[i+1], "-") {
				i++
			}
			continue
		}
		if !hasValue {
			if f.boolean {
				value = "true"
			} else if i+1 < len(in) {
				i++
				value = in[i]
			} else {
				return nil, fmt.Errorf("--%s has no value", name)
			}
		}
		switch {
		case f.secret != "":
			file := filepath.Join(secretDir, "kubelogin-"+safeName(user)+"."+strings.TrimSuffix(f.secret, "-file"))
			m.Secrets[file] = value
			m.Args = append(m.Args, "--"+f.secret+"="+file)
			m.Notes = append(m.Notes, fmt.Sprintf("--%s moves out of the kubeconfig into %s (mode 0600)", name, file))
		case f.convert != nil:
			args, err := f.convert(value)
			if err != nil {
				return nil, err
			}
			m.Args = append(m.Args, args...)
		case f.to != "":
			switch name {
			case "insecure-skip-tls-verify":
				m.Notes = append(m.Notes, "--insecure-skip-tls-verify is carried over: the provider's certificate is "+
					"not checked (give its CA instead)")
			case "browser-command":
				m.Notes = append(m.Notes, fmt.Sprintf("--browser-command %q is carried over: it runs on every "+
					"browser login", value))
			case "oidc-request-header":
				m.Notes = append(m.Notes, "--oidc-request-header's value stays in the kubeconfig's args")
			}
			if f.boolean && value == "true" {
				m.Args = append(m.Args, "--"+f.to)
			} else {
				m.Args = append(m.Args, "--"+f.to+"="+value)
			}
		default:
			m.Notes = append(m.Notes, fmt.Sprintf("--%s: dropped: %s", name, f.note))
		}
	}
	return m, nil
}

// safeName makes a kubeconfig user name (anyone's text) a file name: no
// separator, no dot segment; what it cannot keep it writes as _ and the
// name's hash tells names apart.
func safeName(user string) string {
	var b strings.Builder
	for _, r := range user {
		if r < 128 &&
			(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := strings.Trim(b.String(), ".")
	if name != user || len(name) > 64 {
		sum := sha256.Sum256([]byte(user))
		name = fmt.Sprintf("%.48s-%x", name, sum[:4])
	}
	return name
}

// writeSecretFile creates path 0600 in a 0700 directory, replacing a
// symlink planted there rather than writing through it.
func writeSecretFile(path, content string) error {
	if err := safefile.MkdirPrivate(filepath.Dir(path)); err != nil {
		return err
	}
	return safefile.Write(path, []byte(content+"\n"), safefile.Options{Mode: 0o600, Sync: true})
}

// fromKubelogin finds the kubelogin users of the kubeconfig, prints each
// change, and with --write applies them after a backup of each file.
func (o *SetupOptions) fromKubelogin() error {
	kc := kubeconfig.Open(o.Kubeconfig)
	migrations, err := o.migrations(kc)
	if err != nil {
		return err
	}
	// Locked exec entries take their settings from profiles
	// (docs/security.md): each migrated user gets one of its name.
	locked, err := o.kubercLocks()
	if err != nil {
		return err
	}
	profiles := map[string]map[string][]string{}
	for _, m := range migrations {
		if values, unsafe := profileValues(m.Args); locked && unsafe {
			profiles[m.User] = values
			m.Args = []string{"--profile=" + m.User}
			m.Notes = append(m.Notes, fmt.Sprintf("exec entries are locked (a kuberc allowlists the plugin): the "+
				"settings go into profile %q", m.User))
		}
	}
	for _, m := range migrations {
		printMigration(o.Out, m, o.execFor(m.Args))
	}
	if !o.Write {
		fmt.Fprintln(o.Out, "Nothing written: run again with --write (a backup of each kubeconfig file is made first).")
		return nil
	}
	if err := o.writeMigrations(kc, migrations, profiles); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "Migrated %d user(s); other entries are untouched.\n", len(migrations))
	return nil
}

// migrations are the kubeconfig's kubelogin users, each with the
// get-token flags it migrates to (checked as get-token checks them).
func (o *SetupOptions) migrations(kc *kubeconfig.Kubeconfig) ([]*migration, error) {
	cfg, err := kc.Starting()
	if err != nil {
		return nil, err
	}
	// Migrated secrets go where profiles live.
	dir, err := config.Dir(o.global.Getenv)
	if err != nil {
		return nil, fmt.Errorf("finding the directory for the migrated secrets: %w", err)
	}
	var migrations []*migration
	for _, name := range slices.Sorted(maps.Keys(cfg.AuthInfos)) {
		args, ok := kubeloginArgs(cfg.AuthInfos[name].Exec)
		if !ok {
			continue
		}
		m, err := migrateArgs(name, args, dir)
		if err != nil {
			return nil, fmt.Errorf("user %q: %w", name, err)
		}
		// What we write must parse and check as get-token's flags.
		if _, err := parseGetTokenArgs(m.Args, o.global.Getenv); err != nil {
			return nil, fmt.Errorf("user %q: the migrated flags do not check: %w", name, err)
		}
		m.Old = cfg.AuthInfos[name].Exec
		for _, e := range m.Old.Env {
			if strings.HasPrefix(e.Name, "KUBECTL_IMPERSONATE_") {
				m.Notes = append(m.Notes, fmt.Sprintf("the exec entry's environment sets %s, which kubelogin ignored "+
					"and kubectl-impersonate reads", e.Name))
			}
		}
		migrations = append(migrations, m)
	}
	if len(migrations) == 0 {
		return nil, fmt.Errorf("no user of %s runs kubelogin's get-token", strings.Join(kc.Files(), ", "))
	}
	return migrations, nil
}

// writeMigrations backs up each kubeconfig file it changes, writes the
// secrets and profiles, then the users' exec entries (their interactive
// mode and environment kept).
func (o *SetupOptions) writeMigrations(kc *kubeconfig.Kubeconfig, migrations []*migration,
	profiles map[string]map[string][]string) error {
	files := map[string]bool{}
	for _, m := range migrations {
		files[kc.FileOf("users", m.User)] = true
	}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		backup, err := backupFile(f)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "Backed up %s to %s.\n", f, backup)
	}
	for _, m := range migrations {
		for file, content := range m.Secrets {
			if err := writeSecretFile(file, content); err != nil {
				return fmt.Errorf("writing %s: %w", file, err)
			}
		}
		if values, ok := profiles[m.User]; ok {
			if err := o.writeProfile(m.User, values); err != nil {
				return fmt.Errorf("user %q: %w", m.User, err)
			}
		}
	}
	return kc.Edit(func(cfg *clientcmdapi.Config) error {
		for _, m := range migrations {
			e := o.execFor(m.Args)
			e.InteractiveMode = m.Old.InteractiveMode
			if e.InteractiveMode == "" {
				e.InteractiveMode = clientcmdapi.IfAvailableExecInteractiveMode
			}
			e.Env = m.Old.Env
			kubeconfig.SetUser(cfg, m.User, e)
		}
		return nil
	})
}

func printMigration(w io.Writer, m *migration, e *clientcmdapi.ExecConfig) {
	fmt.Fprintf(w, "user %q:\n", m.User)
	fmt.Fprintf(w, "- %s\n",
		strings.Join(logging.ShellQuoteArgs(append([]string{m.Old.Command}, redactSecrets(m.Old.Args)...)), " "))
	fmt.Fprintf(w, "+ %s\n", strings.Join(logging.ShellQuoteArgs(append([]string{e.Command}, e.Args...)), " "))
	for _, n := range m.Notes {
		fmt.Fprintf(w, "  note: %s\n", logging.OneLine(n, 0))
	}
}

// redactSecrets hides the values of kubelogin's secret flags.
func redactSecrets(args []string) []string {
	out := append([]string{}, args...)
	for i, a := range out {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if f, ok := kubeloginFlags[name]; !ok || f.secret == "" {
			continue
		}
		if hasValue {
			out[i] = "--" + name + "=(secret)"
		} else if i+1 < len(out) {
			out[i+1] = "(secret)"
		}
	}
	return out
}

// parseGetTokenArgs checks args as get-token parses them (settings.ParseArgs; get-token's
// ParseArgs, without its network).
func parseGetTokenArgs(args []string, getenv func(string) string) (*settings.AuthOptions, error) {
	// The secret files are not written yet: check the other flags.
	checked := make([]string, 0, len(args))
	for _, a := range args {
		if !strings.HasPrefix(a, "--oidc-client-secret-file=") && !strings.HasPrefix(a, "--password-file=") {
			checked = append(checked, a)
		}
	}
	o, err := settings.CheckArgs(checked, getenv)
	if err != nil {
		return nil, err
	}
	if o.GrantType == credspec.GrantClientCredentials && o.ClientSecret == "" {
		o.ClientSecret = "(moved to a file)"
	}
	return o, o.Validate()
}

// backupFile copies path (through a symlink) next to itself, mode 0600
// whatever the original's: path.kubelogin-backup-TIME. The backup holds
// the secrets the migration moves out of the kubeconfig into 0600 files,
// so it must be no more readable than they are.
func backupFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("backing up %s: %w", path, err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	backup := real + ".kubelogin-backup-" + time.Now().UTC().Format("20060102T150405Z")
	if err := safefile.Write(backup, b, safefile.Options{Mode: 0o600, Sync: true}); err != nil {
		return "", fmt.Errorf("backing up %s: %w", path, err)
	}
	return backup, nil
}
