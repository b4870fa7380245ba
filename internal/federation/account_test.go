package federation_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/latchkey/latchkey/internal/federation"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

func TestSignInRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		f := request.Facts{Addr: "192.0.2.1"}
		method := func(extra string) federation.Method {
			t.Helper()
			w.configure(t, methodJSON("corp", "https://op.example/.well-known/openid-configuration", extra))
			m, err := w.fed.Method(ctx, "CORP")
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		cause := func(err error) string {
			var fe *federation.Error
			if errors.As(err, &fe) {
				return fe.Cause
			}
			return ""
		}
		m := method(`,"synchronise_attributes":true,"excluded_unmapped_attributes":["secret_note"],
			"attribute_mappings":[{"id":"a1","map_to":"first_name","map_from":"nickname"}]`)

		// A new subject creates a person from the mapped attributes; the
		// unmapped ones are kept on the identity unless excluded, never on
		// the person.
		up := federation.Upstream{Subject: "s-1", Attributes: map[string]any{"email": "new@example.com", "nickname": "Newt",
			"family_name": "Person", "department": "R&D", "secret_note": "x", "iat": 1.0}}
		out, err := w.fed.SignIn(ctx, f, m, up)
		if err != nil || !out.Created || out.Person.FirstName != "Newt" || out.Person.LastName != "Person" ||
			out.Person.Custom != nil || out.Person.Status != identity.StatusActivated || out.Person.Profile.Emails[0].Verified {
			t.Fatalf("creation: %+v, %v", out, err)
		}
		if link, err := w.s.Store.FindIdentity(ctx, "", "corp", "s-1"); err != nil ||
			!maps.Equal(link.Attributes, map[string]string{"department": "R&D"}) {
			t.Errorf("the identity's attributes %v, %v; want department alone (secret_note excluded, iat the protocol's)", link.Attributes, err)
		}
		// The same subject again is that person; synchronise_attributes
		// writes the new name.
		up.Attributes["nickname"] = "Newton"
		again, err := w.fed.SignIn(ctx, f, m, up)
		if err != nil || again.Created || again.Person.ID != out.Person.ID || !again.Updated || again.Person.FirstName != "Newton" {
			t.Errorf("second sign-in: %+v, %v; want the same person, synchronised", again, err)
		}
		stored, _ := w.s.Store.GetPerson(ctx, out.Person.ID)
		if stored.FirstName != "Newton" {
			t.Errorf("stored first name %q after synchronising", stored.FirstName)
		}

		// An existing account with the upstream's email: coupling off.
		jane := federation.Upstream{Subject: "s-jane", Attributes: map[string]any{"email": "JANE@example.com"}, EmailVerified: true}
		if _, err := w.fed.SignIn(ctx, f, m, jane); cause(err) != "account_exists" {
			t.Errorf("coupling off: %v, want account_exists", err)
		}
		w.configure(t, `{"features":{"automated_external_identity_coupling_enabled":true}}`)
		jane.EmailVerified = false
		if _, err := w.fed.SignIn(ctx, f, m, jane); cause(err) != "email_not_verified" {
			t.Errorf("coupling an unverified email: %v, want email_not_verified", err)
		}
		jane.EmailVerified = true
		coupled, err := w.fed.SignIn(ctx, f, m, jane)
		if err != nil || !coupled.Coupled || coupled.Person.Email != "jane@example.com" {
			t.Errorf("coupling a verified email: %+v, %v", coupled, err)
		}
		if link, err := w.s.Store.FindIdentity(ctx, "", "corp", "s-jane"); err != nil || link.PersonID != coupled.Person.ID {
			t.Errorf("coupled identity: %+v, %v", link, err)
		}
		// A second account of the same provider with jane's address: one
		// per person unless bind_multiple_external_accounts_with_one_cim_account.
		jane2 := federation.Upstream{Subject: "s-jane-2", Attributes: map[string]any{"email": "jane@example.com"}, EmailVerified: true}
		if _, err := w.fed.SignIn(ctx, f, m, jane2); cause(err) != "account_linked" {
			t.Errorf("a second identity of the provider: %v, want account_linked", err)
		}
		w.configure(t, `{"features":{"automated_external_identity_coupling_enabled":true,"bind_multiple_external_accounts_with_one_cim_account":true}}`)
		if again, err := w.fed.SignIn(ctx, f, m, jane2); err != nil || again.Person.ID != coupled.Person.ID {
			t.Errorf("a second identity with bind_multiple...: %+v, %v; want jane", again, err)
		}

		// An address in compatibility characters would make a second
		// account that looks like another's ("ｊane@…" beside jane@…), or
		// couple to none: refused, verified or not.
		look := federation.Upstream{Subject: "s-look", Attributes: map[string]any{"email": "\uff4aane@example.com"}, EmailVerified: true}
		if _, err := w.fed.SignIn(ctx, f, m, look); cause(err) != "email_not_normalized" {
			t.Errorf("a fullwidth email: %v, want email_not_normalized", err)
		}
		if ps, _ := w.s.Store.FindPersons(ctx, "\uff4aane@example.com"); len(ps) != 0 {
			t.Errorf("a look-alike person was made: %+v", ps)
		}
		// synchronise_attributes keeps the address it has instead.
		up.Attributes["email"] = "\uff4eew@example.com"
		if again, err := w.fed.SignIn(ctx, f, m, up); err != nil || again.Person.Email != "new@example.com" {
			t.Errorf("synchronising a fullwidth email: %+v, %v; want the address kept", again, err)
		}
		up.Attributes["email"] = "new@example.com"

		// No email: no account can be made.
		if _, err := w.fed.SignIn(ctx, f, m, federation.Upstream{Subject: "s-2", Attributes: map[string]any{"name": "x"}}); cause(err) != "email_missing" {
			t.Errorf("no email: %v, want email_missing", err)
		}
		// A blocked person is refused, linked or not.
		if _, err := w.s.App.Journeys().Identity.SetStatus(ctx, out.Person.ID, identity.StatusBlocked, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.fed.SignIn(ctx, f, m, up); cause(err) != "account_inactive" {
			t.Errorf("blocked person: %v, want account_inactive", err)
		}

		// Without auto_activation_enabled a new person is CREATED; with
		// auto_email_verification the address is verified.
		m = method(`,"auto_activation_enabled":false,"auto_email_verification":true`)
		fresh, err := w.fed.SignIn(ctx, f, m, federation.Upstream{Subject: "s-3", Attributes: map[string]any{"email": "fresh@example.com"}})
		if err != nil || fresh.Person.Status != identity.StatusCreated || !fresh.Person.Profile.Emails[0].Verified {
			t.Errorf("without auto activation: %+v, %v; want CREATED with a verified address", fresh, err)
		}
	})
}

