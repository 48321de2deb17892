package group

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/cluster/assign"
)

// Handler is the worker as its group member sees it.
type Handler interface {
	// Current is what the worker runs now; the leader needs it to keep
	// assignments sticky and to move nothing that is still running.
	Current() (connectors []string, tasks []connectors.TaskID)
	// ConfigOffset is how far the worker has read the config topic.
	ConfigOffset() int64
	// Work is what should run in the cluster, read from the config topic
	// after reading it to its end. Only the leader asks.
	Work(ctx context.Context) (assign.Work, int64, error)
	// Revoke stops what was revoked and returns once it has stopped.
	Revoke(ctx context.Context, connectors []string, tasks []connectors.TaskID) error
	// Assigned hands over the assignment of a generation.
	Assigned(generation int32, a Assignment)
	// Lost stops everything the worker runs and returns once it has: the
	// membership is gone, so someone else may run it now (invariant 3).
	Lost(ctx context.Context) error
}

// Config configures a Member.
type Config struct {
	Group    string // the cluster name
	WorkerID string // also the group.instance.id (static membership)
	URL      string // this worker's REST URL
	Gossip   string // this worker's memberlist address, if gossip runs
	Client   *kgo.Client

	SessionTimeout    time.Duration // default 10 s, Connect's
	RebalanceTimeout  time.Duration // default 60 s, Connect's
	HeartbeatInterval time.Duration // default 1 s (Connect: 3 s), so rebalances start sooner
	Log               zerolog.Logger
}

func (c *Config) defaults() {
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.RebalanceTimeout <= 0 {
		c.RebalanceTimeout = time.Minute
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = time.Second
	}
}

// Member is this worker's membership in the cluster's Kafka group.
type Member struct {
	cfg    Config
	h      Handler
	log    zerolog.Logger
	rejoin chan struct{}

	mu         sync.Mutex
	memberID   string
	generation int32
	assignment Assignment
	joined     bool
	// What Standing reports, for the worker's GET /health.
	rebalancing bool
	lastContact time.Time
	lastErr     error
	lostAt      time.Time // when the membership was lost; zero while joined
}

// New returns a member; Run drives it.
func New(cfg Config, h Handler) *Member {
	cfg.defaults()
	return &Member{cfg: cfg, h: h, log: cfg.Log, rejoin: make(chan struct{}, 1)}
}

// Rejoin asks for a new rebalance round soon, for example because the leader
// saw the config topic change.
func (m *Member) Rejoin() {
	select {
	case m.rejoin <- struct{}{}:
	default:
	}
}

// State is the member's view of its group.
type State struct {
	MemberID   string
	Generation int32
	Joined     bool
	Assignment Assignment
}

// Leader reports whether the assignment this member received names it as
// leader: only then may it write configs or compute assignments (invariant 2).
func (s State) Leader() bool {
	return s.Joined && s.MemberID != "" && s.Assignment.Leader == s.MemberID
}

// State returns the current membership.
func (m *Member) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return State{MemberID: m.memberID, Generation: m.generation, Joined: m.joined, Assignment: m.assignment}
}

// Standing is where the member stands in its group, for a health check.
type Standing struct {
	Group string
	// Joined is whether the member holds an assignment of the current
	// generation.
	Joined bool
	// Rebalancing is true from the start of a round (JoinGroup) until its
	// assignment is handed over, failed rounds included: the member is
	// then between assignments.
	Rebalancing bool
	// LastContact is when the group coordinator last answered (a JoinGroup,
	// a SyncGroup or a heartbeat); zero before it ever has.
	LastContact time.Time
	// Err is the latest failed exchange with the coordinator since then,
	// nil when the latest exchange worked.
	Err error
	// LostAt is when the member lost its membership, if it has not joined
	// again since; zero otherwise.
	LostAt time.Time
	// SessionTimeout is the member's session.timeout.ms: a coordinator
	// silent for longer has dropped the member, whatever it believes.
	SessionTimeout time.Duration
}

// Standing returns where the member stands now.
func (m *Member) Standing() Standing {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Standing{Group: m.cfg.Group, Joined: m.joined, Rebalancing: m.rebalancing, LastContact: m.lastContact,
		Err: m.lastErr, LostAt: m.lostAt, SessionTimeout: m.cfg.SessionTimeout}
}

