package sudo

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// Watch feeds s from the API server's SudoGrants and SudoRequests in every
// namespace (client-go reflectors: list, then watch, relisting after a
// failure) until ctx ends. log receives why a watch closed.
func (s *Store) Watch(ctx context.Context, c dynamic.Interface, log func(string)) {
	var wg sync.WaitGroup
	for i, plural := range [...]string{"sudogrants", "sudorequests"} {
		gvr := schema.GroupVersionResource{Group: elevation.Group, Version: elevation.Version, Resource: plural}
		res := c.Resource(gvr)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				s.listing(i)
				l, err := res.List(ctx, o)
				if err != nil {
					s.failed(i, logging.OneLine(err.Error(), 300))
				}
				return l, err
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				if o.SendInitialEvents != nil && *o.SendInitialEvents {
					s.listing(i) // a list by watch: synced at its Replace
				}
				w, err := res.Watch(ctx, o)
				if err != nil {
					s.failed(i, logging.OneLine(err.Error(), 300))
					return nil, err
				}
				gen := s.opened(i)
				return newFeedWatch(w, func() { s.closed(i, gen, "") }), nil
			},
		}
		r := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, &feedStore{s: s, i: i},
			cache.ReflectorOptions{Name: "sudo " + plural, TypeDescription: plural})
		wg.Go(func() {
			// ListAndWatch returns when it must list again: the feed is
			// closed until it has (a bounded pause between tries).
			for ctx.Err() == nil {
				err := r.ListAndWatchWithContext(ctx)
				if err != nil && ctx.Err() == nil {
					s.failed(i, logging.OneLine(err.Error(), 300))
					if log != nil {
						log(fmt.Sprintf("watching %s: %s", plural, logging.OneLine(err.Error(), 300)))
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(retryPause):
				}
			}
		})
	}
	wg.Go(func() {
		t := time.NewTicker(SweepInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.Sweep()
			}
		}
	})
	wg.Wait()
}

// retryPause is the pause between a watch's failure and its next list.
var retryPause = 500 * time.Millisecond

// feedWatch marks its feed closed when the watch's channel closes.
type feedWatch struct {
	w      watch.Interface
	out    chan watch.Event
	stop   chan struct{}
	once   sync.Once
	closed func()
}

func newFeedWatch(w watch.Interface, closed func()) *feedWatch {
	f := &feedWatch{w: w, out: make(chan watch.Event), stop: make(chan struct{}), closed: closed}
	go func() {
		defer close(f.out)
		defer closed()
		for {
			select {
			case e, ok := <-w.ResultChan():
				if !ok {
					return
				}
				select {
				case f.out <- e:
				case <-f.stop:
					return
				}
			case <-f.stop:
				return
			}
		}
	}()
	return f
}

// Stop reports the watch closed at once: the reflector may open the next
// one before the forwarding goroutine ends (its report is then ignored).
func (f *feedWatch) Stop() {
	f.once.Do(func() { close(f.stop); f.closed() })
	f.w.Stop()
}

func (f *feedWatch) ResultChan() <-chan watch.Event { return f.out }

// feedStore is the reflector's store: each object, typed, into s.
type feedStore struct {
	s *Store
	i int
}

var _ cache.ReflectorStore = (*feedStore)(nil)

func (f *feedStore) set(obj any, deleted bool) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("unexpected %T", obj)
	}
	k := elevation.Ref(u.GetNamespace(), u.GetName())
	switch f.i {
	case grantFeed:
		if deleted {
			f.s.setGrant(k, nil)
			return nil
		}
		var g elevation.Grant
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &g); err != nil {
			f.s.setGrant(k, nil) // what cannot be read does not count
			return fmt.Errorf("reading sudogrant %s: %w", k, err)
		}
		f.s.setGrant(k, &g)
	default:
		if deleted {
			f.s.setRequest(k, nil)
			return nil
		}
		var r elevation.Request
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			f.s.setRequest(k, nil)
			return fmt.Errorf("reading sudorequest %s: %w", k, err)
		}
		f.s.setRequest(k, &r)
	}
	return nil
}

func (f *feedStore) Add(obj any) error    { return f.set(obj, false) }
func (f *feedStore) Update(obj any) error { return f.set(obj, false) }
func (f *feedStore) Delete(obj any) error { return f.set(obj, true) }

// Replace is a list: every object at once, then the feed is synced.
func (f *feedStore) Replace(objs []any, _ string) error {
	grants, requests := map[string]elevation.Grant{}, map[string]elevation.Request{}
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		k := elevation.Ref(u.GetNamespace(), u.GetName())
		if f.i == grantFeed {
			var g elevation.Grant
			if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &g) == nil {
				grants[k] = g
			}
			continue
		}
		var r elevation.Request
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r) == nil {
			requests[k] = r
		}
	}
	if f.i == grantFeed {
		f.s.replaceGrants(grants)
	} else {
		f.s.replaceRequests(requests)
	}
	f.s.synced(f.i)
	return nil
}

// Resync: nothing to resync.
func (f *feedStore) Resync() error { return nil }