// Two first sign-ins of one subject at once make one person.
func TestSignInRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		w.configure(t, methodJSON("corp", "https://op.example/.well-known/openid-configuration", ""))
		m, err := w.fed.Method(context.Background(), "corp")
		if err != nil {
			t.Fatal(err)
		}
		const n = 6
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := w.fed.SignIn(context.Background(), request.Facts{}, m,
					federation.Upstream{Subject: "racer", Attributes: map[string]any{"email": "racer@example.com"}})
				if err != nil {
					t.Errorf("sign-in %d: %v", i, err)
					return
				}
				ids[i] = out.Person.ID
			}()
		}
		wg.Wait()
		for _, id := range ids[1:] {
			if id != ids[0] {
				t.Fatalf("concurrent first sign-ins made different persons: %v", ids)
			}
		}
		if _, err := w.s.Store.GetPerson(context.Background(), ids[0]); errors.Is(err, store.ErrNotFound) {
			t.Error("the person is not stored")
		}
	})
}

// What an upstream sends unmapped is kept on the identity, apart from the
// person: it never replaces a custom attribute the operator (or the import
// API) wrote, nor fills the profile — at coupling and at every
// synchronising sign-in. Only custom_attribute_mappings write custom
// attributes, and excluded_unmapped_attributes are kept nowhere.
func TestUnmappedUpstreamClaimsStayOffThePerson(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		f := request.Facts{Addr: "192.0.2.1"}
		jane, err := w.s.Store.GetPersonByEmail(ctx, "", "jane@example.com")
		if err != nil {
			t.Fatal(err)
		}
		operator := map[string]string{"role": "member", "tier": "gold"}
		if err := w.s.Store.UpdatePerson(ctx, jane.ID, func(p store.Person) (store.Person, error) {
			p.Custom, p.Profile.DisplayName = maps.Clone(operator), "Jane D."
			return p, nil
		}); err != nil {
			t.Fatal(err)
		}
		w.configure(t, `{"features":{"automated_external_identity_coupling_enabled":true}}`)
		w.configure(t, methodJSON("corp", "https://op.example/.well-known/openid-configuration",
			`,"synchronise_attributes":true,"excluded_unmapped_attributes":["ssn"]`))
		m, err := w.fed.Method(ctx, "corp")
		if err != nil {
			t.Fatal(err)
		}
		up := federation.Upstream{Subject: "s-jane", EmailVerified: true, Attributes: map[string]any{"email": "jane@example.com",
			"role": "admin", "tier": "platinum", "display_name": "Shadow", "first_name": "Shadow", "ssn": "123", "nonce": "n"}}
		for _, round := range []string{"coupling", "synchronising sign-in"} {
			out, err := w.fed.SignIn(ctx, f, m, up)
			if err != nil {
				t.Fatalf("%s: %v", round, err)
			}
			p, _ := w.s.Store.GetPerson(ctx, jane.ID)
			if out.Person.ID != jane.ID || !maps.Equal(p.Custom, operator) || p.Profile.DisplayName != "Jane D." || p.FirstName != jane.FirstName {
				t.Errorf("%s: person %+v; want the operator's custom attributes %v and the profile untouched", round, p, operator)
			}
			link, err := w.s.Store.FindIdentity(ctx, "", "corp", "s-jane")
			want := map[string]string{"role": up.Attributes["role"].(string), "tier": "platinum", "display_name": "Shadow", "first_name": "Shadow"}
			if err != nil || !maps.Equal(link.Attributes, want) {
				t.Errorf("%s: the identity's attributes %v, %v; want %v (ssn excluded, nonce the protocol's)", round, link.Attributes, err, want)
			}
			up.Attributes["role"] = "owner"
		}
		// The next sign-in replaces what the identity keeps: it is what the
		// upstream said last.
		if link, _ := w.s.Store.FindIdentity(ctx, "", "corp", "s-jane"); link.Attributes["role"] != "owner" {
			t.Errorf("the identity's role %q after a synchronising sign-in, want owner", link.Attributes["role"])
		}

		// An explicit custom_attribute_mappings entry is the operator's
		// choice: that one attribute, and only it, becomes custom.
		w.configure(t, methodJSON("corp", "https://op.example/.well-known/openid-configuration",
			`,"synchronise_attributes":true,"custom_attribute_mappings":[{"id":"c1","attribute_to_map_from":"tier","attribute_to_map_to":"tier"}]`))
		if m, err = w.fed.Method(ctx, "corp"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.fed.SignIn(ctx, f, m, up); err != nil {
			t.Fatal(err)
		}
		p, _ := w.s.Store.GetPerson(ctx, jane.ID)
		if !maps.Equal(p.Custom, map[string]string{"role": "member", "tier": "platinum"}) {
			t.Errorf("custom attributes %v with tier mapped, want role kept and tier the upstream's", p.Custom)
		}
		if link, _ := w.s.Store.FindIdentity(ctx, "", "corp", "s-jane"); link.Attributes["tier"] != "" || link.Attributes["role"] != "owner" {
			t.Errorf("the identity keeps %v; a mapped attribute is not kept there", link.Attributes)
		}
	})
}
