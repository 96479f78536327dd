package config

import "testing"

// FuzzParse: any profiles file parses or fails, never panics, and every
// value of a parsed profile turns into flag values or an error.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"profiles:\n  a:\n    oidc-issuer-url: https://id.example.com\n    oidc-extra-scope: [email, groups]\n    allowedServers: [https://k8s:6443]\n",
		"profiles:\n  b:\n    oidc-use-access-token: true\n    authentication-timeout: 30\n",
		"profiles: {a: {x: {y: z}}}", "profiles: []", "other: 1", "", "profiles:\n  a: null\n", "\t", "profiles: {a: {k: [1, [2]]}}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b, "config.yaml")
		if err != nil {
			return
		}
		for name := range file.Profiles {
			p, err := file.Profile(name)
			if err != nil {
				t.Fatalf("profile %q listed but not found: %v", name, err)
			}
			for _, v := range p {
				_, _ = Values(v)
			}
		}
	})
}
