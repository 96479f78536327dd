// Package kubeconfig edits user and context entries of kubeconfig files
// (https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/)
// as kubectl config set-credentials would, choosing the file the same way
// client-go's clientcmd.PathOptions does.
//
// It works on the generic YAML tree rather than client-go's clientcmd: this
// binary is also the credential plugin, whose every start pays for the
// package initialisers it links, and clientcmd with apimachinery costs about
// 2 ms and 3 MiB per kubectl call (measured, see docs/performance.md).
// Working on the tree also keeps fields this program does not know.
package kubeconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// ExecConfig is a user's exec entry (client-go's clientcmd/api/v1.ExecConfig).
type ExecConfig struct {
	APIVersion         string   `json:"apiVersion"`
	Command            string   `json:"command"`
	Args               []string `json:"args,omitempty"`
	InteractiveMode    string   `json:"interactiveMode,omitempty"`
	ProvideClusterInfo bool     `json:"provideClusterInfo,omitempty"`
}

// Files returns the kubeconfig files in precedence order: the explicit
// file, else $KUBECONFIG's list, else ~/.kube/config.
func Files(explicit string, getenv func(string) string) []string {
	if explicit != "" {
		return []string{explicit}
	}
	if env := getenv("KUBECONFIG"); env != "" {
		var files []string
		for _, f := range filepath.SplitList(env) {
			if f != "" {
				files = append(files, f)
			}
		}
		if len(files) > 0 {
			return files
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = getenv("HOME")
	}
	return []string{filepath.Join(home, ".kube", "config")}
}

// defaultFile is where a new entry goes: the only file, else the first that
// exists, else the last (clientcmd.PathOptions.GetDefaultFilename).
func defaultFile(files []string) string {
	if len(files) == 1 {
		return files[0]
	}
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	return files[len(files)-1]
}

type document map[string]any

func load(path string) (document, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return document{"apiVersion": "v1", "kind": "Config"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	doc := document{}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parsing kubeconfig %s: %w", path, err)
	}
	if doc == nil {
		doc = document{"apiVersion": "v1", "kind": "Config"}
	}
	return doc, nil
}

// save writes doc to path with mode 0600, replacing the file atomically.
func save(path string, doc document) error {
	b, err := yaml.Marshal(map[string]any(doc))
	if err != nil {
		return fmt.Errorf("encoding kubeconfig: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating kubeconfig directory: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("replacing kubeconfig %s: %w", path, err)
	}
	return nil
}

// namedList returns the entries of a list such as users or contexts.
func namedList(doc document, list string) ([]any, error) {
	raw, ok := doc[list]
	if !ok || raw == nil {
		return nil, nil
	}
	items, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("kubeconfig: %q is not a list", list)
	}
	return items, nil
}

func findNamed(items []any, name string) (map[string]any, int) {
	for i, it := range items {
		if m, ok := it.(map[string]any); ok && m["name"] == name {
			return m, i
		}
	}
	return nil, -1
}

// fileDefining returns the first file whose list holds name.
func fileDefining(files []string, list, name string) (string, error) {
	for _, f := range files {
		doc, err := load(f)
		if err != nil {
			return "", err
		}
		items, err := namedList(doc, list)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f, err)
		}
		if m, _ := findNamed(items, name); m != nil {
			return f, nil
		}
	}
	return "", nil
}

// SetUser writes the user entry name with exec, replacing an entry of that
// name, in the file that defines it or the default file. It returns the file.
func SetUser(files []string, name string, exec *ExecConfig) (string, error) {
	path, err := fileDefining(files, "users", name)
	if err != nil {
		return "", err
	}
	if path == "" {
		path = defaultFile(files)
	}
	doc, err := load(path)
	if err != nil {
		return "", err
	}
	items, err := namedList(doc, "users")
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	execMap := map[string]any{}
	b, err := yaml.Marshal(exec)
	if err != nil {
		return "", fmt.Errorf("encoding exec entry: %w", err)
	}
	if err := yaml.Unmarshal(b, &execMap); err != nil {
		return "", fmt.Errorf("encoding exec entry: %w", err)
	}
	entry := map[string]any{"name": name, "user": map[string]any{"exec": execMap}}
	if _, i := findNamed(items, name); i >= 0 {
		items[i] = entry
	} else {
		items = append(items, entry)
	}
	doc["users"] = items
	return path, save(path, doc)
}

// SetCluster writes the cluster entry name with server and, when caFile
// is set, its certificate authority file, in the file that defines it or
// the default file; other fields of an existing entry are kept.
func SetCluster(files []string, name, server, caFile string) (string, error) {
	return editEntry(files, "clusters", "cluster", name, "", func(cluster map[string]any) {
		cluster["server"] = server
		if caFile != "" {
			delete(cluster, "certificate-authority-data")
			delete(cluster, "insecure-skip-tls-verify")
			cluster["certificate-authority"] = caFile
		}
	})
}

// SetContext points the context name at cluster (unless empty) and user,
// creating it in the default file when no file defines it and a cluster is
// given.
func SetContext(files []string, name, cluster, user string) (string, error) {
	missing := ""
	if cluster == "" {
		missing = fmt.Sprintf("context %q is not in %s: create it first (kubectl config set-context %s --cluster=NAME), or give --server", name, strings.Join(files, ", "), name)
	}
	return editEntry(files, "contexts", "context", name, missing, func(ctx map[string]any) {
		if cluster != "" {
			ctx["cluster"] = cluster
		}
		ctx["user"] = user
	})
}

// editEntry applies edit to the field map (e.g. "cluster") of the entry
// name in list, in the file that defines it, or creates the entry in the
// default file unless missing (then the error) is set.
func editEntry(files []string, list, field, name, missing string, edit func(map[string]any)) (string, error) {
	path, err := fileDefining(files, list, name)
	if err != nil {
		return "", err
	}
	if path == "" {
		if missing != "" {
			return "", errors.New(missing)
		}
		path = defaultFile(files)
	}
	doc, err := load(path)
	if err != nil {
		return "", err
	}
	items, err := namedList(doc, list)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	m, i := findNamed(items, name)
	if i < 0 {
		m = map[string]any{"name": name}
		items = append(items, m)
	}
	sub, _ := m[field].(map[string]any)
	if sub == nil {
		sub = map[string]any{}
		m[field] = sub
	}
	edit(sub)
	doc[list] = items
	return path, save(path, doc)
}
