package kubeapi

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/hostileapi"
)

// FuzzDiscoveryWrites: whatever aggregated discovery document a server
// answers, every file written stays under that server's cache directory,
// and another cluster's directory beside it is unchanged (hack/fuzz.sh runs
// it beyond the seeds).
func FuzzDiscoveryWrites(f *testing.F) {
	seed := func(groups ...apidiscoveryv2.APIGroupDiscovery) {
		b, err := json.Marshal(apidiscoveryv2.APIGroupDiscoveryList{Items: groups})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(hostileapi.DefaultGroups()...)
	seed(group("../legit_6443/apps", "v1"))
	seed(group("x.example", "../../legit_6443/apps/v1"))
	seed(group("../../escaped", "v1"))
	seed(group("a", ".."), group("", "v1"))
	seed(hostileapi.Group("x.example", "v1", hostileapi.Resource("../../w", "W", true, metav1.GroupVersionKind{Group: "x.example", Version: "v1"})))
	f.Add([]byte(`{"items":[{"metadata":{"name":"a/b"},"versions":[{"version":"v1","resources":[{"resource":"r","responseKind":{"kind":"R"}}]}]}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		base := t.TempDir()
		dir := filepath.Join(base, "discovery", "server_6443")
		legit := filepath.Join(base, "discovery", "legit_6443")
		canary := filepath.Join(legit, "apps", "v1", "serverresources.json")
		if err := os.MkdirAll(filepath.Dir(canary), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(canary, []byte("canary"), 0o660); err != nil {
			t.Fatal(err)
		}
		d := &Discovered{Resources: map[string]*metav1.APIResourceList{}, Failed: map[string]string{}}
		if d.addAggregated(doc) != nil {
			return // refused: nothing to write
		}
		writeDiscoveryCache(dir, d)
		err := filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch {
			case p == base, p == filepath.Join(base, "discovery"), p == dir, strings.HasPrefix(p, dir+string(filepath.Separator)):
			case p == legit, strings.HasPrefix(p, legit+string(filepath.Separator)):
				switch p {
				case canary:
					if b, _ := os.ReadFile(p); string(b) != "canary" {
						t.Fatalf("another cluster's cache changed: %q", b)
					}
				case legit, filepath.Join(legit, "apps"), filepath.Dir(canary):
				default:
					t.Fatalf("written into another cluster's cache: %s", p)
				}
			default:
				t.Fatalf("written outside the server's directory: %s", p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
