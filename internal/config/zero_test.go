package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// durationKeys lists the path of every Duration key of t ("oidc.key_publish_ahead"),
// found by reflection so that a key added later is tested too.
func durationKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		path := prefix + key
		ft := f.Type
		switch {
		case ft == reflect.TypeFor[Duration](), ft == reflect.TypeFor[*Duration]():
			out = append(out, path)
		case ft.Kind() == reflect.Struct:
			out = append(out, durationKeys(ft, path+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, durationKeys(ft.Elem(), path+"[0].")...)
		}
	}
	return out
}

// yamlFor writes value at path as YAML ("clients[0].x" is a list item of
// a valid client).
func yamlFor(path, value string) string {
	if rest, ok := strings.CutPrefix(path, "clients[0]."); ok {
		return goodClient + "    " + rest + ": " + value + "\n"
	}
	parts := strings.Split(path, ".")
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i == len(parts)-1 {
			b.WriteString(" " + value)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// fieldAt is the Duration at path in c.
func fieldAt(c *Config, path string) time.Duration {
	v := reflect.ValueOf(c).Elem()
	for _, p := range strings.Split(path, ".") {
		idx := strings.HasSuffix(p, "[0]")
		p = strings.TrimSuffix(p, "[0]")
		t := v.Type()
		for i := range t.NumField() {
			if key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); key == p {
				v = v.Field(i)
				break
			}
		}
		if idx {
			v = v.Index(0)
		}
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	return time.Duration(v.Int())
}

// An explicit zero means zero, for every duration key, in the file and in
// a LATCHKEY_* variable: Load keeps 0 or refuses it naming the key; it
// never substitutes the default (decision 0006).
func TestExplicitZeroDurationIsZero(t *testing.T) {
	keys := durationKeys(reflect.TypeFor[Config](), "")
	if len(keys) < 15 {
		t.Fatalf("found %d duration keys (%v): the reflection walk is broken", len(keys), keys)
	}
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			check := func(how string, c *Config, err error) {
				t.Helper()
				if err != nil {
					if !strings.Contains(err.Error(), key) && !strings.Contains(err.Error(), strings.TrimPrefix(key, "clients[0].")) {
						t.Errorf("%s: %q: the error does not name the key", how, err)
					}
					return
				}
				if got := fieldAt(c, key); got != 0 {
					t.Errorf("%s: explicit 0s became %v", how, got)
				}
			}
			c, err := Load(writeFile(t, yamlFor(key, "0s")), nil)
			check("file", c, err)
			if !strings.HasPrefix(key, "clients") {
				env := "LATCHKEY_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_")) + "=0s"
				c, err := Load("", []string{env})
				check(env, c, err)
			}
		})
	}
}

// The keys whose zero is a valid setting keep it, and an unset key still
// gets its default.
func TestZeroDurationsThatAreValid(t *testing.T) {
	c, err := Load(writeFile(t, "oidc:\n  key_publish_ahead: 0s\nshutdown:\n  drain_delay: 0s\n  timeout: 0s\n"+
		"introspection:\n  group_permissions_cache: 0s\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.OIDC.KeyPublishAhead != 0 || *c.Shutdown.DrainDelay != 0 || c.Shutdown.Timeout != 0 || c.Introspection.GroupPermissionsCache != 0 {
		t.Errorf("explicit zeros: publish ahead %v, drain delay %v, shutdown timeout %v, group cache %v; want all 0",
			c.OIDC.KeyPublishAhead, *c.Shutdown.DrainDelay, c.Shutdown.Timeout, c.Introspection.GroupPermissionsCache)
	}
	d, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(d.OIDC.KeyPublishAhead) != 24*time.Hour || time.Duration(d.SMTP.Timeout) != 30*time.Second {
		t.Errorf("unset keys: publish ahead %v, smtp timeout %v; want the defaults 24h, 30s", d.OIDC.KeyPublishAhead, d.SMTP.Timeout)
	}
	e, err := Load("", []string{"LATCHKEY_OIDC_KEY_PUBLISH_AHEAD=0s"})
	if err != nil || e.OIDC.KeyPublishAhead != 0 {
		t.Errorf("LATCHKEY_OIDC_KEY_PUBLISH_AHEAD=0s: %v, %v; want 0", e, err)
	}
}

// A key written with no value (YAML null) is unset: it gets its default.
func TestNullDurationIsUnset(t *testing.T) {
	c, err := Load(writeFile(t, "oidc:\n  key_publish_ahead:\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.OIDC.KeyPublishAhead) != 24*time.Hour {
		t.Errorf("key_publish_ahead with no value = %v, want the 24h default", c.OIDC.KeyPublishAhead)
	}
}
