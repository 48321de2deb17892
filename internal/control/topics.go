package control

import (
	"context"
	"net/http"

	"github.com/sluice-io/sluice/internal/state"
)

// TopicsBackend is where connectors' active topics are tracked (Connect's
// topic tracking, KIP-558): *state.StatusLog, configured with the worker's
// topic.tracking.enable and topic.tracking.allow.reset.
type TopicsBackend interface {
	// ActiveTopics lists, sorted, the topics recorded for a connector.
	ActiveTopics(connector string) []string
	// ResetActiveTopics forgets every topic recorded for a connector.
	ResetActiveTopics(ctx context.Context, connector string) error
	TopicTrackingEnabled() bool
	TopicTrackingResetAllowed() bool
}

// ActiveTopics is one connector's entry of GET /connectors/{c}/topics
// (Connect's ActiveTopicsInfo).
type ActiveTopics struct {
	Topics []string `json:"topics"`
}

// trackingError is Connect's answer when topic tracking, or resetting it,
// is switched off on the worker; nil when the request may go on.
func (c *Controller) trackingError(reset bool) error {
	switch {
	case c.o.Topics == nil:
		return errorf(http.StatusNotImplemented, "Topic tracking is not available on this worker")
	case !c.o.Topics.TopicTrackingEnabled():
		return errorf(http.StatusForbidden, "Topic tracking is disabled.")
	case reset && !c.o.Topics.TopicTrackingResetAllowed():
		return errorf(http.StatusForbidden, "Topic tracking reset is disabled.")
	}
	return nil
}

// Topics answers GET /connectors/{c}/topics: {"<name>":{"topics":[...]}},
// the topics the connector's tasks have used, sorted.
func (c *Controller) Topics(name string) (map[string]ActiveTopics, error) {
	// Like Connect, the tracking config is checked before anything else.
	if err := c.trackingError(false); err != nil {
		return nil, err
	}
	if _, err := c.lookup(name); err != nil {
		return nil, err
	}
	topics := c.o.Topics.ActiveTopics(name)
	if topics == nil {
		topics = []string{} // "topics":[], never null
	}
	return map[string]ActiveTopics{name: {Topics: topics}}, nil
}

// ResetTopics answers PUT /connectors/{c}/topics/reset: it forgets the
// topics recorded for the connector; tasks that keep using a topic record
// it again.
func (c *Controller) ResetTopics(ctx context.Context, name string) error {
	if err := c.trackingError(true); err != nil {
		return err
	}
	return c.onConnector(ctx, name, func(ctx context.Context, _ *state.Connector) error {
		if err := c.o.Topics.ResetActiveTopics(ctx, name); err != nil {
			return storeError("resetting the active topics of connector "+name, err)
		}
		return nil
	})
}
