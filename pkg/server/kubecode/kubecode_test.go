package kubecode

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDifferences(t *testing.T) {
	p := Identity{Username: "u", Groups: []string{"g"}, Extra: map[string][]string{"k": {"v"}}}
	assert.Empty(t, Differences(p, Identity{Username: "u", Groups: []string{"g", "system:authenticated"}, Extra: map[string][]string{"k": {"v"}}}, false))
	assert.Equal(t, []string{
		`username: predicted "u", the API server says "oidc:u"`,
		`group "g" predicted, the API server does not report it`,
		`group "oidc:g" reported by the API server, not predicted from the token`,
		`extra "k": predicted ["v"], the API server says []`,
	}, Differences(p, Identity{Username: "oidc:u", Groups: []string{"oidc:g", "system:authenticated"}}, false))
	assert.Empty(t, Differences(Identity{Refused: "expired"}, Identity{}, true), "both refuse")
	assert.Len(t, Differences(Identity{Refused: "expired"}, Identity{Username: "u"}, false), 1)
	assert.Len(t, Differences(p, Identity{}, true), 1)
}
