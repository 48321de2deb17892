package kafkasec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
)

// scriptedMechanism is a SASL mechanism whose one session ends as told.
type scriptedMechanism struct{ challengeErr error }

func (scriptedMechanism) Name() string { return "SCRIPTED" }
func (m scriptedMechanism) Authenticate(context.Context, string) (sasl.Session, []byte, error) {
	return scriptedSession(m), []byte("first"), nil
}

type scriptedSession struct{ challengeErr error }

func (s scriptedSession) Challenge([]byte) (bool, []byte, error) {
	return s.challengeErr == nil, nil, s.challengeErr
}

func TestAuthFailureTellsAuthenticationFromOtherFailures(t *testing.T) {
	settings := func(m sasl.Mechanism) *Settings {
		w := &saslWatch{Mechanism: m, user: "connect"}
		return &Settings{Protocol: "SASL_PLAINTEXT", Mechanism: w, watch: w}
	}
	badSignature := errors.New("invalid server signature")
	s := settings(scriptedMechanism{challengeErr: badSignature})
	sess, _, _ := s.Mechanism.Authenticate(context.Background(), "broker:9092")
	_, _, err := sess.Challenge(nil)
	var authErr *AuthError
	if got := s.AuthFailure(fmt.Errorf("broker: %w", err)); !errors.As(got, &authErr) {
		t.Errorf("a failed challenge: AuthFailure = %v, want an AuthError", got)
	}

	// An exchange the broker cut off, then EOF: a refusal.
	s = settings(scriptedMechanism{})
	_, _, _ = s.Mechanism.Authenticate(context.Background(), "broker:9092")
	if got := s.AuthFailure(io.EOF); !errors.As(got, &authErr) {
		t.Errorf("EOF inside the exchange: AuthFailure = %v, want an AuthError", got)
	}
	// The same exchange completed: EOF later is the network's doing.
	sess, _, _ = s.Mechanism.Authenticate(context.Background(), "broker:9092")
	_, _, _ = sess.Challenge(nil)
	if got := s.AuthFailure(io.EOF); got != nil {
		t.Errorf("EOF after a completed exchange: AuthFailure = %v, want nil", got)
	}
	if got := s.AuthFailure(nil); got != nil {
		t.Errorf("AuthFailure(nil) = %v", got)
	}
}
