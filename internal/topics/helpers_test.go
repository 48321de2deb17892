package topics

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/testutil"
)

func testCtx(t *testing.T) context.Context { return testutil.Context(t, 20*time.Second) }
