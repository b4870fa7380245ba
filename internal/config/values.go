package config

// Durations as YAML writes them, and the LATCHKEY_* variables.

import (
	"fmt"
	"reflect"
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
	return walkEnv(reflect.ValueOf(c).Elem(), "LATCHKEY", "", env, c.explicit)
}

// walkEnv sets the fields of v from env, and records each key it set in
// explicit (by its path in the file: "oidc.key_publish_ahead").
func walkEnv(v reflect.Value, prefix, path string, env map[string]string, explicit map[string]bool) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		name := prefix + "_" + strings.ToUpper(key)
		keyPath := key
		if path != "" {
			keyPath = path + "." + key
		}
		if _, ok := env[name]; ok {
			explicit[keyPath] = true
		}
		fv := v.Field(i)
		switch fv.Kind() {
		case reflect.Struct:
			if err := walkEnv(fv, name, keyPath, env, explicit); err != nil {
				return err
			}
		case reflect.String:
			if s, ok := env[name]; ok {
				fv.SetString(s)
			}
		case reflect.Bool:
			if s, ok := env[name]; ok {
				b, err := strconv.ParseBool(s)
				if err != nil {
					return fmt.Errorf("%s: %q is not a boolean", name, s)
				}
				fv.SetBool(b)
			}
		case reflect.Int:
			if s, ok := env[name]; ok {
				n, err := strconv.Atoi(s)
				if err != nil {
					return fmt.Errorf("%s: %q is not an integer", name, s)
				}
				fv.SetInt(int64(n))
			}
		case reflect.Int64: // Duration
			if s, ok := env[name]; ok {
				d, err := ParseDuration(s)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				fv.SetInt(int64(d))
			}
		case reflect.Pointer: // *Duration: unset differs from 0
			if s, ok := env[name]; ok && fv.Type().Elem() == reflect.TypeFor[Duration]() {
				d, err := ParseDuration(s)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				v := Duration(d)
				fv.Set(reflect.ValueOf(&v))
			}
		}
	}
	return nil
}
