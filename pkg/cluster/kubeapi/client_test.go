package kubeapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// answerOf is a response whose body is body.
func answerOf(body string) *http.Response {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(body))}
}

// TestReadAnswerBounds: one answer at most its limit, all of a command's
// at most what is left of MaxAnswers; what was not read is given back,
// exactly.
func TestReadAnswerBounds(t *testing.T) {
	const limit = 100
	for _, tt := range []struct {
		name    string
		left    int64 // of the command's bytes
		body    int
		wantErr string
	}{
		{name: "empty", left: MaxAnswers, body: 0},
		{name: "the limit exactly", left: MaxAnswers, body: limit},
		{name: "one byte past the limit", left: MaxAnswers, body: limit + 1, wantErr: "larger than 0 MiB, the limit for one answer"},
		{name: "what is left exactly fits below the limit", left: 50, body: 49},
		{name: "what is left is used up", left: 50, body: 50, wantErr: "add up to more than 256 MiB"},
		{name: "what is left is the limit, used up", left: limit, body: limit, wantErr: "add up to more than 256 MiB"},
		{name: "what is left is one past the limit", left: limit + 1, body: limit},
		{name: "past what is left", left: 50, body: 80, wantErr: "add up to more than 256 MiB"},
		{name: "nothing left", left: 0, body: 1, wantErr: "add up to more than 256 MiB"},
		{name: "less than nothing left", left: -5, body: 1, wantErr: "add up to more than 256 MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget()
			b.bytes.Store(tt.left)
			c := (&Client{}).WithBudget(b)
			got, err := c.readAnswer(answerOf(strings.Repeat("a", tt.body)), "/x", limit)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrTooLarge)
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Len(t, got, tt.body)
			assert.Equal(t, tt.left-int64(tt.body), b.bytes.Load(), "exactly what was read is taken")
		})
	}
}

// TestTake: take never takes more than is left, nor below zero.
func TestTake(t *testing.T) {
	b := NewBudget()
	b.bytes.Store(10)
	assert.Equal(t, int64(4), take(&b.bytes, 4))
	assert.Equal(t, int64(6), b.bytes.Load())
	assert.Equal(t, int64(6), take(&b.bytes, 100))
	assert.Equal(t, int64(0), b.bytes.Load())
	assert.Equal(t, int64(0), take(&b.bytes, 1))
	b.bytes.Store(-3)
	assert.Equal(t, int64(0), take(&b.bytes, 1))
	assert.Equal(t, int64(-3), b.bytes.Load())
}

// TestChargeOneAnswer: one answer may take MaxDecodedAnswer once decoded,
// not a weight more.
func TestChargeOneAnswer(t *testing.T) {
	items := func(n int) []byte { return []byte("[" + strings.Repeat("{},", n-1) + "{}]") }
	n := int(MaxDecodedAnswer/weightItem) - 1 // the array itself is an item too
	require.Equal(t, int64(MaxDecodedAnswer), DecodeCost(items(n), false))
	c := (&Client{}).WithBudget(NewBudget())
	release, err := c.charge("/x", items(n), answer{})
	require.NoError(t, err, "exactly the bound")
	release()
	_, err = c.charge("/x", items(n+1), answer{})
	require.ErrorIs(t, err, ErrTooLarge)
	assert.ErrorContains(t, err, "would take more than 128 MiB once decoded, the limit for one answer")
}

// TestRequestHeaders: a posted review says it is JSON; every request asks
// for JSON unless told otherwise.
func TestRequestHeaders(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, fmt.Sprintf("%s %s content-type=%q accept=%q", r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Accept")))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, c.Post(context.Background(), "/post", map[string]string{"a": "b"}, &out))
	require.NoError(t, c.Get(context.Background(), "/get", &out))
	require.NoError(t, c.GetAs(context.Background(), "/meta", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", &out))
	assert.Equal(t, []string{
		`POST /post content-type="application/json" accept="application/json"`,
		`GET /get content-type="" accept="application/json"`,
		`GET /meta content-type="" accept="application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"`,
	}, seen)
	assert.Equal(t, 3, c.Requests())
}

// TestRedirectsAreNotFollowed: a 3xx answer is an error that says so, and
// nothing is sent to where it points (the credentials would go along).
func TestRedirectsAreNotFollowed(t *testing.T) {
	var reached int
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached++ }))
	defer elsewhere.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, code)
		}))
		c, err := NewClient(&rest.Config{Host: srv.URL, BearerToken: "secret"})
		require.NoError(t, err)
		var out map[string]any
		err = c.Get(context.Background(), "/api", &out)
		assert.ErrorContains(t, err, fmt.Sprintf("the API server answered /api with a redirect (%d): refusing to follow it", code))
		_, err = c.ServerResources(context.Background(), "", true)
		assert.ErrorContains(t, err, "with a redirect")
		srv.Close()
	}
	assert.Zero(t, reached, "nothing reached the redirect's target")
}

// TestStatusErrorMessage: the server's message is printed up to
// maxMessage bytes, cut on a character boundary past it.
func TestStatusErrorMessage(t *testing.T) {
	exact := strings.Repeat("a", maxMessage)
	assert.Equal(t, exact, statusError(403, []byte(`{"reason":"Forbidden","message":"`+exact+`"}`)).(*APIError).Message)
	long := strings.Repeat("a", maxMessage-1) + "é" + "b"
	got := statusError(403, []byte(`{"message":"`+long+`"}`)).(*APIError).Message
	assert.Equal(t, strings.Repeat("a", maxMessage-1)+"…", got, "cut before the character that crosses the bound")
	assert.Equal(t, "plain text", statusError(500, []byte(" plain text \n")).(*APIError).Message)
	assert.Equal(t, "…", statusError(500, bytes.Repeat([]byte{0x80}, maxMessage+1)).(*APIError).Message, "no character start at all: nothing of it")
	assert.Equal(t, "the server answered 500: plain text", statusError(500, []byte("plain text")).Error())
	assert.Equal(t, "Error from server (Forbidden): no", statusError(403, []byte(`{"reason":"Forbidden","message":"no"}`)).Error())
}

// TestMemoryLimit: a process that reads API servers' answers sets the Go
// runtime's soft memory limit to MemoryLimit, unless $GOMEMLIMIT says
// otherwise (in a process of its own: the limit is the process's).
func TestMemoryLimit(t *testing.T) {
	if os.Getenv("KI_MEMORY_LIMIT_CHILD") != "" {
		_, err := NewClient(&rest.Config{Host: "https://127.0.0.1:1"})
		require.NoError(t, err)
		fmt.Printf("limit=%d\n", debug.SetMemoryLimit(-1))
		return
	}
	for _, tt := range []struct {
		env  string
		want int64
	}{{"", MemoryLimit}, {"GOMEMLIMIT=100MiB", 100 << 20}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryLimit$", "-test.count=1")
		cmd.Env = append(os.Environ(), "KI_MEMORY_LIMIT_CHILD=1", "GOMEMLIMIT=")
		if tt.env != "" {
			cmd.Env = append(cmd.Env, tt.env)
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), fmt.Sprintf("limit=%d\n", tt.want), "with %q", tt.env)
	}
}
