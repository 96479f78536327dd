// Package kubeconfig writes user, cluster and context entries of kubeconfig
// files as kubectl config set-credentials, set-cluster and set-context do.
//
//   - Through client-go's clientcmd, which picks the files as kubectl does
//     (--kubeconfig, else $KUBECONFIG's list, else ~/.kube/config).
//   - Each entry goes back to the file that defines it (a new one to the
//     default file); each file is locked while written.
//   - It writes through a symlink (the link stays a link) and keeps an
//     existing file's mode.
//
// The files: https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/
//
// Only the full binary links this package; the fast get-token binary never
// writes a kubeconfig.
package kubeconfig

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig is the set of kubeconfig files kubectl would use.
type Kubeconfig struct {
	po *clientcmd.PathOptions
}

// Open selects the files: explicit (--kubeconfig), else $KUBECONFIG's list,
// else ~/.kube/config.
func Open(explicit string) *Kubeconfig {
	po := clientcmd.NewDefaultPathOptions()
	po.LoadingRules.ExplicitPath = explicit
	return &Kubeconfig{po: po}
}

// Files are the files in precedence order.
func (k *Kubeconfig) Files() []string { return k.po.GetLoadingPrecedence() }

// FileOf is the file that defines the entry name of kind ("users",
// "clusters", "contexts"), or the file a new entry goes to.
func (k *Kubeconfig) FileOf(kind, name string) string {
	if !k.po.IsExplicitFile() {
		for _, f := range k.po.GetLoadingPrecedence() {
			cfg, err := clientcmd.LoadFromFile(f)
			if err != nil {
				continue
			}
			if defines(cfg, kind, name) {
				return f
			}
		}
	}
	return k.po.GetDefaultFilename()
}

func defines(cfg *clientcmdapi.Config, kind, name string) bool {
	switch kind {
	case "users":
		_, ok := cfg.AuthInfos[name]
		return ok
	case "clusters":
		_, ok := cfg.Clusters[name]
		return ok
	case "contexts":
		_, ok := cfg.Contexts[name]
		return ok
	}
	return false
}

// Starting is the merged configuration, as kubectl reads it.
func (k *Kubeconfig) Starting() (*clientcmdapi.Config, error) {
	cfg, err := k.po.GetStartingConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	return cfg, nil
}

// Edit loads the merged configuration, lets change modify it, and writes
// what changed with clientcmd.ModifyConfig. When change fails nothing is
// written.
func (k *Kubeconfig) Edit(change func(*clientcmdapi.Config) error) error {
	cfg, err := k.po.GetStartingConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if err := change(cfg); err != nil {
		return err
	}
	// Paths stay as given (absolute): kubectl config's relativizing would
	// make them relative to whichever file the entry lands in.
	if err := clientcmd.ModifyConfig(k.po, *cfg, false); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return nil
}

// SetUser replaces the user name with one that runs exec, in the file that
// defines it (clientcmd writes an entry back to its LocationOfOrigin).
func SetUser(cfg *clientcmdapi.Config, name string, exec *clientcmdapi.ExecConfig) {
	u := clientcmdapi.NewAuthInfo()
	u.Exec = exec
	if old, ok := cfg.AuthInfos[name]; ok {
		u.LocationOfOrigin = old.LocationOfOrigin
	}
	cfg.AuthInfos[name] = u
}

// SetCluster sets the cluster name's server and, when caFile is set, its
// certificate authority file (dropping inline CA data and
// insecure-skip-tls-verify); other fields of an existing entry are kept.
func SetCluster(cfg *clientcmdapi.Config, name, server, caFile string) {
	c, ok := cfg.Clusters[name]
	if !ok {
		c = clientcmdapi.NewCluster()
		cfg.Clusters[name] = c
	}
	c.Server = server
	if caFile != "" {
		c.CertificateAuthority, c.CertificateAuthorityData, c.InsecureSkipTLSVerify = caFile, nil, false
	}
}

// SetContext points the context name at cluster (unless empty) and user.
// Without a cluster the context must exist.
func SetContext(cfg *clientcmdapi.Config, files []string, name, cluster, user string) error {
	c, ok := cfg.Contexts[name]
	if !ok {
		if cluster == "" {
			return fmt.Errorf("context %q is not in %s: create it first (kubectl config set-context %s "+
				"--cluster=NAME), or give --server", name, strings.Join(files, ", "), name)
		}
		c = clientcmdapi.NewContext()
		cfg.Contexts[name] = c
	}
	if cluster != "" {
		c.Cluster = cluster
	}
	c.AuthInfo = user
	return nil
}

// SetClusterAudience rewrites the cluster name's extension extName with
// edit (given the extension's JSON, nil when absent; an edit answering
// "{}" removes the extension), and points every context of that cluster at
// user, creating a context named after the cluster when none uses it. It
// returns the contexts, sorted, and for those that used another user,
// "CONTEXT used USER".
func SetClusterAudience(cfg *clientcmdapi.Config, name, extName string, edit func(raw []byte) ([]byte, error),
	user string) (contexts, moved []string, err error) {
	c, ok := cfg.Clusters[name]
	if !ok {
		return nil, nil, fmt.Errorf("the kubeconfig has no cluster %q (kubectl config get-clusters lists them)", name)
	}
	var old []byte
	if ext, ok := c.Extensions[extName]; ok {
		if u, ok := ext.(*runtime.Unknown); ok {
			old = u.Raw
		} else if old, err = json.Marshal(ext); err != nil {
			return nil, nil, err
		}
	}
	raw, err := edit(old)
	if err != nil {
		return nil, nil, err
	}
	if c.Extensions == nil {
		c.Extensions = map[string]runtime.Object{}
	}
	if string(raw) == "{}" {
		delete(c.Extensions, extName)
	} else {
		c.Extensions[extName] = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
	}
	for n, ctx := range cfg.Contexts {
		if ctx.Cluster == name {
			if ctx.AuthInfo != "" && ctx.AuthInfo != user {
				moved = append(moved, fmt.Sprintf("%s used %s", n, ctx.AuthInfo))
			}
			ctx.AuthInfo = user
			contexts = append(contexts, n)
		}
	}
	if len(contexts) == 0 {
		if _, taken := cfg.Contexts[name]; taken {
			return nil, nil, fmt.Errorf("no context uses cluster %q, and the context %q uses another: create one "+
				"(kubectl config set-context NAME --cluster=%s)", name, name, name)
		}
		ctx := clientcmdapi.NewContext()
		ctx.Cluster, ctx.AuthInfo = name, user
		cfg.Contexts[name] = ctx
		contexts = []string{name}
	}
	sort.Strings(contexts)
	sort.Strings(moved)
	return contexts, moved, nil
}
