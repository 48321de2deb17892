package control

import "context"

// API is the control plane as the front doors (REST and the admin actor)
// use it: *Controller answers on this worker, *Router sends each write to
// the group leader.
type API interface {
	ServerInfo() ServerInfo
	Health() Health
	Connectors() ([]string, error)
	Info(name string) (ConnectorInfo, error)
	Config(name string) (map[string]string, error)
	Tasks(name string) ([]TaskInfo, error)
	Status(name string) (ConnectorStatus, error)
	TaskStatus(name string, task int) (TaskState, error)
	Plugins(connectorsOnly bool) []PluginInfo
	PluginConfig(class string) ([]ConfigKeyInfo, error)
	Validate(class string, config map[string]string) (ConfigInfos, error)
	Writer
	// PutTaskConfigs stores the task configs a connector's instance
	// computed; workers send them to the leader's admin actor.
	PutTaskConfigs(ctx context.Context, name string, tasks []map[string]string) error
	OffsetsController
	TopicsController
	LoggersController
}

// OffsetsController is the connector offsets API (KIP-875) of the control
// plane.
type OffsetsController interface {
	Offsets(ctx context.Context, name string) (ConnectorOffsets, error)
	AlterOffsets(ctx context.Context, name string, offs []ConnectorOffset) (Message, error)
	ResetOffsets(ctx context.Context, name string) (Message, error)
}

// TopicsController is Connect's topic tracking (KIP-558) as the REST API
// needs it.
type TopicsController interface {
	Topics(name string) (map[string]ActiveTopics, error)
	ResetTopics(ctx context.Context, name string) error
}

// LoggersController is what the log-level endpoints (KIP-495, KIP-976)
// need of the control plane. SetLogger with scope cluster is a write to the
// config topic: a follower's controller forwards it to the leader.
type LoggersController interface {
	Loggers() map[string]LoggerLevel
	Logger(name string) (LoggerLevel, error)
	SetLogger(ctx context.Context, name, level, scope string) (changed []string, err error)
}

var _ API = (*Controller)(nil)
