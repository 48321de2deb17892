// Package basicauth is Kafka Connect's BasicAuthSecurityRestExtension for
// Sluice: HTTP basic authentication of the REST API (and of the admin
// actor, which the CLI reaches) against the users files that the JAAS
// file's KafkaConnect section names through PropertyFileLoginModule.
//
// Connect reads the JAAS file from the JVM's -Djava.security.auth.login.config;
// a Sluice worker takes the worker property of that name.
package basicauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/jaas"
	"github.com/sluice-io/sluice/internal/javaprops"
)

// The worker keys and the Java names they give.
const (
	// ExtensionsKey lists REST extension classes; ExtensionClass is the one
	// Sluice implements.
	ExtensionsKey  = "rest.extension.classes"
	ExtensionClass = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
	// JAASKey is the path of the JAAS file (a JVM system property for
	// Connect).
	JAASKey = "java.security.auth.login.config"
	// Section is the JAAS section Connect's filter logs in with.
	Section = "KafkaConnect"
	// LoginModule is the login module Sluice implements.
	LoginModule = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
	// Unauthorized is Connect's answer to a request that fails
	// authentication.
	Unauthorized = "User cannot access the resource."
)

// Checker authenticates a user name and password.
type Checker interface {
	Authenticate(user, password string) bool
}

// Users are the users files of the KafkaConnect section, read once at
// start: Connect's PropertyFileLoginModule caches each file for the life of
// the JVM, so a changed file takes effect at the worker's restart, as in
// Connect.
type Users struct {
	files []usersFile
}

// usersFile holds one file's passwords as SHA-256 digests, so that a
// comparison takes the same time whatever the password's length.
type usersFile struct {
	path      string
	passwords map[string][sha256.Size]byte
}

var _ Checker = (*Users)(nil)

// FromProps returns the authentication the worker keys ask for: nil when
// rest.extension.classes is empty. Another extension class than
// BasicAuthSecurityRestExtension is refused by name (Sluice cannot load
// Java classes), as is a missing or bad JAAS file.
func FromProps(props map[string]string, log zerolog.Logger) (*Users, error) {
	classes := connectors.SplitList(props[ExtensionsKey])
	if len(classes) == 0 {
		if v := strings.TrimSpace(props[JAASKey]); v != "" {
			log.Info().Str("key", JAASKey).Msg("the JAAS file is not read: no REST extension (" + ExtensionsKey + ") uses it")
		}
		return nil, nil
	}
	var unknown []string
	for _, c := range classes {
		if c != ExtensionClass {
			unknown = append(unknown, c)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s: %s: Sluice cannot load Java classes; the one REST extension it implements is %s",
			ExtensionsKey, strings.Join(unknown, ", "), ExtensionClass)
	}
	path := strings.TrimSpace(props[JAASKey])
	if path == "" {
		return nil, fmt.Errorf("%s=%s needs %s: the path of a JAAS file whose %s section names %s with file=\"users.properties\"",
			ExtensionsKey, ExtensionClass, JAASKey, Section, LoginModule)
	}
	return Load(path, log)
}

// Load reads the JAAS file at path and the users files its KafkaConnect
// section names.
func Load(path string, log zerolog.Logger) (*Users, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", JAASKey, err)
	}
	sections, err := jaas.ParseFile(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", JAASKey, path, err)
	}
	entries, ok := sections[Section]
	if !ok || len(entries) == 0 {
		return nil, fmt.Errorf("%s: %s has no %s section (with %s required file=\"users.properties\";)", JAASKey, path, Section, LoginModule)
	}
	u := &Users{}
	for _, e := range entries {
		if e.LoginModule != LoginModule {
			return nil, fmt.Errorf("%s: %s: section %s: login module %s is not supported; the one Sluice implements is %s",
				JAASKey, path, Section, e.LoginModule, LoginModule)
		}
		file := strings.TrimSpace(e.Options["file"])
		if file == "" {
			return nil, fmt.Errorf("%s: %s: section %s: %s needs the option file=\"path of the users file\"", JAASKey, path, Section, LoginModule)
		}
		f, err := readUsers(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: section %s: %w", JAASKey, path, Section, err)
		}
		if len(f.passwords) == 0 {
			log.Warn().Str("file", file).Msg("the REST users file is empty: every request is permitted (as Kafka Connect's PropertyFileLoginModule does)")
		}
		u.files = append(u.files, f)
	}
	return u, nil
}

