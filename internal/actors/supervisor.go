package actors

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/state"
)

// supervisor is the actor of one connector on one worker. Its children are
// the connector actor (when this worker runs the Connector instance) and one
// task actor per local task; it restarts them when they fail (invariant 5)
// and stops or respawns them as the connector's work changes.
type supervisor struct {
	rt   *Runtime
	name string
	log  zerolog.Logger

	work *ConnectorWork
	// setup is derived from work.Config, anew when the config changes.
	setup     *setup
	connector *child
	tasks     map[int]*child
	byPID     map[string]*child // child PID id -> child, for the restart policy
	deleted   bool

	// writeCancel cancels the task config write in flight, which runs off
	// the actor (invariant 8), when newer configs supersede it.
	writeCancel context.CancelFunc
	// held is a split computed while the connector was created PAUSED and
	// has no tasks yet: as in Connect, it gets its first tasks only once
	// it is resumed.
	held []map[string]string
}

type child struct {
	pid    *actor.PID
	task   int // -1 for the connector actor
	config map[string]string
	state  *incarnation
}

func newSupervisor(rt *Runtime, name string) *supervisor {
	return &supervisor{
		rt: rt, name: name,
		log:   rt.opts.Log.With().Str("connector", name).Logger(),
		tasks: map[int]*child{}, byPID: map[string]*child{},
	}
}

// taskConfigsComputed is sent by the connector actor with a fresh split.
type taskConfigsComputed struct {
	configs []map[string]string
}

// taskConfigsWritten reports the end of a task config write.
type taskConfigsWritten struct {
	configs []map[string]string
	err     error
}

func (s *supervisor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *ConnectorWork:
		s.reconcile(c, m)
	case *taskConfigsComputed:
		if s.work != nil && s.work.Target == state.TargetPaused && len(s.work.Committed) == 0 {
			s.held = m.configs
			return
		}
		s.held = nil
		s.maybeWriteTaskConfigs(c, m.configs)
	case *taskConfigsWritten:
		if m.err != nil {
			s.log.Error().Err(m.err).Msg("cannot store task configs; the connector will retry")
		} else {
			s.log.Info().Int("tasks", len(m.configs)).Msg("task configs stored")
		}
	case *restart:
		s.restart(c, m)
	case *retire:
		s.deleted = m.deleted
		c.Stop(c.Self())
	case *actor.Terminated:
		s.rt.forgetMailbox(m.Who)
		s.forget(m.Who)
	case *actor.Stopping:
		if s.writeCancel != nil {
			s.writeCancel()
		}
	case *actor.Stopped:
		if s.deleted {
			n := 0
			if s.work != nil {
				n = len(s.work.Committed)
			}
			s.rt.opts.Status.DeleteConnector(s.name, n)
		}
	}
}

// HandleFailure makes the supervisor its children's strategy: protoactor asks
// the parent actor first when it implements SupervisorStrategy.
func (s *supervisor) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, pid *actor.PID, rs *actor.RestartStatistics, reason any, msg any) {
	policy := &restartPolicy{backoff: s.rt.opts.Backoff, onFailure: s.reportFailure}
	policy.HandleFailure(system, sup, pid, rs, reason, msg)
}

func (s *supervisor) reportFailure(pid *actor.PID, reason any, delay time.Duration) {
	ch := s.byPID[pid.Id]
	if ch == nil {
		return
	}
	err, trace := describe(reason)
	gen := int64(0)
	if s.work != nil {
		gen = s.work.Generation
	}
	st := s.rt.status(state.StateFailed, fmt.Sprintf("%s\n\nSluice restarts it in %s.", trace, delay.Round(time.Millisecond)), gen)
	log := s.log.Error().Err(err).Dur("restart_in", delay)
	if ch.task < 0 {
		s.rt.opts.Metrics.ConnectorRestarted(s.name)
		log.Msg("connector failed")
		s.rt.opts.Status.PutConnector(s.name, st)
		return
	}
	s.rt.opts.Metrics.TaskRestarted(s.name, ch.task)
	log.Int("task", ch.task).Msg("task failed")
	s.rt.opts.Status.PutTask(connectors.TaskID{Connector: s.name, Task: ch.task}, st)
}

func describe(reason any) (error, string) {
	switch r := reason.(type) {
	case *failure:
		return r.err, r.trace
	case error:
		return r, r.Error()
	default:
		e := fmt.Errorf("%v", r)
		return e, e.Error()
	}
}

func (s *supervisor) forget(pid *actor.PID) {
	ch := s.byPID[pid.Id]
	if ch == nil {
		return
	}
	delete(s.byPID, pid.Id)
	if ch.task < 0 {
		if s.connector == ch {
			s.connector = nil
		}
	} else if s.tasks[ch.task] == ch {
		delete(s.tasks, ch.task)
	}
}

