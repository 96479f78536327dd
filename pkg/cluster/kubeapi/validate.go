package kubeapi

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// An API server's discovery is checked before any of it reaches the disk
// (group and version name the cache's directories) or the screen, more
// strictly than client-go, which only parses the group version: a group
// is "" or a DNS-1123 subdomain, a version a DNS-1035 label (what
// kube-apiserver accepts for CRDs and APIServices), and resource, kind,
// verb, short and category names plain tokens (token). docs/security.md,
// "The API server".

// isToken tells whether s is a name that is safe as a path element and on
// a terminal: letters and digits, and ".", "_", "-", ":" inside, at most
// 253 bytes. Written out: the regular expression it was
// (^[A-Za-z0-9](?:[A-Za-z0-9._:-]{0,251}[A-Za-z0-9])?$) cost every start
// of the binary 181 KB and 0.4 ms to compile (TestNothingHeavyAtStart).
func isToken(s string) bool {
	if len(s) == 0 || len(s) > 253 || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' && c != ':' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func checkGroup(name string) error {
	if name == "" || len(validation.IsDNS1123Subdomain(name)) == 0 {
		return nil
	}
	return fmt.Errorf("group %q is not an API group name (a DNS-1123 subdomain)", name)
}

func checkVersion(v string) error {
	if len(validation.IsDNS1035Label(v)) == 0 {
		return nil
	}
	return fmt.Errorf("version %q is not an API version name (a DNS-1035 label)", v)
}

func checkToken(what, s string) error {
	if isToken(s) && !strings.Contains(s, "..") {
		return nil
	}
	return fmt.Errorf("%s %q is not a plain name", what, s)
}

func checkTokens(what string, ss []string) error {
	for _, s := range ss {
		if err := checkToken(what, s); err != nil {
			return err
		}
	}
	return nil
}

// checkResource checks one resource of a list ("pods", "pods/log").
func checkResource(r metav1.APIResource) error {
	name, sub, hasSub := strings.Cut(r.Name, "/")
	if err := checkToken("resource", name); err != nil {
		return fmt.Errorf("resource %q is not a plain name", r.Name)
	}
	if hasSub {
		if err := checkToken("subresource", sub); err != nil {
			return fmt.Errorf("resource %q is not a plain name", r.Name)
		}
	}
	if r.SingularName != "" {
		if err := checkToken("singular name", r.SingularName); err != nil {
			return err
		}
	}
	if r.Kind != "" {
		if err := checkToken("kind", r.Kind); err != nil {
			return err
		}
	}
	if err := checkGroup(r.Group); err != nil {
		return err
	}
	if r.Version != "" {
		if err := checkVersion(r.Version); err != nil {
			return err
		}
	}
	for what, ss := range map[string][]string{"verb": r.Verbs, "short name": r.ShortNames, "category": r.Categories} {
		if err := checkTokens(what, ss); err != nil {
			return err
		}
	}
	return nil
}

// checkResourceList checks a group version's resources, which must be
// those of gv.
func checkResourceList(gv string, rl *metav1.APIResourceList) error {
	if rl.GroupVersion != "" && rl.GroupVersion != gv {
		return fmt.Errorf("the resources of %q say they are %q's", gv, rl.GroupVersion)
	}
	for _, r := range rl.APIResources {
		if err := checkResource(r); err != nil {
			return err
		}
	}
	return nil
}

// CheckLabels checks an object's labels as kube-apiserver validates every
// object's (a qualified name each key, at most 63 bytes each value): an
// object that carries others comes from no Kubernetes API server, and a
// list that kept them would keep what its answers' size alone bounds
// (docs/security.md, "The API server").
func CheckLabels(labels map[string]string) error {
	for k, v := range labels {
		if len(validation.IsQualifiedName(k)) > 0 {
			return fmt.Errorf("label key %.64q is not a qualified name", k)
		}
		if len(validation.IsValidLabelValue(v)) > 0 {
			return fmt.Errorf("label %s has the value %.64q, not a label value (at most 63 letters, digits, '-', '_' "+
				"or '.')", k, v)
		}
	}
	return nil
}