// Problem says why a member is not a settled part of its group at now, in
// words for an operator. unhealthy is a problem that has lasted longer than
// the session timeout: the broker silent, or the membership lost and not
// regained (the group has moved the member's work away meanwhile). pending
// is one expected to pass: the member has not reached the coordinator yet,
// or is between assignments. Both are empty for a settled member.
func (s Standing) Problem(now time.Time) (unhealthy, pending string) {
	cause := ""
	if s.Err != nil {
		cause = ": " + s.Err.Error()
	}
	switch {
	case s.LastContact.IsZero():
		return "", fmt.Sprintf("joining group %q%s", s.Group, cause)
	case now.Sub(s.LastContact) > s.SessionTimeout:
		return fmt.Sprintf("no answer from the coordinator of group %q for %s, longer than session.timeout.ms (%s)%s",
			s.Group, now.Sub(s.LastContact).Round(time.Millisecond), s.SessionTimeout, cause), ""
	case !s.Joined && !s.LostAt.IsZero() && now.Sub(s.LostAt) > s.SessionTimeout:
		return fmt.Sprintf("out of group %q for %s, longer than session.timeout.ms (%s)%s",
			s.Group, now.Sub(s.LostAt).Round(time.Millisecond), s.SessionTimeout, cause), ""
	case !s.Joined || s.Rebalancing:
		return "", fmt.Sprintf("rebalancing: waiting for an assignment in group %q%s", s.Group, cause)
	}
	return "", ""
}

// contacted records an answer of the coordinator.
func (m *Member) contacted() {
	m.mu.Lock()
	m.lastContact, m.lastErr = time.Now(), nil
	m.mu.Unlock()
}

// failed records an exchange with the coordinator that failed.
func (m *Member) failed(err error) {
	m.mu.Lock()
	m.lastErr = err
	m.mu.Unlock()
}

// errLost is a membership the broker no longer recognises.
var errLost = errors.New("group membership lost")

// Run takes part in the group until ctx ends, then leaves it (so the
// worker's work moves at once) and returns.
func (m *Member) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	lastOK := time.Now()
	for ctx.Err() == nil {
		err := m.round(ctx)
		if err == nil {
			backoff, lastOK = 100*time.Millisecond, time.Now()
			err = m.heartbeat(ctx, &lastOK)
		}
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			m.failed(err)
		}
		switch {
		case err == nil:
			continue // a rejoin was asked for or the group rebalances
		case errors.Is(err, errLost):
			m.lose(ctx, err)
		default:
			// Coordinator unreachable or a transient error: retry, but
			// once a whole session timeout passed without a successful
			// exchange the broker has dropped us, whatever we think.
			if m.State().Joined && time.Since(lastOK) > m.cfg.SessionTimeout {
				m.lose(ctx, fmt.Errorf("no contact with the group coordinator for %s: %w", m.cfg.SessionTimeout, err))
			}
			m.log.Warn().Err(err).Dur("retry_in", backoff).Msg("group round failed; retrying")
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			if backoff *= 2; backoff > 5*time.Second {
				backoff = 5 * time.Second
			}
		}
	}
	m.leave()
	return nil
}

// lose stops everything before the member rejoins (invariant 3).
func (m *Member) lose(ctx context.Context, why error) {
	m.log.Warn().Err(why).Msg("lost group membership: stopping all connectors and tasks before rejoining")
	m.mu.Lock()
	m.joined = false
	if m.lostAt.IsZero() {
		m.lostAt = time.Now()
	}
	m.assignment = Assignment{}
	if errors.Is(why, kerr.UnknownMemberID) || errors.Is(why, kerr.FencedInstanceID) {
		m.memberID = ""
	}
	m.mu.Unlock()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.RebalanceTimeout)
	defer cancel()
	if err := m.h.Lost(sctx); err != nil {
		m.log.Error().Err(err).Msg("tasks did not stop in time after losing membership")
	}
}

func asLost(code int16) error {
	err := kerr.ErrorForCode(code)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.FencedInstanceID), errors.Is(err, kerr.IllegalGeneration):
		return fmt.Errorf("%w: %w", errLost, err)
	default:
		return err
	}
}

