package kubeapi

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// isToken is the regular expression it replaced, on edges and on random
// names of its alphabet and a little beyond.
func TestIsTokenIsTheExpression(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._:-]{0,251}[A-Za-z0-9])?$`)
	cases := []string{"", "a", "a.", ".a", "a.b", "a..b", "a:b", "a/b", "A-Z", "é", "a\x00", strings.Repeat("a", 253),
		strings.Repeat("a", 254), "a" + strings.Repeat("-", 251) + "b", "a" + strings.Repeat("-", 252) + "b"}
	rng := rand.New(rand.NewPCG(57, 1))
	const alphabet = "aZ09._:-/ \x7f"
	for range 20000 {
		b := make([]byte, rng.IntN(8))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		assert.Equal(t, re.MatchString(s), isToken(s), "%q", s)
	}
}
