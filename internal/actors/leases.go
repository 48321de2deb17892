package actors

import (
	"context"
	"sync"
)

// leases makes sure that at most one instance of a task runs on this worker at
// a time (invariant 4, within one worker): a restarted or re-assigned task
// waits until its predecessor's pipeline has returned, which includes its last
// offset flush, before it opens.
type leases struct {
	mu    sync.Mutex
	taken map[string]chan struct{}
	wg    sync.WaitGroup
}

func newLeases() *leases { return &leases{taken: map[string]chan struct{}{}} }

// acquire waits until no other holder of key runs, or ctx ends. The returned
// release must be called once the holder's work has stopped.
func (l *leases) acquire(ctx context.Context, key string) (release func(), err error) {
	for {
		l.mu.Lock()
		prev, busy := l.taken[key]
		if !busy {
			ch := make(chan struct{})
			l.taken[key] = ch
			l.wg.Add(1)
			l.mu.Unlock()
			var once sync.Once
			return func() {
				once.Do(func() {
					l.mu.Lock()
					delete(l.taken, key)
					l.mu.Unlock()
					close(ch)
					l.wg.Done()
				})
			}, nil
		}
		l.mu.Unlock()
		select {
		case <-prev:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// held reports whether key's lease is taken.
func (l *leases) held(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.taken[key]
	return ok
}

// wait blocks until every lease is released or ctx ends.
func (l *leases) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