// round is one JoinGroup + SyncGroup exchange and the application of its
// assignment.
func (m *Member) round(ctx context.Context) error {
	select { // a rejoin asked for before this round is served by it
	case <-m.rejoin:
	default:
	}
	if r, ok := m.h.(interface{ Rebalancing() }); ok {
		// A handler that measures rebalances (the worker's metrics)
		// learns when each round starts.
		r.Rebalancing()
	}
	conns, tasks := m.h.Current()
	meta := Metadata{WorkerID: m.cfg.WorkerID, URL: m.cfg.URL, Gossip: m.cfg.Gossip, ConfigOffset: m.h.ConfigOffset(), Connectors: conns, Tasks: tasks}
	m.mu.Lock()
	memberID, lastGeneration := m.memberID, m.generation
	m.rebalancing = true
	m.mu.Unlock()
	instance := m.cfg.WorkerID

	var join *kmsg.JoinGroupResponse
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = m.cfg.Group
		req.SessionTimeoutMillis = int32(m.cfg.SessionTimeout.Milliseconds())
		req.RebalanceTimeoutMillis = int32(m.cfg.RebalanceTimeout.Milliseconds())
		req.MemberID = memberID
		req.InstanceID = &instance
		req.ProtocolType = ProtocolType
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = protocolName, encode(meta)
		req.Protocols = append(req.Protocols, p)
		var resp *kmsg.JoinGroupResponse
		err := m.exchange(ctx, lastGeneration, memberID, func(rctx context.Context) (err error) {
			resp, err = req.RequestWith(rctx, m.cfg.Client)
			return err
		})
		if err != nil {
			return fmt.Errorf("join group: %w", err)
		}
		m.contacted()
		if errors.Is(kerr.ErrorForCode(resp.ErrorCode), kerr.MemberIDRequired) {
			memberID = resp.MemberID
			continue
		}
		if err := asLost(resp.ErrorCode); err != nil {
			return fmt.Errorf("join group: %w", err)
		}
		join = resp
		break
	}
	m.mu.Lock()
	m.memberID = join.MemberID
	m.mu.Unlock()

	var groupAssignment []kmsg.SyncGroupRequestGroupAssignment
	if join.LeaderID == join.MemberID {
		ga, err := m.lead(ctx, join)
		if err != nil {
			return err
		}
		groupAssignment = ga
	}
	sreq := kmsg.NewPtrSyncGroupRequest()
	sreq.Group = m.cfg.Group
	sreq.Generation = join.Generation
	sreq.MemberID = join.MemberID
	sreq.InstanceID = &instance
	pt, pn := ProtocolType, protocolName
	sreq.ProtocolType, sreq.Protocol = &pt, &pn
	sreq.GroupAssignment = groupAssignment
	var sresp *kmsg.SyncGroupResponse
	err := m.exchange(ctx, join.Generation, join.MemberID, func(rctx context.Context) (err error) {
		sresp, err = sreq.RequestWith(rctx, m.cfg.Client)
		return err
	})
	if err != nil {
		return fmt.Errorf("sync group: %w", err)
	}
	m.contacted()
	if err := asLost(sresp.ErrorCode); err != nil {
		return fmt.Errorf("sync group: %w", err)
	}
	a, err := decodeAssignment(sresp.MemberAssignment)
	if err != nil {
		return err
	}

	// Revoke first, then run: what moves away stops before anything new
	// starts, and before this member reports its state again.
	if len(a.RevokedConnectors)+len(a.RevokedTasks) > 0 {
		// Stopping can take longer than the session timeout (a sink
		// flushing, a slow close): keep the membership alive meanwhile.
		hctx, hstop := context.WithCancel(ctx)
		hdone := make(chan struct{})
		go func() {
			defer close(hdone)
			_ = m.keepAlive(hctx, join.Generation, join.MemberID, false)
		}()
		rctx, rcancel := context.WithTimeout(ctx, m.cfg.RebalanceTimeout)
		err := m.h.Revoke(rctx, a.RevokedConnectors, a.RevokedTasks)
		rcancel()
		hstop()
		<-hdone
		if err != nil {
			return fmt.Errorf("revoke: %w", err)
		}
	}
	m.mu.Lock()
	m.generation, m.assignment, m.joined = join.Generation, a, true
	m.lostAt = time.Time{}
	m.mu.Unlock()
	m.log.Info().Int32("generation", join.Generation).Bool("leader", a.Leader == join.MemberID).
		Str("leader_worker", a.LeaderWorker).Int("connectors", len(a.Connectors)).Int("tasks", len(a.Tasks)).
		Int("revoked", len(a.RevokedConnectors)+len(a.RevokedTasks)).Msg("assignment received")
	m.h.Assigned(join.Generation, a)
	m.mu.Lock()
	m.rebalancing = false
	m.mu.Unlock()
	if a.Rejoin {
		m.Rejoin()
	}
	return nil
}

