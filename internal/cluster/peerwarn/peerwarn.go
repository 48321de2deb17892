// Package peerwarn rate-limits the warnings about a peer that keeps
// failing the same way: a worker with the wrong gossip key or an
// untrusted certificate is retried every probe or dial interval, and one
// warning per peer and period says why without flooding the log.
package peerwarn

import (
	"sync"
	"time"
)

// maxPeers bounds the memory of peers seen: past it, the record starts
// over (peers that came and went would otherwise accumulate).
const maxPeers = 1024

// Limiter lets one warning per key (a peer's address) through every
// period.
type Limiter struct {
	period time.Duration
	mu     sync.Mutex
	last   map[string]time.Time
}

// New returns a Limiter that lets a key through once per period.
func New(period time.Duration) *Limiter {
	return &Limiter{period: period, last: map[string]time.Time{}}
}

// Allow reports whether a warning about key may be written now, and if so
// starts its period.
func (l *Limiter) Allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if t, ok := l.last[key]; ok && now.Sub(t) < l.period {
		return false
	}
	if len(l.last) >= maxPeers {
		clear(l.last)
	}
	l.last[key] = now
	return true
}
