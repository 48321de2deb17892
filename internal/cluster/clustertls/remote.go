package clustertls

import (
	"context"
	"net"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sluice-io/sluice/internal/cluster/peerwarn"
)

// HandshakeFailure is a TLS handshake with a peer that failed: a member
// whose certificate the other side does not trust, or one without
// cluster TLS.
type HandshakeFailure struct {
	// Peer is the address dialed (outgoing) or dialing (incoming).
	Peer     string
	Incoming bool
	Err      error
}

// RemoteOptions are the protoactor remote options that carry the remote
// over c's TLS, listening and dialing; nil c gives none (plaintext,
// protoactor's default). onFailure hears of every failed handshake:
// protoactor silences gRPC's logs and retries a member it cannot reach,
// so without it such a member would fail in silence.
func RemoteOptions(c *Config, onFailure func(HandshakeFailure)) []remote.ConfigOption {
	if c == nil {
		return nil
	}
	return []remote.ConfigOption{
		remote.WithServerOptions(grpc.Creds(reportingCreds{TransportCredentials: credentials.NewTLS(c.Server), onFailure: onFailure})),
		remote.WithDialOptions(grpc.WithTransportCredentials(reportingCreds{TransportCredentials: credentials.NewTLS(c.Client), onFailure: onFailure})),
	}
}

// LogFailures returns an onFailure for RemoteOptions that logs a warning
// saying what to check, once per peer and direction a minute (a member
// that cannot connect is retried every few seconds).
func LogFailures(log zerolog.Logger) func(HandshakeFailure) {
	limit := peerwarn.New(time.Minute)
	return func(f HandshakeFailure) {
		if f.Incoming {
			host := f.Peer
			if h, _, err := net.SplitHostPort(f.Peer); err == nil {
				host = h // a peer dials from a new port each time
			}
			if limit.Allow("from " + host) {
				log.Warn().Err(f.Err).Str("peer_addr", f.Peer).
					Msg("cluster TLS: refused a connection: the peer's certificate is not one this cluster trusts (another --cluster-tls-ca), or it sent none, or it speaks without cluster TLS")
			}
			return
		}
		if limit.Allow("to " + f.Peer) {
			log.Warn().Err(f.Err).Str("peer_addr", f.Peer).
				Msg("cluster TLS: cannot connect to a cluster member: its certificate is not trusted here, or it does not trust this one's (compare --cluster-tls-cert and --cluster-tls-ca on both), or it runs without cluster TLS")
		}
	}
}

// reportingCreds are TLS transport credentials that report failed
// handshakes.
type reportingCreds struct {
	credentials.TransportCredentials
	onFailure func(HandshakeFailure)
}

func (c reportingCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil && ctx.Err() == nil && c.onFailure != nil {
		c.onFailure(HandshakeFailure{Peer: authority, Err: err})
	}
	return conn, info, err
}

func (c reportingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil && c.onFailure != nil {
		c.onFailure(HandshakeFailure{Peer: raw.RemoteAddr().String(), Incoming: true, Err: err})
	}
	return conn, info, err
}

func (c reportingCreds) Clone() credentials.TransportCredentials {
	return reportingCreds{TransportCredentials: c.TransportCredentials.Clone(), onFailure: c.onFailure}
}
