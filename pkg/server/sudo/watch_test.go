package sudo

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
)

// toU is o as the dynamic client serves it.
func toU(t *testing.T, o any, kind, rv string) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(elevation.Group + "/" + elevation.Version)
	u.SetKind(kind)
	u.SetResourceVersion(rv)
	return u
}

// bookmark is the watch-list's end of its initial events.
func bookmark(kind, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(elevation.Group + "/" + elevation.Version)
	u.SetKind(kind)
	u.SetResourceVersion(rv)
	u.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	return u
}

// TestWatchRelistIsNotCurrent (an attacker's review): after a watch drops
// and its resource version is too old (410: events, a revocation among
// them, may be lost), the reflector lists again by a watch that sends the
// initial events; until they arrive the old view is not current: 503,
// never the old allow. Driven through client-go's reflector and the fake
// dynamic client.
func TestWatchRelistIsNotCurrent(t *testing.T) {
	g, r := pair()
	g.CreationTimestamp = metav1.NewTime(time.Now())
	s := NewStore()
	c := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: elevation.Group, Version: elevation.Version, Resource: "sudogrants"}:   "SudoGrantList",
		{Group: elevation.Group, Version: elevation.Version, Resource: "sudorequests"}: "SudoRequestList",
	})
	var calls atomic.Int32
	var mu sync.Mutex
	var first *watch.FakeWatcher
	c.PrependWatchReactor("sudogrants", func(k8stesting.Action) (bool, watch.Interface, error) {
		fw := watch.NewFakeWithChanSize(10, false)
		switch calls.Add(1) {
		case 1:
			fw.Add(toU(t, &g, "SudoGrant", "5"))
			fw.Action(watch.Bookmark, bookmark("SudoGrant", "10"))
			mu.Lock()
			first = fw
			mu.Unlock()
		case 2: // watching again from 10: too old
			fw.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
				Message: "too old resource version"})
		default: // the list by watch: its initial events do not come
		}
		return true, fw, nil
	})
	c.PrependWatchReactor("sudorequests", func(k8stesting.Action) (bool, watch.Interface, error) {
		fw := watch.NewFakeWithChanSize(10, false)
		fw.Add(toU(t, &r, "SudoRequest", "6"))
		fw.Action(watch.Bookmark, bookmark("SudoRequest", "10"))
		return true, fw, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Watch(ctx, c, nil); close(done) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(5 * time.Second); s.Current() != nil && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	_, err := s.Elevate(alice, "payments", "sudo-x")
	require.NoError(t, err, "listed and watching: the grant counts")
	mu.Lock()
	first.Stop()
	mu.Unlock()
	time.Sleep(DefaultGrace + 500*time.Millisecond)
	_, err = s.Elevate(alice, "payments", "sudo-x")
	require.ErrorIs(t, err, ErrNotCurrent, "relisting: not current")
	assert.GreaterOrEqual(t, calls.Load(), int32(3), "the reflector watched again, then listed by watch")
}
