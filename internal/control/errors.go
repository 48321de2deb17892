package control

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Error is a refused or failed control request. Code is the HTTP status that
// REST answers with; the admin actor maps it to its own codes.
type Error struct {
	Code    int
	Message string
	// Keys names every bad config key with its errors when a config was
	// refused, for clients that show them per key.
	Keys map[string][]string
}

func (e *Error) Error() string { return e.Message }

func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func notFound(name string) *Error {
	return errorf(http.StatusNotFound, "Connector %s not found", name)
}

func notReady() *Error {
	return errorf(http.StatusServiceUnavailable, "Worker is still starting up; try again shortly")
}

// StatusCode returns the HTTP status for err: its own for an *Error, 500 for
// anything else.
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return http.StatusInternalServerError
}

// invalidConfig lists every bad key in one message, one line per error,
// ordered by key so that the message is stable.
func invalidConfig(keys map[string][]string) *Error {
	names := make([]string, 0, len(keys))
	n := 0
	for k, msgs := range keys {
		names = append(names, k)
		n += len(msgs)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "Connector configuration is invalid and contains the following %d error(s):", n)
	for _, k := range names {
		for _, m := range keys[k] {
			fmt.Fprintf(&b, "\n%s: %s", k, m)
		}
	}
	b.WriteString("\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`")
	return &Error{Code: http.StatusBadRequest, Message: b.String(), Keys: keys}
}

// storeError turns a failed write to the config topic into an Error. An
// *Error from the store (a forwarding store, later) passes unchanged.
func storeError(op string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return errorf(http.StatusInternalServerError, "Request timed out while %s: %v", op, err)
	}
	return errorf(http.StatusInternalServerError, "Failed %s: %v", op, err)
}