func (s *supervisor) reconcile(c actor.Context, w *ConnectorWork) {
	prev := s.work
	s.work = w
	if s.setup == nil || !sameConfig(s.setup.config, w.Config) {
		s.setup = newSetup(s.rt, w.Config)
	}
	stopped := w.Target == state.TargetStopped

	// The connector actor: runs while assigned here and not STOPPED; a
	// config change restarts it, so it splits the new config.
	if s.connector != nil && (!w.RunConnector || stopped || !sameConfig(s.connector.config, w.Config)) {
		s.stopChild(c, s.connector)
		s.held = nil // the next connector instance computes its own split
	}
	if s.held != nil && w.Target == state.TargetStarted {
		s.maybeWriteTaskConfigs(c, s.held)
		s.held = nil
	}
	if w.RunConnector && !stopped && s.connector == nil {
		s.connector = s.spawn(c, -1, w.Config)
	}
	if w.RunConnector && stopped && (prev == nil || prev.Target != state.TargetStopped || len(w.Committed) > 0) {
		s.rt.opts.Status.PutConnector(s.name, s.rt.status(state.StateStopped, "", w.Generation))
		// A stopped connector has no tasks: empty its task configs, as
		// Connect does, so they are not restarted anywhere.
		if len(w.Committed) > 0 {
			s.maybeWriteTaskConfigs(c, nil)
		}
	}

	for id, ch := range s.tasks {
		cfg, ok := w.Tasks[id]
		if !ok || stopped || !sameConfig(cfg, ch.config) {
			s.stopChild(c, ch)
		}
	}
	for id, cfg := range w.Tasks {
		if stopped {
			break
		}
		if _, ok := s.tasks[id]; !ok {
			s.tasks[id] = s.spawn(c, id, cfg)
		}
	}
	// Every live child learns the target state.
	paused := w.Target == state.TargetPaused
	for _, ch := range s.byPID {
		c.Send(ch.pid, &setTarget{paused: paused, generation: w.Generation})
	}
}

func (s *supervisor) stopChild(c actor.Context, ch *child) {
	c.Stop(ch.pid)
	if ch.task < 0 {
		s.connector = nil
	} else {
		delete(s.tasks, ch.task)
	}
	// byPID keeps it until Terminated, so a failure reported while it
	// stops is still attributed.
}

func (s *supervisor) spawn(c actor.Context, task int, config map[string]string) *child {
	ch := &child{task: task, config: config, state: &incarnation{gate: newGate(s.work.Target == state.TargetPaused)}}
	w, su := s.work, s.setup
	var props *actor.Props
	var mailbox *mailboxCell
	var name, label string
	if task < 0 {
		name, label = "connector", "connector:"+s.name
		props, mailbox = s.rt.propsOf(func() actor.Actor { return newConnectorActor(s.rt, w, su, ch.state, s.log) })
	} else {
		name, label = "task-"+strconv.Itoa(task), "task:"+s.name+"/"+strconv.Itoa(task)
		id := connectors.TaskID{Connector: s.name, Task: task}
		s.rt.setLive(taskKey(id), 1) // until the actor's final Stopped
		props, mailbox = s.rt.propsOf(func() actor.Actor { return newTaskActor(s.rt, id, w, su, config, ch.state) })
	}
	pid := c.SpawnPrefix(props, name+"#")
	s.rt.watchMailbox(pid, label, mailbox)
	ch.pid = pid
	s.byPID[pid.Id] = ch
	return ch
}

// maybeWriteTaskConfigs stores computed task configs when they differ from
// the committed ones. The write runs on a goroutine (invariant 8) and is
// retried with backoff until it succeeds or the supervisor stops.
func (s *supervisor) maybeWriteTaskConfigs(c actor.Context, configs []map[string]string) {
	if s.work != nil && sameConfigs(configs, s.work.Committed) {
		return
	}
	if s.writeCancel != nil {
		s.writeCancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.writeCancel = cancel
	self, root := c.Self(), c.ActorSystem().Root
	writer, name, b := s.rt.opts.TaskConfigs, s.name, s.rt.opts.Backoff
	go func() {
		for attempt := 1; ; attempt++ {
			wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
			err := writer.PutTaskConfigs(wctx, name, configs)
			wcancel()
			if ctx.Err() != nil {
				return // superseded by newer configs, or the supervisor stopped
			}
			root.Send(self, &taskConfigsWritten{configs: configs, err: err})
			if err == nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(b.Delay(attempt)):
			}
		}
	}()
}

// restart is an operator's restart of a connector (and, with includeTasks,
// its tasks here); onlyFailed limits it to what is FAILED now.
// With onlyTask, it restarts task alone (POST .../tasks/{t}/restart).
type restart struct {
	connector    string
	includeTasks bool
	onlyFailed   bool
	onlyTask     bool
	task         int
}

// StatusReader is the read side of a StatusReporter; a reporter that also
// reads lets restarts pick out what failed.
type StatusReader interface {
	Connector(name string) (state.Status, bool)
	Tasks(name string) map[int]state.Status
}

func (s *supervisor) restart(c actor.Context, r *restart) {
	if r.onlyTask {
		if ch, ok := s.tasks[r.task]; ok {
			s.log.Info().Int("task", r.task).Msg("restarting task on request")
			s.stopChild(c, ch)
			s.tasks[r.task] = s.spawn(c, r.task, ch.config)
		}
		return
	}
	reader, _ := s.rt.opts.Status.(StatusReader)
	failed := func(st state.Status, ok bool) bool { return ok && st.State == state.StateFailed }
	if s.connector != nil && s.work != nil {
		if !r.onlyFailed || (reader != nil && failed(reader.Connector(s.name))) {
			s.log.Info().Msg("restarting connector on request")
			s.stopChild(c, s.connector)
			s.connector = s.spawn(c, -1, s.work.Config)
		}
	}
	if !r.includeTasks {
		return
	}
	var statuses map[int]state.Status
	if reader != nil {
		statuses = reader.Tasks(s.name)
	}
	for id, ch := range s.tasks {
		st, ok := statuses[id]
		if r.onlyFailed && !failed(st, ok) {
			continue
		}
		s.log.Info().Int("task", id).Msg("restarting task on request")
		// The new instance waits for the old one's pipeline to end
		// (invariant 4) before it opens.
		s.stopChild(c, ch)
		s.tasks[id] = s.spawn(c, id, ch.config)
	}
}
