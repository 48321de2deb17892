package tlsconf

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// javaProtocols maps Java's protocol names to Go's versions. SSLv3 and
// older are absent: Go cannot speak them, and Java disables them too.
var javaProtocols = map[string]uint16{
	"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11,
	"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
}

// protocolVersions reads ssl.enabled.protocols (default TLSv1.2,TLSv1.3)
// and ssl.protocol (default TLSv1.3). Go takes a range of versions, so the
// enabled protocols give its bounds; ssl.protocol caps the highest version
// as Java's SSLContext does ("TLS" caps nothing). A list with a hole
// (TLSv1.1,TLSv1.3) is refused: Go would also enable TLSv1.2.
func protocolVersions(props map[string]string) (minVersion, maxVersion uint16, err error) {
	enabled := strings.TrimSpace(valueOr(props, "ssl.enabled.protocols", "TLSv1.2,TLSv1.3"))
	if enabled == "" {
		enabled = "TLSv1.2,TLSv1.3"
	}
	var versions []uint16
	for name := range strings.SplitSeq(enabled, ",") {
		name = strings.TrimSpace(name)
		v, ok := javaProtocols[name]
		if !ok {
			return 0, 0, fmt.Errorf("ssl.enabled.protocols: %q is not a protocol Sluice supports (TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)", name)
		}
		versions = append(versions, v)
	}
	slices.Sort(versions)
	versions = slices.Compact(versions)
	minVersion, maxVersion = versions[0], versions[len(versions)-1]
	if int(maxVersion-minVersion) != len(versions)-1 {
		return 0, 0, fmt.Errorf("ssl.enabled.protocols: %q leaves a gap between versions, which Go's TLS cannot express (it enables a contiguous range)", enabled)
	}
	switch p := strings.TrimSpace(valueOr(props, "ssl.protocol", "TLSv1.3")); p {
	case "TLS", "":
	default:
		limit, ok := javaProtocols[p]
		if !ok {
			return 0, 0, fmt.Errorf("ssl.protocol: %q is not supported (TLS, TLSv1.2 or TLSv1.3)", p)
		}
		if limit < minVersion {
			return 0, 0, fmt.Errorf("ssl.protocol: %s is older than every version in ssl.enabled.protocols (%s)", p, enabled)
		}
		maxVersion = min(maxVersion, limit)
	}
	return minVersion, maxVersion, nil
}

// loadCipherSuites maps ssl.cipher.suites (Java's names, which are the
// IANA names Go uses too) to Go's ids. Go always enables all three TLS 1.3
// suites; a list naming none of them caps the version at TLS 1.2 (Java
// could negotiate no TLS 1.3 suite either), and a list naming only some of
// them is refused because Go cannot leave the others out.
func (m *Material) loadCipherSuites(list string) error {
	if strings.TrimSpace(list) == "" {
		return nil
	}
	byName := map[string]*tls.CipherSuite{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byName[s.Name] = s
	}
	tls13Named := 0
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		s, ok := byName[name]
		if !ok {
			return fmt.Errorf("ssl.cipher.suites: %q is not a cipher suite Go's TLS implements", name)
		}
		if slices.Equal(s.SupportedVersions, []uint16{tls.VersionTLS13}) {
			tls13Named++
			continue
		}
		m.CipherSuites = append(m.CipherSuites, s.ID)
	}
	tls13Total := 0
	for _, s := range tls.CipherSuites() {
		if slices.Equal(s.SupportedVersions, []uint16{tls.VersionTLS13}) {
			tls13Total++
		}
	}
	switch {
	case tls13Named == 0 && m.MaxVersion >= tls.VersionTLS13:
		if m.MinVersion >= tls.VersionTLS13 {
			return fmt.Errorf("ssl.cipher.suites: names no TLS 1.3 suite, but ssl.enabled.protocols allows only TLS 1.3")
		}
		m.MaxVersion = tls.VersionTLS12
	case tls13Named > 0 && tls13Named < tls13Total:
		return fmt.Errorf("ssl.cipher.suites: names only some TLS 1.3 suites; Go's TLS always enables all of them, so list all or none")
	case len(m.CipherSuites) == 0 && m.MaxVersion < tls.VersionTLS13:
		return fmt.Errorf("ssl.cipher.suites: names only TLS 1.3 suites, but ssl.enabled.protocols and ssl.protocol exclude TLS 1.3")
	case len(m.CipherSuites) == 0:
		// Only TLS 1.3 suites: older versions would have no suite at all.
		m.MinVersion = tls.VersionTLS13
	}
	return nil
}
