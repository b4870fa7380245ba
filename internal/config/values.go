package config

// Durations as YAML writes them, and the LATCHKEY_* variables.

import (
	"fmt"
	"net"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as "90s", "1h" or "30d" in YAML.
type Duration time.Duration

// UnmarshalYAML accepts Go durations plus a "d" (day) unit.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses a Go duration or a whole number of days ("30d").
func ParseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (use e.g. 90s, 15m, 1h, 30d)", s)
	}
	return v, nil
}

// applyEnv sets every scalar field whose LATCHKEY_<PATH> variable is present.
// Lists (clients, api_users, persons) come only from the file.
func applyEnv(c *Config, environ []string) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "LATCHKEY_") {
			env[k] = v
		}
	}
	if len(env) == 0 {
		return nil
	}
	if c.explicit == nil {
		c.explicit = map[string]bool{}
	}
	if c.fromEnv == nil {
		c.fromEnv = map[string]string{}
	}
	var err error
	eachVariable(reflect.ValueOf(c).Elem(), "LATCHKEY", "", func(name, path string, fv reflect.Value) {
		s, ok := env[name]
		if !ok || err != nil {
			return
		}
		c.explicit[path], c.fromEnv[path] = true, name
		err = setFromEnv(fv, name, s)
	})
	return err
}

// eachVariable calls fn with every field of v that a LATCHKEY_* variable
// sets: its variable's name, its path in the file ("oidc.key_publish_ahead")
// and the field. applyEnv, Variables and the serve --help list all come
// from this one walk, so they cannot disagree.
func eachVariable(v reflect.Value, prefix, path string, fn func(name, path string, fv reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" || !f.IsExported() {
			continue
		}
		name := prefix + "_" + strings.ToUpper(key)
		keyPath := key
		if path != "" {
			keyPath = path + "." + key
		}
		fv := v.Field(i)
		switch fv.Kind() {
		case reflect.Struct:
			eachVariable(fv, name, keyPath, fn)
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int64:
			fn(name, keyPath, fv)
		case reflect.Pointer: // *Duration, *bool: unset differs from zero
			if e := fv.Type().Elem(); e == reflect.TypeFor[Duration]() || e.Kind() == reflect.Bool {
				fn(name, keyPath, fv)
			}
		}
	}
}

// setFromEnv sets fv from the value s of the variable name.
func setFromEnv(fv reflect.Value, name, s string) error {
	if fv.Kind() == reflect.Pointer {
		p := reflect.New(fv.Type().Elem())
		if err := setFromEnv(p.Elem(), name, s); err != nil {
			return err
		}
		fv.Set(p)
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%s: %q is not a boolean", name, s)
		}
		fv.SetBool(b)
	case reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("%s: %q is not an integer", name, s)
		}
		fv.SetInt(int64(n))
	case reflect.Int64: // Duration
		d, err := ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fv.SetInt(int64(d))
	}
	return nil
}

// Variable is one LATCHKEY_* environment variable.
type Variable struct {
	Name    string // LATCHKEY_OIDC_KEY_PUBLISH_AHEAD
	Key     string // oidc.key_publish_ahead, the key it overrides
	Default string // the value when neither the file nor the variable sets it ("" for none)
}

// Variables lists every LATCHKEY_* variable latchkey reads, with its default.
func Variables() []Variable {
	def := &Config{}
	def.fillDefaults()
	var out []Variable
	eachVariable(reflect.ValueOf(def).Elem(), "LATCHKEY", "", func(name, path string, fv reflect.Value) {
		out = append(out, Variable{Name: name, Key: path, Default: formatValue(fv)})
	})
	return out
}

func formatValue(fv reflect.Value) string {
	if fv.Kind() == reflect.Pointer {
		if fv.IsNil() {
			return ""
		}
		fv = fv.Elem()
	}
	if fv.Type() == reflect.TypeFor[Duration]() {
		return FormatDuration(time.Duration(fv.Int()))
	}
	if fv.IsZero() && fv.Kind() != reflect.Bool {
		return ""
	}
	return fmt.Sprint(fv.Interface())
}

// FormatDuration writes d as a config file would: "24h", "90s", "2160h",
// "1h30m".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// UnknownVariables names each LATCHKEY_* variable of environ that latchkey
// does not read (a misspelling reads as unset, silently): one message each,
// with the closest known name when there is one. Names in ignore are
// skipped (variables of tests and tools).
func UnknownVariables(environ []string, ignore ...string) []string {
	known := map[string]bool{}
	var names []string
	for _, v := range Variables() {
		known[v.Name] = true
		names = append(names, v.Name)
	}
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "LATCHKEY_") || known[k] || slices.Contains(ignore, k) {
			continue
		}
		msg := k + " is not a latchkey variable: it is ignored"
		if near := closest(k, names); near != "" {
			msg += " (did you mean " + near + "?)"
		}
		out = append(out, msg)
	}
	sort.Strings(out)
	return out
}

// closest is the candidate nearest to s by edit distance, when it is near
// enough to be a misspelling; "" otherwise.
func closest(s string, candidates []string) string {
	best, bestD := "", max(1, len(s)/4)+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// StartWarnings are what serve warns about at start: LATCHKEY_* variables
// of environ that latchkey does not read, and an issuer on an unspecified
// address (0.0.0.0, [::]), which no client can reach: the discovery
// document and every URL handed out would name it.
func (c *Config) StartWarnings(environ []string) []string {
	out := UnknownVariables(environ)
	if u, err := url.Parse(c.Issuer); err == nil {
		if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
			out = append(out, fmt.Sprintf("issuer %s names the unspecified address %s, which clients cannot reach: "+
				"set LATCHKEY_ISSUER (or issuer: in the config file) to the URL clients use, e.g. http://localhost:%s "+
				"(listen may stay %s)", c.Issuer, u.Hostname(), portOr(u.Port(), "8080"), c.Listen))
		}
	}
	return out
}

func portOr(p, def string) string {
	if p == "" {
		return def
	}
	return p
}
