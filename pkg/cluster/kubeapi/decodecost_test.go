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

// TestDecodeCostWeights: DecodeCost's contract, value by value: a weight
// for every container of the first three levels (weightItem), deeper ones
// (weightContainer) and scalars (weightScalar), keys free, a fieldsV1
// value counted as one container; in a page, an item of items[] and an
// entry of an item's metadata.labels, nothing else; malformed input costs
// what was read.
func TestDecodeCostWeights(t *testing.T) {
	const I, C, S, P, L = weightItem, weightContainer, weightScalar, weightPageItem, weightPageLabel
	for _, tt := range []struct {
		doc  string
		page bool
		want int64
	}{
		{doc: `{}`, want: I},
		{doc: `[]`, want: I},
		{doc: `{"a":{"b":{"c":{}}}}`, want: 3*I + C},
		{doc: `[1,[2,[3,[4]]]]`, want: 3*I + C + 4*S},
		{doc: `{"a":1,"b":"x","c":true,"d":null}`, want: I + 4*S},
		{doc: `{ "a" : 1 ,` + "\n\t\r" + `"b":2}`, want: I + 2*S},
		{doc: `{"a":"x\"y","b":1}`, want: I + 2*S},
		{doc: `{"a":"x\\","b":1}`, want: I + 2*S},
		{doc: `{"a":123,"b":-1.5e3}`, want: I + 2*S},
		{doc: `[1,2,3]`, want: I + 3*S},
		{doc: `[123]`, want: I + S},
		{doc: `[true,false]`, want: I + 2*S},
		{doc: `{"a":[{"b":[{"c":1}]}]}`, want: 3*I + 2*C + S},
		{doc: `{"fieldsV1":{"a":{"b":1}},"x":1}`, want: 2*I + S},
		{doc: `{"metadata":{"fieldsV1":{"f:a":{"f:b":{}}}},"x":[1]}`, want: 3*I + I + S},
		{doc: `{"fieldsV1xxxxxxxxxxxxxxxxxx":{"a":{"b":1}}}`, want: 3*I + S},
		{doc: `{"fieldsV1":1,"a":{}}`, want: I + S + I},
		{doc: `{"a":`, want: I},
		{doc: `{"a":"xyz`, want: I + S},
		{doc: `]]]}}`, want: 0},
		{doc: `1,2`, want: 2 * S},
		{doc: `123`, want: S},
		{doc: `"a","b"`, want: 2 * S},
		{doc: `{"a":1,"b":2,"c":[3,"x",{}]}`, want: I + 2*S + I + 2*S + I},
		{doc: `{"fieldsV1":{"a":{},"b":1,"c":[{}]},"d":1}`, want: 2*I + S},
		{doc: `{"items":[{},{"metadata":{"labels":{"a":"1","b":"2"}}}]}`, page: true, want: 2*P + 2*L},
		{doc: `{"items":[{"spec":{"labels":{"a":"1"}}}]}`, page: true, want: P},
		{doc: `{"items":[{"metadata":{"annotations":{"a":"1"},"labels":{"b":"2"},"name":"x"}}]}`, page: true, want: P + L},
		{doc: `{"items":{"a":{}}}`, page: true, want: 0},
		{doc: `{"x":{"items":[{}]}}`, page: true, want: 0},
		{doc: `{"items":[[{}]]}`, page: true, want: P},
		{doc: `{"metadata":{"labels":{"a":"1"}},"items":[]}`, page: true, want: 0},
		{doc: `{"items":[{"metadata":{"labels":{"a":{"b":"1"}}}}]}`, page: true, want: P},
		{doc: `{"items":[{"metadata":{"fieldsV1":{"labels":{"a":"1"}},"labels":{"b":"2"}}}]}`, page: true, want: P + L},
	} {
		assert.Equal(t, tt.want, DecodeCost([]byte(tt.doc), tt.page), "%s (page %v)", tt.doc, tt.page)
	}
}
