package doctest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFields(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{`a b  c`, []string{"a", "b", "c"}},
		{`--x='a b' "c d"`, []string{"--x=a b", "c d"}},
		{`"a \" b"`, []string{`a " b`}},
		{`'a \ b'`, []string{`a \ b`}},
		{`a\ b`, []string{"a b"}},
		{`--x=""`, []string{"--x="}},
	} {
		assert.Equal(t, tt.want, Fields(tt.in), tt.in)
	}
}

func TestLines(t *testing.T) {
	for _, tt := range []struct {
		name, lang, body string
		want             []string
		wantOutput       [][]string
		wantProblems     int
	}{
		{name: "comments", lang: "sh", body: "a # c\n# only a comment\nb 'x # y' \"z # w\" https://h/#frag\n",
			want: []string{"a", "b 'x # y' \"z # w\" https://h/#frag"}},
		{name: "an escaped quote keeps the comment sign quoted", lang: "sh", body: "echo \"a \\\" # b\"\n",
			want: []string{"echo \"a \\\" # b\""}},
		{name: "continuation lines, comments after them", lang: "sh", body: "a \\\n  --b \\\n  --c   # d\n",
			want: []string{"a --b --c"}},
		{name: "backslash-space ends the command", lang: "sh", body: "a \\   # or b\n  --c\n",
			want: []string{"--c"}, wantProblems: 1},
		{name: "console: commands and their output", lang: "console", body: "$ a\nout 1\nout 2\n$ b # c\n",
			want: []string{"a", "b"}, wantOutput: [][]string{{"out 1", "out 2"}, nil}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lines, problems := Block{File: "f.md", Line: 1, Lang: tt.lang, Body: tt.body}.Lines()
			assert.Len(t, problems, tt.wantProblems)
			var got []string
			for i, l := range lines {
				got = append(got, l.Text)
				if tt.wantOutput != nil {
					assert.Equal(t, tt.wantOutput[i], l.Output)
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBlocksAndMarkers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.md")
	require.NoError(t, os.WriteFile(file, []byte("text\n\n<!-- doctest: skip: needs a cloud -->\n\n```sh\na\n```\n```yaml\nk: v\n```\n"), 0o600))
	blocks, err := Blocks(file)
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	assert.Equal(t, Block{File: file, Line: 5, Lang: "sh", Body: "a\n", Skip: "needs a cloud"}, blocks[0])
	assert.Equal(t, Block{File: file, Line: 8, Lang: "yaml", Body: "k: v\n"}, blocks[1])

	require.NoError(t, os.WriteFile(file, []byte("```sh\na\n"), 0o600))
	_, err = Blocks(file)
	assert.ErrorContains(t, err, "not closed")
}

func TestPlugin(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want []string
		ok   bool
	}{
		{[]string{"kubectl", "impersonate", "whoami", "-o", "json", "|", "jq"}, []string{"whoami", "-o", "json"}, true},
		{[]string{"/usr/local/bin/kubectl-impersonate", "proxy", "&&", "x"}, []string{"proxy"}, true},
		{[]string{"kubectl", "get", "pods"}, nil, false},
		{[]string{"cosign", "verify-blob", "--certificate-github-workflow-repository=kubectl-impersonate/kubectl-impersonate", "--bundle", "b"}, nil, false},
	} {
		got, ok := Plugin(tt.in)
		assert.Equal(t, tt.ok, ok)
		assert.Equal(t, tt.want, got)
	}
}
