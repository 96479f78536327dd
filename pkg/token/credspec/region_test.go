package credspec

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// isRegion is the regular expression it replaced.
func TestIsRegionIsTheExpression(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9-]{1,32}$`)
	cases := []string{"", "zrh", "-", "ZRH", "z.h", strings.Repeat("a", 32), strings.Repeat("a", 33), "a\n"}
	rng := rand.New(rand.NewPCG(57, 2))
	const alphabet = "az09-A._/"
	for range 20000 {
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		assert.Equal(t, re.MatchString(s), isRegion(s), "%q", s)
	}
}
