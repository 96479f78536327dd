package kubeapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBudgetBoundsAnswersInFlight: the reviews being decoded at once take
// at most MaxDecodedInFlight together (issue 46: no row sent concurrent
// reviews, so a bound raised 16 times passed): answers the command drops
// once read are charged while they are decoded and given back after; the
// answers it keeps are charged against MaxDecoded and never given back.
func TestBudgetBoundsAnswersInFlight(t *testing.T) {
	doc := []byte(`{"items":[` + strings.Repeat(`{},`, 1<<13) + `{}]}`)
	cost := DecodeCost(doc, false)
	require.Greater(t, cost, int64(MaxDecodedInFlight/32), "an answer a few of which fill the bound")
	c := (&Client{}).WithBudget(NewBudget())
	fit := int(MaxDecodedInFlight / cost)
	var releases []func()
	for i := range fit {
		release, err := c.charge("/review", doc, answer{})
		require.NoError(t, err, "answer %d of %d fits", i+1, fit)
		releases = append(releases, release)
	}
	_, err := c.charge("/review", doc, answer{})
	require.ErrorIs(t, err, ErrTooLarge, "one more than MaxDecodedInFlight at once")
	assert.Contains(t, err.Error(), "the answers being read would take more than 128 MiB once decoded")
	releases[0]()
	release, err := c.charge("/review", doc, answer{})
	require.NoError(t, err, "one given back, one more fits")
	release()

	kept := int(MaxDecoded / cost)
	for i := range kept {
		_, err := c.charge("/list", doc, answer{kept: true})
		require.NoError(t, err, "kept answer %d of %d", i+1, kept)
	}
	_, err = c.charge("/list", doc, answer{kept: true})
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "the answers this command keeps would take more than 512 MiB")
}
