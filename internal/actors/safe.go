package actors

import (
	"context"
	"fmt"
	"runtime/debug"
)

// runSafe runs fn and returns nil when it returned nil, else a *failure with
// the trace. A panic inside fn (that is, inside connector code) becomes such
// a failure too, so it can never take the worker down (invariants 5 and 8).
// A task's goroutines run its code through it (taskRun.drive).
func runSafe(ctx context.Context, fn func(context.Context) error) (f *failure) {
	defer func() {
		if r := recover(); r != nil {
			f = &failure{err: fmt.Errorf("panic: %v", r), trace: fmt.Sprintf("panic: %v\n\n%s", r, debug.Stack())}
		}
	}()
	if err := fn(ctx); err != nil {
		if err == errNapping {
			return napped
		}
		return &failure{err: err, trace: err.Error()}
	}
	return nil
}
