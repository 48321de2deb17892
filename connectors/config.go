package connectors

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ConfigType is the type of a config value, as Kafka Connect names it.
type ConfigType string

const (
	TypeString   ConfigType = "STRING"
	TypeInt      ConfigType = "INT"
	TypeLong     ConfigType = "LONG"
	TypeDouble   ConfigType = "DOUBLE"
	TypeBoolean  ConfigType = "BOOLEAN"
	TypeList     ConfigType = "LIST"
	TypePassword ConfigType = "PASSWORD"
	TypeClass    ConfigType = "CLASS"
)

// HiddenValue stands for a PASSWORD value wherever a config is shown, as
// Connect's Password.toString.
const HiddenValue = "[hidden]"

// Importance is Connect's importance of a config key.
type Importance string

const (
	High   Importance = "HIGH"
	Medium Importance = "MEDIUM"
	Low    Importance = "LOW"
)

// ConfigKey defines one config key.
type ConfigKey struct {
	Name string
	Type ConfigType
	// Default is used when the key is absent. It is ignored when Required.
	Default string
	// Required keys have no default: a config without them is invalid.
	Required    bool
	Importance  Importance
	Doc         string
	Group       string
	DisplayName string
	// Validate checks a present (or defaulted) value after it parsed as Type.
	Validate func(value string) error
	// Recommended lists the values a user would pick from, if any.
	Recommended []string
}

// ConfigDef is the ordered set of keys a connector (or the runtime) accepts.
type ConfigDef struct {
	keys  []ConfigKey
	index map[string]int
}

// NewConfigDef returns an empty definition.
func NewConfigDef() *ConfigDef { return &ConfigDef{index: map[string]int{}} }

// Define adds a key; defining a name twice replaces the earlier definition.
func (d *ConfigDef) Define(k ConfigKey) *ConfigDef {
	if k.Importance == "" {
		k.Importance = Medium
	}
	if k.Type == "" {
		k.Type = TypeString
	}
	if i, ok := d.index[k.Name]; ok {
		d.keys[i] = k
		return d
	}
	d.index[k.Name] = len(d.keys)
	d.keys = append(d.keys, k)
	return d
}

// Merge returns a new definition with d's keys followed by other's.
func (d *ConfigDef) Merge(other *ConfigDef) *ConfigDef {
	out := NewConfigDef()
	for _, k := range d.keys {
		out.Define(k)
	}
	if other != nil {
		for _, k := range other.keys {
			out.Define(k)
		}
	}
	return out
}

// Keys returns the keys in definition order.
func (d *ConfigDef) Keys() []ConfigKey { return append([]ConfigKey(nil), d.keys...) }

// Key returns a key by name.
func (d *ConfigDef) Key(name string) (ConfigKey, bool) {
	i, ok := d.index[name]
	if !ok {
		return ConfigKey{}, false
	}
	return d.keys[i], true
}

// ConfigValue is the validation result of one key, shaped like Connect's.
type ConfigValue struct {
	Name   string
	Value  string
	Set    bool // the key was present in the input
	Errors []string
}

// Validate checks every defined key of props and returns one result per key,
// in definition order. Keys props has but the definition lacks are not
// checked: Connect passes them through (converters, transforms, ...).
func (d *ConfigDef) Validate(props map[string]string) []ConfigValue {
	out := make([]ConfigValue, 0, len(d.keys))
	for _, k := range d.keys {
		raw, set := props[k.Name]
		cv := ConfigValue{Name: k.Name, Value: raw, Set: set}
		if !set {
			if k.Required {
				cv.Errors = append(cv.Errors, fmt.Sprintf("Missing required configuration %q which has no default value.", k.Name))
				out = append(out, cv)
				continue
			}
			raw = k.Default
			cv.Value = raw
		}
		// A password is never repeated in an error, as Connect's Password
		// value prints as [hidden].
		shown := strconv.Quote(raw)
		if k.Type == TypePassword {
			shown = HiddenValue
		}
		if err := checkType(k.Type, raw); err != nil {
			cv.Errors = append(cv.Errors, fmt.Sprintf("Invalid value %s for configuration %s: %v", shown, k.Name, err))
		} else if k.Validate != nil && (set || raw != "") {
			if err := k.Validate(raw); err != nil {
				cv.Errors = append(cv.Errors, fmt.Sprintf("Invalid value %s for configuration %s: %v", shown, k.Name, err))
			}
		}
		out = append(out, cv)
	}
	return out
}

