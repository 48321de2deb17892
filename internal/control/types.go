package control

import "github.com/sluice-io/sluice/connectors"

// The types below are Kafka Connect's REST shapes; their JSON tags are the
// field names Connect's clients read.

// ServerInfo answers GET /.
type ServerInfo struct {
	Version        string `json:"version"`
	Commit         string `json:"commit"`
	KafkaClusterID string `json:"kafka_cluster_id"`
}

// Health answers GET /health. Code is the HTTP status to send with it.
type Health struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Code    int    `json:"-"`
}

// ConnectorInfo is a connector's config and committed tasks.
type ConnectorInfo struct {
	Name   string              `json:"name"`
	Config map[string]string   `json:"config"`
	Tasks  []connectors.TaskID `json:"tasks"`
	Type   string              `json:"type"`
}

// TaskInfo is one committed task config.
type TaskInfo struct {
	ID     connectors.TaskID `json:"id"`
	Config map[string]string `json:"config"`
}

// StateInfo is the observed state of a connector.
type StateInfo struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// TaskState is the observed state of one task.
type TaskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// ConnectorStatus answers GET /connectors/{c}/status.
type ConnectorStatus struct {
	Name      string      `json:"name"`
	Connector StateInfo   `json:"connector"`
	Tasks     []TaskState `json:"tasks"`
	Type      string      `json:"type"`
}

// PluginInfo is one entry of GET /connector-plugins.
type PluginInfo struct {
	Class   string `json:"class"`
	Type    string `json:"type"`
	Version string `json:"version"`
}

// ConfigKeyInfo is the definition of one config key. Pointers are null in
// JSON where Connect sends null.
type ConfigKeyInfo struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Required      bool     `json:"required"`
	DefaultValue  *string  `json:"default_value"`
	Importance    string   `json:"importance"`
	Documentation string   `json:"documentation"`
	Group         *string  `json:"group"`
	Width         string   `json:"width"`
	DisplayName   string   `json:"display_name"`
	Dependents    []string `json:"dependents"`
	Order         int      `json:"order"`
}

// ConfigValueInfo is the validation result of one key.
type ConfigValueInfo struct {
	Name              string   `json:"name"`
	Value             *string  `json:"value"`
	RecommendedValues []string `json:"recommended_values"`
	Errors            []string `json:"errors"`
	Visible           bool     `json:"visible"`
}

// ConfigInfo pairs a key's definition with its validation result.
type ConfigInfo struct {
	Definition ConfigKeyInfo   `json:"definition"`
	Value      ConfigValueInfo `json:"value"`
}

// ConfigInfos answers PUT /connector-plugins/{p}/config/validate.
type ConfigInfos struct {
	Name       string       `json:"name"`
	ErrorCount int          `json:"error_count"`
	Groups     []string     `json:"groups"`
	Configs    []ConfigInfo `json:"configs"`
}

// InitialState is the state a connector is created in.
type InitialState string

const (
	InitialRunning InitialState = "RUNNING"
	InitialPaused  InitialState = "PAUSED"
	InitialStopped InitialState = "STOPPED"
)

// Plugin types as GET /connector-plugins spells them, besides "source" and
// "sink".
const (
	PluginTypeConverter       = "converter"
	PluginTypeHeaderConverter = "header_converter"
	PluginTypeTransformation  = "transformation"
	PluginTypePredicate       = "predicate"
	// TypeUnknown is the type of a connector whose class no plugin has.
	TypeUnknown = "unknown"
)