// lead computes every member's assignment. Only the member whose SyncGroup
// wins becomes leader: the assignment names it, and members believe that
// name rather than the JoinGroup response (invariant 2).
func (m *Member) lead(ctx context.Context, join *kmsg.JoinGroupResponse) ([]kmsg.SyncGroupRequestGroupAssignment, error) {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	work, offset, err := m.h.Work(wctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("leader cannot read the config topic: %w", err)
	}
	byWorker := map[string]string{} // worker id -> member id
	urls, gossip := map[string]string{}, map[string]string{}
	var members []assign.Member
	for _, jm := range join.Members {
		md, err := decodeMetadata(jm.ProtocolMetadata)
		if err != nil {
			m.log.Warn().Err(err).Str("member", jm.MemberID).Msg("ignoring a member with unreadable metadata")
			continue
		}
		id := md.WorkerID
		if id == "" {
			id = jm.MemberID
		}
		byWorker[id] = jm.MemberID
		urls[id] = md.URL
		if md.Gossip != "" {
			gossip[id] = md.Gossip
		}
		members = append(members, assign.Member{ID: id, Connectors: md.Connectors, Tasks: md.Tasks})
	}
	sort.Slice(members, func(i, j int) bool { return members[i].ID < members[j].ID })
	plans := assign.Assign(members, work)
	followUp := assign.NeedsFollowUp(plans)
	var out []kmsg.SyncGroupRequestGroupAssignment
	for workerID, plan := range plans {
		a := Assignment{
			Version: 1, Leader: join.MemberID, LeaderWorker: m.cfg.WorkerID, LeaderURL: m.cfg.URL,
			ConfigOffset: offset, Connectors: plan.Connectors, Tasks: plan.Tasks,
			RevokedConnectors: plan.RevokedConnectors, RevokedTasks: plan.RevokedTasks,
			Members: urls, Gossip: gossip,
		}
		a.Rejoin = followUp && len(plan.RevokedConnectors)+len(plan.RevokedTasks) > 0
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = byWorker[workerID], encode(a)
		out = append(out, ga)
	}
	return out, nil
}

// heartbeat keeps the membership alive until a rebalance or a rejoin is
// due (nil), the membership is lost (errLost) or the coordinator cannot be
// reached (another error).
func (m *Member) heartbeat(ctx context.Context, lastOK *time.Time) error {
	t := time.NewTicker(m.cfg.HeartbeatInterval)
	defer t.Stop()
	instance := m.cfg.WorkerID
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-m.rejoin:
			return nil
		case <-t.C:
		}
		st := m.State()
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID, req.InstanceID = m.cfg.Group, st.Generation, st.MemberID, &instance
		hctx, cancel := context.WithTimeout(ctx, m.cfg.SessionTimeout/2)
		resp, err := req.RequestWith(hctx, m.cfg.Client)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			m.failed(fmt.Errorf("heartbeat: %w", err))
			if time.Since(*lastOK) > m.cfg.SessionTimeout {
				return fmt.Errorf("heartbeat: %w", err)
			}
			continue // kgo retried already; keep trying until the session is up
		}
		m.contacted()
		if errors.Is(kerr.ErrorForCode(resp.ErrorCode), kerr.RebalanceInProgress) {
			*lastOK = time.Now()
			return nil
		}
		if err := asLost(resp.ErrorCode); err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		if resp.ErrorCode != 0 {
			return fmt.Errorf("heartbeat: %w", kerr.ErrorForCode(resp.ErrorCode))
		}
		*lastOK = time.Now()
	}
}

