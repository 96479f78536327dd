package settings

import (
	"bytes"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAliasFlag(t *testing.T) {
	for _, tt := range []struct {
		name       string
		args       []string
		deprecated bool
		want       []string
		warning    string
	}{
		{"canonical", []string{"--new=a"}, true, []string{"a"}, ""},
		{"silent alias", []string{"--old=a"}, false, []string{"a"}, ""},
		{"deprecated alias warns", []string{"--old=a"}, true, []string{"a"}, "Flag --old has been deprecated, use --new\n"},
		{"both accumulate in one slice", []string{"--new=a", "--old=b"}, false, []string{"a", "b"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
			var out bytes.Buffer
			fs.SetOutput(&out)
			var v []string
			fs.StringSliceVar(&v, "new", nil, "")
			var warn bytes.Buffer
			if tt.deprecated {
				AliasFlag(fs, "old", "new", &warn)
			} else {
				AliasFlag(fs, "old", "new", nil)
			}
			require.NoError(t, fs.Parse(tt.args))
			assert.Equal(t, tt.want, v)
			assert.True(t, fs.Changed("new"), "the canonical flag counts as given")
			assert.Equal(t, tt.warning, warn.String())
			assert.Empty(t, out.String(), "nothing on the flag set's output (cobra copies it to stdout)")
			assert.True(t, fs.Lookup("old").Hidden, "the alias is not in --help")
		})
	}
}
