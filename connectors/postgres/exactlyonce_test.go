package postgres

import (
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// Only the modes whose offsets name one row exactly support exactly once.
func TestJdbcSourceDeclaresExactlyOnceByMode(t *testing.T) {
	var c connectors.ExactlyOnceSource = &JdbcSourceConnector{}
	for mode, want := range map[string]bool{
		ModeIncrementing: true, ModeTimestampIncrementing: true, ModeTimestamp: false, ModeBulk: false,
	} {
		if got := c.ExactlyOnceSupport(map[string]string{SourceModeKey: mode}); got != want {
			t.Errorf("mode %s: %v, want %v", mode, got, want)
		}
	}
}