// LoadUsersFile reads one users file (user=password lines, as
// PropertyFileLoginModule reads them) for a server that takes the file
// directly, without a JAAS file: the schema registry. An empty file is
// refused, since it would let everyone in.
func LoadUsersFile(path string) (*Users, error) {
	f, err := readUsers(path)
	if err != nil {
		return nil, err
	}
	if len(f.passwords) == 0 {
		return nil, fmt.Errorf("users file %s has no users", path)
	}
	return &Users{files: []usersFile{f}}, nil
}

func readUsers(path string) (usersFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return usersFile{}, fmt.Errorf("users file: %w", err)
	}
	props, err := javaprops.Parse(b)
	if err != nil {
		// The parser's message quotes the bad text, here a password:
		// only its "line N" goes on.
		where, _, _ := strings.Cut(err.Error(), ":")
		return usersFile{}, fmt.Errorf("users file %s: %s: a malformed escape (the text is not shown: it may be a password)", path, where)
	}
	f := usersFile{path: path, passwords: make(map[string][sha256.Size]byte, len(props))}
	for user, password := range props {
		f.passwords[user] = sha256.Sum256([]byte(password))
	}
	return f, nil
}

// Authenticate reports whether a users file accepts user and password. As
// with JAAS's login modules, one that accepts is enough; an empty file
// accepts everyone, as Connect's PropertyFileLoginModule does.
func (u *Users) Authenticate(user, password string) bool {
	sum := sha256.Sum256([]byte(password))
	ok := false
	for _, f := range u.files {
		if len(f.passwords) == 0 {
			ok = true
			continue
		}
		want, known := f.passwords[user]
		if !known {
			// Compare anyway, so that an unknown user takes as long.
			want = [sha256.Size]byte{}
		}
		if subtle.ConstantTimeCompare(sum[:], want[:]) == 1 && known && user != "" {
			ok = true
		}
	}
	return ok
}

// Credentials reads the Authorization header as Connect's filter does: the
// scheme Basic (any case), base64 of user:password, the user not empty.
func Credentials(r *http.Request) (user, password string, err error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", "", errors.New("no credentials")
	}
	scheme, encoded, ok := strings.Cut(h, " ")
	if !ok || scheme == "" {
		return "", "", errors.New("malformed Authorization header: no space after the scheme")
	}
	if !strings.EqualFold(scheme, "basic") {
		return "", "", fmt.Errorf("the %q scheme is not supported; only Basic is", scheme)
	}
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return "", "", errors.New("malformed Authorization header: not base64")
	}
	user, password, ok = strings.Cut(string(raw), ":")
	if !ok || user == "" {
		return "", "", errors.New("malformed credentials: no user name before a ':'")
	}
	return user, password, nil
}

type principalKey struct{}

// WithPrincipal returns ctx carrying the authenticated user's name, which
// a follower passes on with the writes it forwards to the leader.
func WithPrincipal(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, principalKey{}, user)
}

// Principal is the user WithPrincipal put in ctx, or "".
func Principal(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// Middleware lets through the requests whose credentials c accepts, with
// the user in their context (Principal), and answers the others 401 with
// Connect's body. Failures are logged at debug, as Connect does, with the
// reason and never the password.
func Middleware(c Checker, log zerolog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, err := Credentials(r)
		if err == nil && !c.Authenticate(user, password) {
			err = fmt.Errorf("user %q: wrong password or unknown user", user)
		}
		if err != nil {
			log.Debug().Str("method", r.Method).Str("path", r.URL.Path).Str("remote", r.RemoteAddr).Str("why", err.Error()).
				Msg("REST request failed authentication")
			// Connect sends no challenge; one is added so that browsers
			// and clients that wait for it (curl --anyauth) know the scheme.
			w.Header().Set("WWW-Authenticate", `Basic realm="Kafka Connect", charset="UTF-8"`)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(Unauthorized))
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), user)))
	})
}

// Paths are the users files' paths, for the worker's start log.
func (u *Users) Paths() []string {
	out := make([]string, 0, len(u.files))
	for _, f := range u.files {
		if !slices.Contains(out, f.path) {
			out = append(out, f.path)
		}
	}
	return out
}
