// Package kubeapi talks to the API server with the transport client-go
// builds for a kubeconfig, and asks it who the caller is (SelfSubjectReview)
// and which version it runs. It decodes plain JSON into k8s.io/api types:
// client-go's typed clients would link the scheme of every API group.
package kubeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// Client posts to the API server with the transport client-go builds for a
// kubeconfig (TLS, exec plugins, impersonation headers). It decodes plain
// JSON into k8s.io/api types: client-go's typed clients would link the
// scheme of every API group.
type Client struct {
	hc       *http.Client
	host     string
	requests atomic.Int64
}

// Requests is the number of requests sent so far.
func (c *Client) Requests() int { return int(c.requests.Load()) }

// NewClient returns a Client for cfg.
func NewClient(cfg *rest.Config) (*Client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the API client: %w", err)
	}
	return &Client{hc: hc, host: strings.TrimSuffix(cfg.Host, "/")}, nil
}

// APIError is a Kubernetes Status answer.
type APIError struct {
	Code    int
	Reason  string
	Message string
}

// Error reads like kubectl's "Error from server (Reason): message".
func (e *APIError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("the server answered %d: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("Error from server (%s): %s", e.Reason, e.Message)
}

// Post sends in as JSON to path and decodes a 2xx answer into out.
func (c *Client) Post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, path, "", bytes.NewReader(body), 4<<20, out)
}

// Get decodes the answer to a GET of path into out. Discovery documents
// and lists of RBAC objects can be large: up to 16 MiB.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodGet, path, "", nil, 16<<20, out)
}

// GetAs is Get with another Accept (e.g. metadata-only lists).
func (c *Client) GetAs(ctx context.Context, path, accept string, out any) error {
	return c.do(ctx, http.MethodGet, path, accept, nil, 64<<20, out)
}

// do sends one request and decodes a 2xx answer of at most limit bytes
// into out; other answers become an APIError from their Status.
func (c *Client) do(ctx context.Context, method, path, accept string, body io.Reader, limit int64, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	c.requests.Add(1)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return fmt.Errorf("reading the answer of %s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		return statusError(resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decoding the answer of %s: %w", path, err)
	}
	return nil
}

// statusError reads a Kubernetes Status body.
func statusError(code int, b []byte) error {
	var st struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &st) != nil || st.Message == "" {
		st.Message = strings.TrimSpace(string(b))
	}
	return &APIError{Code: code, Reason: st.Reason, Message: st.Message}
}
