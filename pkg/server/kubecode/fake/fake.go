// Package fake is a kubecode.Code for the commands' tests: it answers what
// the test gives it and records what it was asked. What kube-apiserver's
// code answers is pkg/server/kubecode/linked's tests' (against its own code) and
// test/e2e's (against kube-apiserver).
package fake

import (
	"context"
	"errors"
	"sync"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
)

// Code answers Predict with Prediction, CheckAuthConfig with Note and
// CheckErr, and refuses ServeProxy unless ServeErr is nil and Serve set.
type Code struct {
	mu         sync.Mutex
	Prediction kubecode.Prediction
	Note       string
	CheckErr   error
	// Serve, when set, is what ServeProxy does.
	Serve func(ctx context.Context, c kubecode.ProxyConfig) error
	// Record, when set, is what StartRecorder does.
	Record func(c kubecode.RecordConfig) (kubecode.Recorder, error)

	// Predicted, Checked and Served record the calls.
	Predicted []kubecode.PredictRequest
	Checked   []Check
	Served    []kubecode.ProxyConfig
	// Controllers are the sudo controllers run.
	Controllers []kubecode.SudoControllerConfig
}

// Check is one CheckAuthConfig call.
type Check struct{ Path, Issuer, Audience string }

var _ kubecode.Code = &Code{}

func (f *Code) Predict(_ context.Context, r kubecode.PredictRequest) (kubecode.Prediction, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Predicted = append(f.Predicted, r)
	return f.Prediction, nil
}

func (f *Code) CheckAuthConfig(path, issuer, audience string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Checked = append(f.Checked, Check{path, issuer, audience})
	return f.Note, f.CheckErr
}

func (f *Code) ServeProxy(ctx context.Context, c kubecode.ProxyConfig) error {
	f.mu.Lock()
	f.Served = append(f.Served, c)
	serve := f.Serve
	f.mu.Unlock()
	if serve == nil {
		return errors.New("this fake serves no proxy")
	}
	return serve(ctx, c)
}

// RunSudoController records the configuration and returns.
func (f *Code) RunSudoController(_ context.Context, c kubecode.SudoControllerConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Controllers = append(f.Controllers, c)
	return nil
}

// StartRecorder calls Record, or refuses.
func (f *Code) StartRecorder(c kubecode.RecordConfig) (kubecode.Recorder, error) {
	if f.Record == nil {
		return nil, errors.New("fake: StartRecorder")
	}
	return f.Record(c)
}