// exchange runs request, a JoinGroup or SyncGroup that the coordinator may
// hold until every member has joined (up to the rebalance timeout), and
// heartbeats meanwhile as Kafka's own clients do: the answers
// (REBALANCE_IN_PROGRESS) show the coordinator is there, so a member
// waiting for a slow one is not taken for one whose broker is gone. The
// heartbeats name generation: the last one while joining, the new one
// while syncing.
//
// They also tell when the member is removed while it waits: a peer's fast
// failover took it for its dead predecessor of the same worker id
// (Worker.removeGone), or its session ran out. Apache Kafka then answers
// the held JoinGroup with UNKNOWN_MEMBER_ID; kfake never answers it, and a
// restarted worker sat out of the group for the whole request timeout
// (rebalance timeout + 5 s) in a chaos run. The request is abandoned at
// once with errLost instead, and the member joins again.
func (m *Member) exchange(ctx context.Context, generation int32, memberID string, request func(context.Context) error) error {
	lctx, abandon := context.WithCancelCause(ctx)
	defer abandon(nil)
	rctx, cancel := context.WithTimeout(lctx, m.cfg.RebalanceTimeout+5*time.Second)
	defer cancel()
	hctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.keepAlive(hctx, generation, memberID, true); err != nil {
			abandon(err)
		}
	}()
	err := request(rctx)
	stop()
	<-done
	if cause := context.Cause(lctx); err != nil && errors.Is(cause, errLost) {
		return cause // an answer that came anyway would be the one to believe
	}
	return err
}

// keepAlive heartbeats for a generation until ctx ends. Its answers count
// as contact with the coordinator; with watch, an answer that the member
// is no longer in the group ends it with errLost, otherwise they are
// ignored: during a revocation a rebalance or a lost membership shows at
// the next regular heartbeat, once the revocation is done.
//
// A member without an id yet (a static member's first JoinGroup, answered
// only when the round completes) heartbeats by its instance id alone:
// FENCED_INSTANCE_ID means a member holds the instance (the one the
// JoinGroup made), UNKNOWN_MEMBER_ID that none does. Only two of the
// latter in a row count, in case the first overtook the JoinGroup on its
// way to the coordinator. Such answers are no contact: the member has not
// joined.
func (m *Member) keepAlive(ctx context.Context, generation int32, memberID string, watch bool) error {
	t := time.NewTicker(m.cfg.HeartbeatInterval)
	defer t.Stop()
	instance := m.cfg.WorkerID
	unknown := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID, req.InstanceID = m.cfg.Group, generation, memberID, &instance
		hctx, cancel := context.WithTimeout(ctx, m.cfg.SessionTimeout/2)
		resp, err := req.RequestWith(hctx, m.cfg.Client)
		cancel()
		if err != nil {
			continue
		}
		code := kerr.ErrorForCode(resp.ErrorCode)
		if memberID != "" {
			// The coordinator is there: a revocation longer than the
			// session timeout is not a silent broker.
			m.contacted()
		}
		if !watch {
			continue
		}
		switch {
		case errors.Is(code, kerr.UnknownMemberID):
			if unknown++; memberID != "" || unknown >= 2 {
				return fmt.Errorf("%w: removed from the group while waiting for the round: %w", errLost, code)
			}
		case memberID != "" && errors.Is(code, kerr.FencedInstanceID):
			return fmt.Errorf("%w: another member took instance %q while this one waited for the round: %w", errLost, instance, code)
		default:
			unknown = 0
		}
	}
}

// leave sends LeaveGroup with the instance id, so the broker rebalances at
// once instead of waiting out the session timeout.
func (m *Member) leave() {
	st := m.State()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := LeaveByInstance(ctx, m.cfg.Client, m.cfg.Group, m.cfg.WorkerID); err != nil {
		m.log.Warn().Err(err).Str("member", st.MemberID).Msg("leave group failed; the session timeout will remove this worker")
		return
	}
	m.log.Info().Msg("left the group")
}

// LeaveByInstance removes a static member from the group by its instance id
// (its worker id). Any worker may do this for a worker it knows is dead,
// which starts the rebalance at once (fast failover).
func LeaveByInstance(ctx context.Context, cl *kgo.Client, group, workerID string) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	lm := kmsg.NewLeaveGroupRequestMember()
	id := workerID
	lm.InstanceID = &id
	req.Members = append(req.Members, lm)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, mr := range resp.Members {
		if err := kerr.ErrorForCode(mr.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownMemberID) {
			return err
		}
	}
	return nil
}
