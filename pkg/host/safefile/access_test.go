package safefile

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRuleCheck: each rule against each way a file can be someone else's,
// as the platform's Access says it (the platform tests check that real
// files give these Access values).
func TestRuleCheck(t *testing.T) {
	mine := Access{Owner: OwnerSelf}
	cases := []struct {
		name   string
		access Access
		// want per rule: "" accepted, else a substring of the refusal.
		private, secret, issued, cache string
	}{
		{"the user's alone", mine, "", "", "", ""},
		{"others may read", Access{Owner: OwnerSelf, OthersRead: true}, "", "readable by others", "", ""},
		{"a group may write", Access{Owner: OwnerSelf, OthersRead: true, OthersWrite: true}, "writable by others", "writable by others", "writable by others", ""},
		{"anyone may write", Access{Owner: OwnerSelf, OthersWrite: true, WorldWrite: true}, "writable by others", "writable by others", "writable by others", "writable by others"},
		{"another user's", Access{Owner: OwnerOther}, "(use one of your own)", "(use one of your own)", "(use one of your own, or root's)", "(use one of your own)"},
		{"the system's", Access{Owner: OwnerSystem}, systemOwned, systemOwned, "", systemOwned},
	}
	for _, tc := range cases {
		for _, r := range []struct {
			rule Rule
			want string
		}{{Private, tc.private}, {Secret, tc.secret}, {Issued, tc.issued}, {Cache, tc.cache}} {
			err := r.rule.Check("test file", "/x/f", tc.access, false)
			if r.want == "" {
				assert.NoError(t, err, "%s, rule %d", tc.name, r.rule)
			} else {
				assert.ErrorContains(t, err, r.want, "%s, rule %d", tc.name, r.rule)
				assert.ErrorContains(t, err, "test file /x/f", "the refusal names the file")
			}
		}
		assert.NoError(t, NoRule.Check("test file", "/x/f", tc.access, false), "NoRule checks nothing")
	}
}
