// Package kuberc reads and edits kubectl's preferences file, the kuberc,
// for its credential plugin policy.
//
//   - The file is kubectl.config.k8s.io/v1beta1 Preference (kubectl ≥ 1.35).
//   - With credentialPluginPolicy "Allowlist", kubectl runs only the exec
//     plugins its credentialPluginAllowlist names, matched by resolving both
//     with exec.LookPath (k8s.io/kubectl pkg/config, client-go
//     plugin/pkg/client/auth/exec).
//
// Entries are written as "name": kubectl 1.35 knows only that field, and
// 1.36+ converts it to "command". Everything else in the file is kept.
package kuberc

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
)

// EnvKuberc is kubectl's variable for the kuberc path ("off" disables it).
const EnvKuberc = "KUBERC"

const (
	apiVersion = "kubectl.config.k8s.io/v1beta1"
	kind       = "Preference"
)

// Path is the kuberc kubectl reads: $KUBERC, else ~/.kube/kuberc
// (Candidates' first). off is true when KUBERC=off.
func Path(getenv func(string) string) (path string, off bool, err error) {
	v, home := getenv(EnvKuberc), getenv("HOME")
	if v == "off" {
		return "", true, nil
	}
	if v == "" && home == "" {
		if home, err = environ.HomeDir(getenv); err != nil {
			return "", false, fmt.Errorf("finding the kuberc: %w", err)
		}
	}
	return Candidates(v, home)[0], false, nil
}

// Candidates are the kuberc files of an environment whose $KUBERC is
// kubercVar and $HOME home, in kubectl's order: $KUBERC (unless it is
// empty or "off"), then the home's .kube/kuberc (unless home is empty).
// kubectl reads the first; the exec-entry lock reads them all, since an
// entry's env may move either.
func Candidates(kubercVar, home string) []string {
	var out []string
	if kubercVar != "" && kubercVar != "off" {
		out = append(out, kubercVar)
	}
	if home != "" {
		out = append(out, filepath.Join(home, ".kube", "kuberc"))
	}
	return out
}

// Verdict is what kubectl's policy says of a plugin.
type Verdict string

const (
	// NoPolicy: no kuberc, no policy, or AllowAll: every plugin runs.
	NoPolicy Verdict = "no policy"
	Listed   Verdict = "allowed by the allowlist"
	// NotListed: policy Allowlist without the plugin: kubectl refuses it.
	NotListed Verdict = "not in the allowlist"
	DenyAll   Verdict = "DenyAll"
)

// ErrDenyAll means the kuberc forbids every credential plugin.
var ErrDenyAll = errors.New("the kuberc's credentialPluginPolicy is DenyAll: kubectl runs no credential plugin; set " +
	"it to Allowlist first")

type doc map[string]any

// readFile reads the kuberc at path, bounded and never waiting on a FIFO
// ($KUBERC may name anything): nil when there is none.
func readFile(path string) ([]byte, error) {
	b, _, err := safefile.ReadRegular("kuberc", path, 1<<20, safefile.ReadOptions{})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

func read(path string) (doc, error) {
	b, err := readFile(path)
	if err != nil || b == nil {
		return nil, err
	}
	var d doc
	if err := yaml.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s is not a single kuberc document (edit it by hand): %w", path, err)
	}
	return d, nil
}

