package state

import "sync"

// restartBuffer is the capacity of the Restarts channel. Requests that do
// not fit wait in restartQueue instead of being dropped.
const restartBuffer = 16

// restartQueue hands restart requests from the config tailer to the
// Restarts channel without ever blocking the tailer (which would stall every
// Put*) and without dropping a request. Requests waiting for the same
// connector are merged into one that restarts at least as much as either
// (include-tasks if either asks, only-failed only if both ask), so the
// queue holds at most one request per connector.
type restartQueue struct {
	mu      sync.Mutex
	order   []string
	pending map[string]RestartRequest
	wake    chan struct{}
	out     chan RestartRequest
	closed  chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newRestartQueue() *restartQueue {
	q := &restartQueue{
		pending: make(map[string]RestartRequest),
		wake:    make(chan struct{}, 1),
		out:     make(chan RestartRequest, restartBuffer),
		closed:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	go q.run()
	return q
}

func (q *restartQueue) push(r RestartRequest) {
	q.mu.Lock()
	if old, ok := q.pending[r.Connector]; ok {
		r.IncludeTasks = r.IncludeTasks || old.IncludeTasks
		r.OnlyFailed = r.OnlyFailed && old.OnlyFailed
	} else {
		q.order = append(q.order, r.Connector)
	}
	q.pending[r.Connector] = r
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *restartQueue) pop() (RestartRequest, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) == 0 {
		return RestartRequest{}, false
	}
	name := q.order[0]
	q.order = q.order[1:]
	r := q.pending[name]
	delete(q.pending, name)
	return r, true
}

func (q *restartQueue) run() {
	defer close(q.done)
	defer close(q.out)
	for {
		r, ok := q.pop()
		if !ok {
			select {
			case <-q.wake:
				continue
			case <-q.closed:
				return
			}
		}
		select {
		case q.out <- r:
		case <-q.closed:
			return
		}
	}
}

func (q *restartQueue) close() {
	q.once.Do(func() { close(q.closed) })
	<-q.done
}
