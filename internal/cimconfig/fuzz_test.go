package cimconfig

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzUnits: any body decodes and validates without a panic, and a unit
// that passes validation survives the storage round trip unchanged.
func FuzzUnits(f *testing.F) {
	f.Add(UnitFeatures, []byte(`{"action_token":{"login":{"ttl":5},"whitelisted_urls":[{"url":"https://a.example/"}]}}`))
	f.Add(UnitLoginMethods, []byte(`{"login_methods":[{"id":"a","type":"SAML","saml_attributes":{"comparison":"EXACT"}}]}`))
	f.Add(UnitOrganisations, []byte(`{"service_providers":{"x":{"identity_attributes":{"e":{}}}}}`))
	f.Add(UnitPasswordPolicy, []byte(`{"min_length":8,"max_length":8,"lower_case_char_required":true,"upper_case_char_required":false,"special_char_required":false,"breached_password_blocked":false}`))
	f.Add(UnitCustomMessages, []byte(`{"default":{"a":"b"},"locales":{"nl_BE":{"a":"c"}}}`))
	f.Add(UnitStepUp, []byte(`{"stategy":"USER_PREFERENCE","actions":{"default_step_up_authentication_level":100}}`))
	names := []string{UnitFeatures, UnitAttributes, UnitUIExtension, UnitStepUp, UnitLoginMethods, UnitRedirects,
		UnitOrganisations, UnitCustomMessages, UnitEmailNotifications, UnitPasswordPolicy, UnitProfile}
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		known := false
		for _, n := range names {
			known = known || n == name
		}
		if !known {
			return
		}
		v := unitOf(name)
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if dec.Decode(v) != nil {
			return
		}
		var p problems
		validateValue(&p, name, v)
		if p.err() != nil {
			return
		}
		stored, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("a valid %s does not marshal: %v", name, err)
		}
		back := unitOf(name)
		if err := json.Unmarshal(stored, back); err != nil {
			t.Fatalf("stored %s does not decode: %v", name, err)
		}
		again, _ := json.Marshal(back)
		if !bytes.Equal(stored, again) || !reflect.DeepEqual(normalize(t, stored), normalize(t, again)) {
			t.Fatalf("%s changed in the round trip:\n%s\n%s", name, stored, again)
		}
	})
}

func normalize(t *testing.T, b []byte) any {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
