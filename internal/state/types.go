// Package state keeps the cluster's durable state in Kafka topics, as Kafka
// Connect does: connector configs, task configs and target states in the
// config topic, and connector and task status in the status topic. Each topic
// is tailed into an in-memory view; writers produce to the topic and see their
// own write once the tailer has read it back.
package state

// TargetState is what an operator asked a connector to be.
type TargetState string

const (
	TargetStarted TargetState = "STARTED"
	TargetPaused  TargetState = "PAUSED"
	TargetStopped TargetState = "STOPPED"
)

// State is the observed state of a connector or task, as the status topic and
// the REST API spell it.
type State string

const (
	StateUnassigned State = "UNASSIGNED"
	StateRunning    State = "RUNNING"
	StatePaused     State = "PAUSED"
	StateFailed     State = "FAILED"
	StateRestarting State = "RESTARTING"
	StateStopped    State = "STOPPED"
	StateDestroyed  State = "DESTROYED"
)

// Status is one entry of the status topic.
type Status struct {
	State      State  `json:"state"`
	Trace      string `json:"trace,omitempty"`
	WorkerID   string `json:"worker_id"`
	Generation int64  `json:"generation"`
}

// Connector is one connector as the config topic describes it.
type Connector struct {
	Name        string
	Config      map[string]string
	TargetState TargetState
	// Tasks are the committed task configs: task-<name>-<n> records become
	// visible only together with their commit-<name> record (invariant 6).
	Tasks []map[string]string
	// TaskCount is the connector's task-count record
	// (tasks-fencing-<name>): how many tasks the leader last fenced the
	// transactional producers of and let start; 0 without one.
	TaskCount int
}

// Snapshot is the config topic read up to Offset (the next offset to read).
type Snapshot struct {
	Offset     int64
	Connectors map[string]*Connector
}

// RestartRequest is a restart-connector-<name> record.
type RestartRequest struct {
	Connector    string
	IncludeTasks bool `json:"include-tasks"`
	OnlyFailed   bool `json:"only-failed"`
}
