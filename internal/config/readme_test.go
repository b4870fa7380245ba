package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// Every key of the config is in the README's sample file, so an operator
// finds each one documented in one place.
func TestEveryKeyIsInTheREADMESample(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "## Configuration")
	if start < 0 {
		t.Fatal("README has no Configuration section")
	}
	sample := readme[start:]
	sample = sample[strings.Index(sample, "```yaml"):]
	sample = sample[:strings.Index(sample[3:], "```")+3]
	var missing []string
	var walk func(t reflect.Type, prefix string)
	walk = func(typ reflect.Type, prefix string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if key == "" || key == "-" {
				continue
			}
			// A key is documented as "key:" or inside a flow map "{key: ...}" / ", key: ...".
			if !regexp.MustCompile(`(^|[\s{,#])` + regexp.QuoteMeta(key) + `:`).MatchString(sample) {
				missing = append(missing, prefix+key)
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft.NumField() > 0 && ft.Field(0).Tag.Get("yaml") != "" {
				walk(ft, prefix+key+".")
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
	if len(missing) > 0 {
		t.Errorf("config keys missing from the README sample: %s", strings.Join(missing, ", "))
	}
}
