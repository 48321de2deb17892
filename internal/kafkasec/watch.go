package kafkasec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// AuthError says a client cannot authenticate to Kafka and why. Its text
// names the mechanism and user, never a password or token.
type AuthError struct {
	Reason string
	Err    error
}

func (e *AuthError) Error() string { return "cannot authenticate to Kafka: " + e.Reason }
func (e *AuthError) Unwrap() error { return e.Err }

// saslWatch wraps a mechanism to remember whether the latest SASL exchange
// completed. A broker that refuses credentials may answer with an error
// code (Apache Kafka: SASL_AUTHENTICATION_FAILED) or just close the
// connection (kfake, and Kafka's SaslHandshake v0 path); in the second case
// the client sees only an EOF, and this watch is what tells it apart from a
// broker going away.
type saslWatch struct {
	sasl.Mechanism
	user string

	mu        sync.Mutex
	unsettled bool // an exchange began and neither completed nor failed
	failed    error
}

func (w *saslWatch) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	w.mu.Lock()
	w.unsettled, w.failed = true, nil
	w.mu.Unlock()
	s, first, err := w.Mechanism.Authenticate(ctx, host)
	if err != nil {
		w.settle(err)
		return nil, nil, err
	}
	return &watchedSession{Session: s, w: w}, first, nil
}

func (w *saslWatch) settle(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unsettled, w.failed = false, err
}

// state reports whether the latest exchange is still unsettled (the
// connection ended inside it) and, if not, its failure.
func (w *saslWatch) state() (cutOff bool, failed error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unsettled, w.failed
}

type watchedSession struct {
	sasl.Session
	w *saslWatch
}

func (s *watchedSession) Challenge(resp []byte) (bool, []byte, error) {
	done, next, err := s.Session.Challenge(resp)
	if err != nil || done {
		s.w.settle(err)
	}
	return done, next, err
}

// AuthFailure returns err as an *AuthError when it (an error from a client
// made with s's options) means the client could not authenticate, else nil.
func (s *Settings) AuthFailure(err error) error {
	if err == nil {
		return nil
	}
	var already *AuthError
	if errors.As(err, &already) {
		return already
	}
	who := ""
	if s.watch != nil {
		who = fmt.Sprintf(" (SASL %s as user %q)", s.Mechanism.Name(), s.watch.user)
		if s.watch.user == "" {
			who = fmt.Sprintf(" (SASL %s)", s.Mechanism.Name())
		}
	}
	if IsAuthError(err) {
		return &AuthError{Reason: err.Error() + who, Err: err}
	}
	if s.watch == nil {
		return nil
	}
	cutOff, failed := s.watch.state()
	switch {
	case failed != nil && (errors.Is(err, failed) || connectionLost(err)):
		// The exchange failed on the client's side (a server signature
		// that does not verify, no token).
		return &AuthError{Err: err, Reason: failed.Error() + who}
	case cutOff && connectionLost(err):
		return &AuthError{Err: err, Reason: "the broker closed the connection during SASL authentication" + who +
			": wrong username or password, or a mechanism the broker does not enable"}
	}
	return nil
}

// connectionLost reports whether err is what a client sees when its
// connections keep ending: the end of one, or records that timed out
// waiting for one.
func connectionLost(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, kgo.ErrRecordTimeout)
}
