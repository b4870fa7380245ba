package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/personimport"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

func TestPersonShow(t *testing.T) {
	db := filepath.Join(t.TempDir(), "latchkey.db")
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	err = st.CreatePerson(context.Background(), store.Person{ID: "0f8fad5b-d9cb-469f-a165-70867728950e", Email: "Jane@Example.com",
		PasswordHash: "$pbkdf2-sha256$i=1000,l=32$c2FsdA$c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0", Status: "ACTIVATED", FirstName: "Jane",
		TOTPSecret: []byte("sealed"), Profile: store.PersonProfile{Gender: "F"}})
	if err == nil {
		err = st.LinkIdentity(context.Background(), store.ExternalIdentity{IdPID: "idp", ExternalID: "jane", PersonID: "0f8fad5b-d9cb-469f-a165-70867728950e"})
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LATCHKEY_DATABASE", "sqlite:"+db)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"person", "show", "--email", "jane@example.COM"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if v["id"] != "0f8fad5b-d9cb-469f-a165-70867728950e" || v["password"] != "pbkdf2-sha256" || v["totp"] != true ||
		v["status"] != "ACTIVATED" || len(v["identities"].([]any)) != 1 {
		t.Errorf("%s", out.String())
	}
	// The profile is the import's shape, as the admin API reads it: the
	// login email among the addresses, the name inside.
	var shown struct {
		Profile personimport.Profile `json:"profile"`
	}
	if err := json.Unmarshal(out.Bytes(), &shown); err != nil {
		t.Fatal(err)
	}
	if pr := shown.Profile; len(pr.EmailAddresses) != 1 || pr.EmailAddresses[0].Value != "Jane@Example.com" ||
		!pr.EmailAddresses[0].Primary || pr.Name == nil || pr.Name.FirstName != "Jane" || pr.Gender != "F" ||
		pr.ReferenceID != "0f8fad5b-d9cb-469f-a165-70867728950e" {
		t.Errorf("profile: %s", out.String())
	}
	if strings.Contains(out.String(), "c2VjcmV0") || strings.Contains(out.String(), "sealed") {
		t.Error("credential material in the output")
	}
	for name, tc := range map[string]struct {
		args []string
		code int
		msg  string
	}{
		"unknown email":   {[]string{"person", "show", "--email", "nobody@example.com"}, 1, "no person with email"},
		"no email":        {[]string{"person", "show"}, 2, "--email is required"},
		"no subcommand":   {[]string{"person"}, 2, "person show"},
		"other partition": {[]string{"person", "show", "--email", "jane@example.com", "--partition", "t2"}, 1, "no person"},
	} {
		out.Reset()
		errb.Reset()
		code := run(context.Background(), tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.msg) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q", name, code, errb.String())
		}
	}
}
