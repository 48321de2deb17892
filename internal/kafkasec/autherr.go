package kafkasec

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// IsAuthError reports whether err (from a franz-go client) says the client
// could not authenticate: the broker refused its SASL credentials or
// mechanism, the TLS handshake failed (a certificate that does not verify,
// a name that does not match, an alert from the broker), or no OAUTHBEARER
// token could be obtained. Retrying such an error without a change of
// configuration does not help, so callers report it as such.
func IsAuthError(err error) bool {
	if err == nil {
		return false
	}
	for _, k := range []error{kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism, kerr.IllegalSaslState} {
		if errors.Is(err, k) {
			return true
		}
	}
	var (
		tokenErr     *TokenError
		refusedErr   *credentialsRefused
		alert        tls.AlertError
		verifyErr    *tls.CertificateVerificationError
		recordErr    tls.RecordHeaderError
		unknownCA    x509.UnknownAuthorityError
		hostErr      x509.HostnameError
		invalidCert  x509.CertificateInvalidError
		echRejection *tls.ECHRejectionError
	)
	return errors.As(err, &tokenErr) || errors.As(err, &refusedErr) || errors.As(err, &alert) ||
		errors.As(err, &verifyErr) || errors.As(err, &recordErr) || errors.As(err, &unknownCA) ||
		errors.As(err, &hostErr) || errors.As(err, &invalidCert) || errors.As(err, &echRejection)
}