// ConfigError lists every bad key of a config at once.
type ConfigError struct {
	Errors map[string][]string
}

func (e *ConfigError) Error() string {
	names := make([]string, 0, len(e.Errors))
	for n := range e.Errors {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%d invalid config key(s): ", len(names))
	for i, n := range names {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(n + ": " + strings.Join(e.Errors[n], ", "))
	}
	return b.String()
}

// Add records an error for key. It is safe on a nil map.
func (e *ConfigError) Add(key, msg string) {
	if e.Errors == nil {
		e.Errors = map[string][]string{}
	}
	e.Errors[key] = append(e.Errors[key], msg)
}

// Err returns e, or nil when it holds no error.
func (e *ConfigError) Err() error {
	if e == nil || len(e.Errors) == 0 {
		return nil
	}
	return e
}

// Parse validates props and returns typed access to them. The error, a
// *ConfigError, names every bad key.
func (d *ConfigDef) Parse(props map[string]string) (*Config, error) {
	ce := &ConfigError{}
	vals := map[string]string{}
	for _, cv := range d.Validate(props) {
		for _, e := range cv.Errors {
			ce.Add(cv.Name, e)
		}
		vals[cv.Name] = cv.Value
	}
	if err := ce.Err(); err != nil {
		return nil, err
	}
	return &Config{def: d, values: vals, raw: props}, nil
}

func checkType(t ConfigType, v string) error {
	switch t {
	case TypeInt:
		if v == "" {
			return nil
		}
		_, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return fmt.Errorf("not a 32-bit integer")
		}
	case TypeLong:
		if v == "" {
			return nil
		}
		_, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
	case TypeDouble:
		if v == "" {
			return nil
		}
		if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
			return fmt.Errorf("not a number")
		}
	case TypeBoolean:
		if v == "" {
			return nil
		}
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "false":
		default:
			return fmt.Errorf("expected true or false")
		}
	}
	return nil
}

// Config is a validated config with typed getters. Getters panic on a name the
// definition lacks: that is a programming error, not bad input.
type Config struct {
	def    *ConfigDef
	values map[string]string
	raw    map[string]string
}

func (c *Config) value(name string) string {
	v, ok := c.values[name]
	if !ok {
		panic(fmt.Sprintf("config key %q is not defined", name))
	}
	return strings.TrimSpace(v)
}

// Raw returns the original properties, including keys the definition lacks.
func (c *Config) Raw() map[string]string { return c.raw }

// IsSet reports whether the key was given explicitly.
func (c *Config) IsSet(name string) bool { _, ok := c.raw[name]; return ok }

func (c *Config) String(name string) string {
	if _, ok := c.values[name]; !ok {
		panic(fmt.Sprintf("config key %q is not defined", name))
	}
	return c.values[name]
}

func (c *Config) Int(name string) int {
	v := c.value(name)
	if v == "" {
		return 0
	}
	n, _ := strconv.ParseInt(v, 10, 32)
	return int(n)
}

func (c *Config) Long(name string) int64 {
	v := c.value(name)
	if v == "" {
		return 0
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

func (c *Config) Double(name string) float64 {
	v := c.value(name)
	if v == "" {
		return 0
	}
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

func (c *Config) Bool(name string) bool { return strings.EqualFold(c.value(name), "true") }

// List splits a comma-separated value, trimming spaces and dropping empties.
func (c *Config) List(name string) []string { return SplitList(c.value(name)) }

// Millis reads a LONG key in milliseconds as a duration.
func (c *Config) Millis(name string) time.Duration {
	return time.Duration(c.Long(name)) * time.Millisecond
}

// SplitList splits a comma-separated list the way Connect does.
func SplitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// AtLeast validates that a numeric value is >= min.
func AtLeast(min float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		if f < min {
			return fmt.Errorf("value must be at least %v", min)
		}
		return nil
	}
}

// OneOf validates that a value is one of the allowed ones (case-sensitive, as
// Connect's ValidString).
func OneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if strings.TrimSpace(v) == a {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

// NonEmpty validates that a value is not blank.
func NonEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("must not be empty")
	}
	return nil
}
