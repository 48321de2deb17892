package control_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/control"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func code(err error) int {
	if err == nil {
		return 0
	}
	return control.StatusCode(err)
}