// readPreference reads the kuberc at path as kubectl reads its policy:
// the first Preference of its YAML documents (a file of one document
// without a kind is that one).
func readPreference(path string) (doc, error) {
	b, err := readFile(path)
	if err != nil || b == nil {
		return nil, err
	}
	docs := Documents(b)
	for _, text := range docs {
		var d doc
		if err := yaml.Unmarshal(text, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if kind, _ := d["kind"].(string); kind == "Preference" || (kind == "" && len(docs) == 1) {
			return d, nil
		}
	}
	return nil, nil
}

// AllowlistsAny says whether a Preference document of the kuberc at path
// (or one without a kind) has the Allowlist policy with an entry whose
// name or command ours matches: every document, where kubectl takes the
// first Preference, so that a lock errs towards locking. A missing file
// is false; a document that is not YAML is an error.
func AllowlistsAny(path string, ours func(command string) bool) (bool, error) {
	b, err := readFile(path)
	if err != nil || b == nil {
		return false, err
	}
	for _, text := range Documents(b) {
		var d struct {
			Kind      string `json:"kind"`
			Policy    string `json:"credentialPluginPolicy"`
			Allowlist []struct {
				Name    string `json:"name"`
				Command string `json:"command"`
			} `json:"credentialPluginAllowlist"`
		}
		if err := yaml.Unmarshal(text, &d); err != nil {
			return false, err
		}
		if (d.Kind != "" && d.Kind != "Preference") || d.Policy != "Allowlist" {
			continue
		}
		for _, e := range d.Allowlist {
			if ours(e.Name) || ours(e.Command) {
				return true, nil
			}
		}
	}
	return false, nil
}

// Documents splits a YAML stream at its "---" lines (kubectl reads every
// document of a kuberc).
func Documents(b []byte) [][]byte {
	var out [][]byte
	var cur []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			out = append(out, []byte(strings.Join(cur, "\n")))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return append(out, []byte(strings.Join(cur, "\n")))
}

func (d doc) policy() string { s, _ := d["credentialPluginPolicy"].(string); return s }

func (d doc) entries() []any { l, _ := d["credentialPluginAllowlist"].([]any); return l }

// sameCommand matches as kubectl does: both resolved with exec.LookPath.
func sameCommand(entry, command string) bool {
	if entry == "" {
		return false
	}
	a, err1 := exec.LookPath(entry)
	b, err2 := exec.LookPath(command)
	if err1 != nil || err2 != nil {
		return filepath.Clean(entry) == filepath.Clean(command)
	}
	return a == b
}

func (d doc) lists(command string) bool {
	for _, e := range d.entries() {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		cmd, _ := m["command"].(string)
		if sameCommand(name, command) || sameCommand(cmd, command) {
			return true
		}
	}
	return false
}

// Check says whether kubectl would run command under the kuberc at path.
func Check(path, command string) (Verdict, error) {
	d, err := readPreference(path)
	if err != nil || d == nil {
		return NoPolicy, err
	}
	switch d.policy() {
	case "", "AllowAll":
		return NoPolicy, nil
	case "DenyAll":
		return DenyAll, nil
	case "Allowlist":
		if d.lists(command) {
			return Listed, nil
		}
		return NotListed, nil
	}
	return NoPolicy,
		fmt.Errorf("%s: credentialPluginPolicy %q is not one of AllowAll, DenyAll, Allowlist", path, d.policy())
}

// PluginPolicy is a kuberc's credential plugin policy: Type "" (no
// policy: every plugin runs), "DenyAll", or "Allowlist" with the Commands
// it allows (never nil then: an empty allowlist is not a missing one).
type PluginPolicy struct {
	Type     string
	Commands []string
}

// Policy is the kuberc's credential plugin policy, as kubectl ≥ 1.35
// applies it to every exec entry it runs (none without a kuberc or with
// KUBERC=off): the plugin's own API clients set it on theirs, so that a
// program the user's kuberc refuses runs for them no more than for
// kubectl. A kuberc that cannot be read or names an unknown policy is an
// error, as in kubectl.
func Policy(getenv func(string) string) (PluginPolicy, error) {
	path, off, err := Path(getenv)
	if err != nil || off {
		return PluginPolicy{}, err
	}
	d, err := readPreference(path)
	if err != nil || d == nil {
		return PluginPolicy{}, err
	}
	switch d.policy() {
	case "", "AllowAll":
		return PluginPolicy{}, nil
	case "DenyAll":
		return PluginPolicy{Type: "DenyAll"}, nil
	case "Allowlist":
		p := PluginPolicy{Type: "Allowlist", Commands: []string{}}
		for _, e := range d.entries() {
			m, _ := e.(map[string]any)
			name, _ := m["name"].(string)
			cmd, _ := m["command"].(string)
			// kubectl 1.35 knows "name", 1.36+ converts it to "command",
			// and refuses an entry whose two differ.
			if name != "" && cmd != "" && name != cmd {
				return PluginPolicy{}, fmt.Errorf("%s: an allowlist entry names %q and runs %q: kubectl refuses it, "+
					"keep one of name and command", path, name, cmd)
			}
			if c := cmp.Or(cmd, name); c != "" {
				p.Commands = append(p.Commands, c)
			}
		}
		return p, nil
	}
	return PluginPolicy{},
		fmt.Errorf("%s: credentialPluginPolicy %q is not one of AllowAll, DenyAll, Allowlist", path, d.policy())
}

// Allow adds command to the allowlist of the kuberc at path when its
// policy is Allowlist and the command is not listed yet; without a policy
// there is nothing to add (an allowlist would stop the user's other
// plugins). It keeps the file's other content and mode, and says what it
// did.
func Allow(path, command string) (Verdict, bool, error) {
	d, err := read(path)
	if err != nil {
		return NoPolicy, false, err
	}
	v, err := Check(path, command)
	if err != nil {
		return v, false, err
	}
	switch v {
	case DenyAll:
		return v, false, ErrDenyAll
	case NoPolicy, Listed:
		return v, false, nil
	}
	d["credentialPluginAllowlist"] = append(d.entries(), map[string]any{"name": command})
	if d["apiVersion"] == nil {
		d["apiVersion"] = apiVersion
	}
	if d["kind"] == nil {
		d["kind"] = kind
	}
	b, err := yaml.Marshal(d)
	if err != nil {
		return v, false, err
	}
	if err := writeAtomic(path, b); err != nil {
		return v, false, fmt.Errorf("writing the kuberc: %w", err)
	}
	return v, true, nil
}

// writeAtomic replaces path (following a symlink to its target: a
// kuberc kept in a dotfiles repository stays there) with b, in the mode
// it had (0600 when new).
func writeAtomic(path string, b []byte) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	return safefile.Write(path, b, safefile.Options{Sync: true})
}
