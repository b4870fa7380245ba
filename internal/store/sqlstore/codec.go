package sqlstore

import (
	"encoding/json"
	"strings"
	"time"
)

// micros stores t as Unix microseconds; the zero time is 0.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fromMicros is the inverse of micros, always in UTC.
func fromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

// list stores a string list as JSON text; nil and empty are both "[]".
func list(v []string) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v) // []string always marshals
	return string(b)
}

// fromList decodes list's output; an empty list reads back as nil.
func fromList(s string) ([]string, error) {
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	if len(v) == 0 {
		return nil, nil
	}
	return v, nil
}

// blob keeps nil and empty apart from the store's point of view: both read back as nil.
func fromBlob(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func lower(s string) string { return strings.ToLower(s) }
