package configprovider

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/sluice-io/sluice/internal/javaprops"
	"github.com/sluice-io/sluice/internal/javaregex"
)

// The providers' class names, as a worker's config.providers.<name>.class
// gives them, and their options (config.providers.<name>.param.<option>).
const (
	FileClass      = "org.apache.kafka.common.config.provider.FileConfigProvider"
	DirectoryClass = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
	EnvVarClass    = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"

	AllowedPathsOption     = "allowed.paths"
	AllowlistPatternOption = "allowlist.pattern"
)

// FileProvider is FileConfigProvider: the path is a Java properties file
// (read as UTF-8, as Connect reads it), a key is a property in it.
type FileProvider struct {
	allowed *AllowedPaths
}

// NewFileProvider returns a FileProvider that reads only under allowed
// (nil: anywhere).
func NewFileProvider(allowed *AllowedPaths) *FileProvider { return &FileProvider{allowed: allowed} }

func (p *FileProvider) Get(path string, keys []string) (map[string]string, error) {
	data := map[string]string{}
	if path == "" {
		return data, nil // as Connect: nothing at the empty path
	}
	file, err := p.allowed.check(path)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cannot read properties from file %s: %w", path, unwrapPathError(err))
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("cannot read properties from file %s: it is not UTF-8", path)
	}
	props, err := javaprops.Parse(b)
	if err != nil {
		// The syntax error's excerpt is the file's text, maybe a secret:
		// say where and what only.
		var se *javaprops.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("cannot read properties from file %s: line %d: %s", path, se.Line, se.Problem)
		}
		return nil, fmt.Errorf("cannot read properties from file %s", path)
	}
	for _, k := range keys {
		if v, ok := props[k]; ok {
			data[k] = v
		}
	}
	return data, nil
}

// DirectoryProvider is DirectoryConfigProvider: the path is a directory, a
// key is the name of a regular file in it (a symlink to one counts, as
// Java's Files.isRegularFile follows links), and its value is the file's
// whole content, not trimmed.
type DirectoryProvider struct {
	allowed *AllowedPaths
}

// NewDirectoryProvider returns a DirectoryProvider that reads only under
// allowed (nil: anywhere).
func NewDirectoryProvider(allowed *AllowedPaths) *DirectoryProvider {
	return &DirectoryProvider{allowed: allowed}
}

func (p *DirectoryProvider) Get(path string, keys []string) (map[string]string, error) {
	data := map[string]string{}
	if path == "" {
		return data, nil
	}
	dir, err := p.allowed.check(path)
	if err != nil {
		return nil, err
	}
	// Connect logs a warning and resolves nothing for a path that is not a
	// directory; Sluice refuses it, so the connector does not run with
	// placeholders for values (ADR 0007).
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("cannot read directory %s: %w", path, unwrapPathError(err))
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", path)
	}
	for _, k := range keys {
		// A key is a file name in the directory; Connect matches the
		// names it lists, so a key naming another place matches nothing.
		if k == "" || k == "." || k == ".." || strings.ContainsRune(k, filepath.Separator) {
			continue
		}
		file := filepath.Join(dir, k)
		st, err := os.Stat(file)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !st.Mode().IsRegular()) {
			continue
		}
		if err == nil {
			// A link in an allowed directory must not lead out of it.
			_, err = p.allowed.check(file)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read file %s for key %s: %w", file, k, unwrapPathError(err))
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("cannot read file %s for key %s: %w", file, k, unwrapPathError(err))
		}
		// Java's new String(bytes, UTF_8) replaces what is not UTF-8.
		data[k] = strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return data, nil
}

// EnvVarProvider is EnvVarConfigProvider: a key is an environment
// variable of the worker's process, as it was when the worker started,
// among those allowlist.pattern matches whole. It takes no path.
type EnvVarProvider struct {
	env map[string]string
}

// NewEnvVarProvider returns the variables of environ (os.Environ's form)
// whose names allow matches as a whole (nil: all of them).
func NewEnvVarProvider(environ []string, allow *javaregex.Regex) *EnvVarProvider {
	env := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (allow == nil || allow.Whole.MatchString(k)) {
			env[k] = v
		}
	}
	return &EnvVarProvider{env: env}
}

func (p *EnvVarProvider) Get(path string, keys []string) (map[string]string, error) {
	if path != "" {
		return nil, fmt.Errorf("a path is not supported for EnvVarConfigProvider, invalid value %q (write ${provider:VARIABLE})", path)
	}
	data := map[string]string{}
	for _, k := range keys {
		if v, ok := p.env[k]; ok {
			data[k] = v
		}
	}
	return data, nil
}

// unwrapPathError drops the *fs.PathError's operation and path, which the
// callers' messages already give.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// AllowedPaths is allowed.paths: the directories and files a file or
// directory provider may read. Like Kafka's AllowedPaths, each is an
// absolute path that exists, and a path asked for is normalised ("." and
// ".." resolved) before it is compared, component by component. Sluice
// also resolves symbolic links on both sides, so a link inside an allowed
// path that leads out of it is refused, where Kafka would follow it.
type AllowedPaths struct {
	roots []allowedRoot
}

type allowedRoot struct {
	given, real string
}

// ParseAllowedPaths reads a comma-separated allowed.paths value; key names
// the worker key in errors. An empty value allows every path (nil).
func ParseAllowedPaths(key, value string) (*AllowedPaths, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	a := &AllowedPaths{}
	for _, p := range strings.Split(value, ",") {
		p = strings.TrimSpace(p)
		clean := filepath.Clean(p)
		if p == "" || !filepath.IsAbs(clean) {
			return nil, fmt.Errorf("%s: path %q is not absolute", key, p)
		}
		real, err := filepath.EvalSymlinks(clean)
		if err != nil {
			return nil, fmt.Errorf("%s: path %s does not exist: %v", key, clean, unwrapPathError(err))
		}
		a.roots = append(a.roots, allowedRoot{given: clean, real: real})
	}
	return a, nil
}

// check returns the path to read for path, or an error naming path when
// it lies outside the allowed paths. Without allowed paths, path is read
// as given, as Kafka does.
func (a *AllowedPaths) check(path string) (string, error) {
	if a == nil {
		return path, nil
	}
	clean := filepath.Clean(path)
	var within *allowedRoot
	for i, r := range a.roots {
		if inside(clean, r.given) {
			within = &a.roots[i]
			break
		}
	}
	if within == nil {
		return "", fmt.Errorf("path %s is outside %s (%s)", path, AllowedPathsOption, a)
	}
	real, err := filepath.EvalSymlinks(clean)
	if errors.Is(err, fs.ErrNotExist) {
		return clean, nil // the read says it does not exist
	}
	if err != nil {
		return "", fmt.Errorf("cannot resolve path %s: %w", path, unwrapPathError(err))
	}
	for _, r := range a.roots {
		if inside(real, r.real) {
			return clean, nil
		}
	}
	return "", fmt.Errorf("path %s is a symbolic link, or lies under one, that leads outside %s (%s)", path, AllowedPathsOption, a)
}

func (a *AllowedPaths) String() string {
	given := make([]string, len(a.roots))
	for i, r := range a.roots {
		given[i] = r.given
	}
	return strings.Join(given, ",")
}

// inside is Java's Path.startsWith for clean absolute paths: root itself or
// a path under it, whole components only (/a/bc is not under /a/b).
func inside(path, root string) bool {
	if path == root {
		return true
	}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	return strings.HasPrefix(path, root)
}
