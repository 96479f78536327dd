// Package config reads and writes the profiles file: named sets of
// get-token settings.
//
//   - kubeconfig exec args stay short (--profile NAME).
//   - Secrets stay out of kubeconfig.
//
// The file is YAML at $KUBECTL_IMPERSONATE_CONFIG, else
// $XDG_CONFIG_HOME/kubectl-impersonate/config.yaml, else
// ~/.config/kubectl-impersonate/config.yaml:
//
//	profiles:
//	  tenant-a:
//	    oidc-issuer-url: https://id.example.com/realms/a
//	    oidc-client-id: kubernetes
//	    oidc-extra-scope: [email, groups]
//	    oidc-client-secret-file: ~/.config/kubectl-impersonate/tenant-a.secret
//
// Keys are the long flag names; command-line flags win over the profile.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
)

// EnvConfig overrides the file's location.
const EnvConfig = "KUBECTL_IMPERSONATE_CONFIG"

// File is the parsed profiles file.
type File struct {
	Path     string
	Profiles map[string]map[string]any `json:"profiles"`
	// Access is who else may read or write the file (Load checked that
	// no one else may write it).
	Access safefile.Access `json:"-"`
	// raw is the content Load read (and checked).
	raw []byte
}

// DefaultPath returns where the file is looked for.
func DefaultPath(getenv func(string) string) (string, error) {
	if p := getenv(EnvConfig); p != "" {
		return p, nil
	}
	dir, err := Dir(getenv)
	if err != nil {
		return "", fmt.Errorf("finding the profiles file: %w (set %s)", err, EnvConfig)
	}
	return filepath.Join(dir, "config.yaml"), nil
}

// Dir is this program's configuration directory:
// $XDG_CONFIG_HOME/kubectl-impersonate, else ~/.config/kubectl-impersonate.
func Dir(getenv func(string) string) (string, error) {
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "kubectl-impersonate"), nil
	}
	home, err := environ.HomeDir(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".config", "kubectl-impersonate"), nil
}

// Load reads and parses path. The file must be a regular file of the
// user's that no one else may write (checked on the descriptor read, so
// the file checked is the file read).
func Load(path string) (*File, error) {
	// The profiles file says where tokens and secrets go: only its owner
	// may write it.
	b, access, err := safefile.ReadRegular(
		"profiles file", path, maxFileSize, safefile.ReadOptions{Rule: safefile.Private})
	if errors.Is(err, fs.ErrNotExist) {
		return nil,
			fmt.Errorf("profiles file %s does not exist: create it (see docs/profiles.md) or set %s", path, EnvConfig)
	}
	if err != nil {
		return nil, err
	}
	p, err := Parse(b, path)
	if err != nil {
		return nil, err
	}
	p.Access = access
	p.raw = b
	return p, nil
}

// maxFileSize bounds the profiles file.
const maxFileSize = 1 << 20

// Parse reads the profiles file's content (path names it in errors).
func Parse(b []byte, path string) (*File, error) {
	f := &File{}
	if err := yaml.UnmarshalStrict(b, f); err != nil {
		return nil, fmt.Errorf("parsing profiles file %s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// Names are the profiles' names, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Profiles))
	for n := range f.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Profile returns the settings of name.
func (f *File) Profile(name string) (map[string]any, error) {
	p, ok := f.Profiles[name]
	if !ok {
		names := make([]string, 0, len(f.Profiles))
		for n := range f.Profiles {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("profile %q is not in %s (profiles there: %v)", name, f.Path, names)
	}
	return p, nil
}

// Values turns a YAML value into flag values: a list gives one per item.
func Values(v any) ([]string, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []string{t}, nil
	case bool:
		return []string{fmt.Sprint(t)}, nil
	case float64:
		return []string{fmt.Sprint(t)}, nil
	case []any:
		var out []string
		for _, item := range t {
			vs, err := Values(item)
			if err != nil {
				return nil, err
			}
			out = append(out, vs...)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unsupported value of type %T", v)
	}
}

// ErrProfileDiffers means a profile of that name exists with other settings.
var ErrProfileDiffers = errors.New("a profile of that name exists with other settings")

// SetProfile writes the profile name with settings (flag name → values)
// into the profiles file at path, creating it (0600, in a 0700 directory)
// if needed and keeping its other profiles; an identical profile is left
// alone (changed false), a different one is refused with
// ErrProfileDiffers. Comments in the file are not kept.
func SetProfile(path, name string, settings map[string][]string) (changed bool, err error) {
	doc := map[string]any{}
	if _, err := os.Lstat(path); err == nil {
		// Through Load: a file of someone else's is refused, never
		// rewritten as the user's own with its profiles kept.
		f, err := Load(path)
		if err != nil {
			return false, err
		}
		if err := yaml.Unmarshal(f.raw, &doc); err != nil {
			return false, fmt.Errorf("parsing profiles file %s: %w", path, err)
		}
	}
	want := map[string]any{}
	for k, vs := range settings {
		if len(vs) == 1 {
			want[k] = vs[0]
			continue
		}
		l := make([]any, len(vs))
		for i, v := range vs {
			l[i] = v
		}
		want[k] = l
	}
	profiles, _ := doc["profiles"].(map[string]any)
	if profiles == nil {
		profiles = map[string]any{}
	}
	if old, ok := profiles[name]; ok {
		ob, _ := yaml.Marshal(old)
		nb, _ := yaml.Marshal(want)
		if string(ob) == string(nb) {
			return false, nil
		}
		return false, fmt.Errorf("profile %q in %s: %w", name, path, ErrProfileDiffers)
	}
	profiles[name] = want
	doc["profiles"] = profiles
	out, err := yaml.Marshal(doc)
	if err != nil {
		return false, err
	}
	if err := safefile.MkdirPrivate(filepath.Dir(path)); err != nil {
		return false, fmt.Errorf("creating the profiles directory: %w", err)
	}
	if err := safefile.Write(path, out, safefile.Options{Mode: 0o600, Sync: true}); err != nil {
		return false, fmt.Errorf("writing profiles file: %w", err)
	}
	return true, nil
}
