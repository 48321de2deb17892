// Package group makes a worker a member of its cluster's Kafka group, the
// authoritative rebalance signal: it drives JoinGroup, SyncGroup, Heartbeat
// and LeaveGroup itself with kmsg (protocol type "sluice", static membership
// with group.instance.id = worker id), runs the assignor when it leads, and
// hands each assignment to the worker.
package group

import (
	"encoding/json"
	"fmt"

	"github.com/sluice-io/sluice/connectors"
)

// ProtocolType is the group protocol type of Sluice workers. It is never
// "connect", so Sluice and Kafka Connect workers can never share a group.
const ProtocolType = "sluice"

// protocolName names the one assignment protocol (and its encoding) that
// members offer; a future incompatible encoding gets a new name.
const protocolName = "sluice-v1"

// Metadata is what a member tells the leader in JoinGroup.
type Metadata struct {
	WorkerID string `json:"worker_id"`
	URL      string `json:"url"`
	// Gossip is where this worker's memberlist listens, so the others can
	// join it without being told (the group introduces them).
	Gossip string `json:"gossip,omitempty"`
	// ConfigOffset is how far this member has read the config topic.
	ConfigOffset int64               `json:"config_offset"`
	Connectors   []string            `json:"connectors,omitempty"`
	Tasks        []connectors.TaskID `json:"tasks,omitempty"`
}

// Assignment is what the leader gives each member in SyncGroup. It names the
// leader (the truth about who leads this generation: docs/design.md notes that a
// JoinGroup response can wrongly name several leaders) and the config offset
// it was computed at, like Connect's.
type Assignment struct {
	Version      int    `json:"version"`
	Leader       string `json:"leader"` // member id of the leader
	LeaderWorker string `json:"leader_worker"`
	LeaderURL    string `json:"leader_url"`
	ConfigOffset int64  `json:"config_offset"`
	// Connectors and Tasks are everything the member runs now.
	Connectors []string            `json:"connectors,omitempty"`
	Tasks      []connectors.TaskID `json:"tasks,omitempty"`
	// Revoked lists what it must stop before anything else.
	RevokedConnectors []string            `json:"revoked_connectors,omitempty"`
	RevokedTasks      []connectors.TaskID `json:"revoked_tasks,omitempty"`
	// Rejoin asks the member to start another round once it stopped what
	// was revoked, so that the leader can hand it on (incremental
	// cooperative rebalancing).
	Rejoin bool `json:"rejoin,omitempty"`
	// Members maps worker ids to REST URLs, for forwarding and for
	// `sluice workers`.
	Members map[string]string `json:"members,omitempty"`
	// Gossip maps worker ids to memberlist addresses.
	Gossip map[string]string `json:"gossip,omitempty"`
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("group: encode %T: %v", v, err)) // only plain data: cannot fail
	}
	return b
}

func decodeMetadata(b []byte) (Metadata, error) {
	var m Metadata
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("member metadata: %w", err)
	}
	return m, nil
}

func decodeAssignment(b []byte) (Assignment, error) {
	var a Assignment
	if len(b) == 0 {
		return a, fmt.Errorf("empty assignment")
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("assignment: %w", err)
	}
	return a, nil
}
