package control_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/testutil"
)

func ctx(t *testing.T) context.Context { return testutil.Context(t, 20*time.Second) }

func code(err error) int {
	if err == nil {
		return 0
	}
	return control.StatusCode(err)
}
