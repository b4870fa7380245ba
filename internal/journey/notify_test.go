package journey_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/mail/smtpsink"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

const wait = 20 * time.Second

// mailServer is a server whose mails go to a real SMTP server process, with
// an API user for the import API and the notification switches notify.
func mailServer(t *testing.T, backend string, notify *cimconfig.EmailNotificationConfiguration) (*servertest.Server, *smtpsink.Process) {
	t.Helper()
	sink := smtpsink.Start(t)
	cfg := &config.Config{
		APIUsers: []config.APIUser{{Username: "importer", Password: "importer-password"}},
		SMTP:     sink.SMTP(),
	}
	s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
	err := s.App.Journeys().Config.Update(context.Background(), []string{cimconfig.UnitEmailNotifications}, func(snap *cimconfig.Snapshot) error {
		snap.EmailNotifications = notify
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, sink
}

type imported struct{ ref, email, status string }

func importPersons(t *testing.T, s *servertest.Server, ps ...imported) {
	t.Helper()
	var list []any
	for _, p := range ps {
		list = append(list, map[string]any{"status": p.status, "profile": map[string]any{"reference_id": p.ref,
			"name":            map[string]any{"first_name": "Imre", "last_name": "Ported"},
			"email_addresses": []any{map[string]any{"value": p.email, "primary": true, "verified": true}}}})
	}
	body, _ := json.Marshal(map[string]any{"persons": list})
	req, _ := http.NewRequest("POST", s.URL+"/api/import/persons", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("importer", "importer-password")
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Failures []any `json:"failures"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || len(res.Failures) != 0 {
		t.Fatalf("import: %d %v", resp.StatusCode, res.Failures)
	}
}

func subjects(sink *smtpsink.Process) map[string][]string {
	out := map[string][]string{}
	for _, m := range sink.Mails() {
		out[m.To] = append(out[m.To], m.Header.Get("Subject"))
	}
	return out
}

// The import API mails an invitation link to an INVITED person, once (an
// update that leaves the person INVITED sends none), and the
// welcome.on_api_enabled mail to a new person who may sign in; a person
// updated, or BLOCKED, gets no welcome.
func TestImportSendsInvitationsAndWelcome(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			yes := true
			s, sink := mailServer(t, backend, &cimconfig.EmailNotificationConfiguration{Welcome: &cimconfig.Welcome{OnAPIEnabled: &yes}})
			invited := imported{"5a1c0f2e-8d3b-4c6a-9e7f-1b2d3c4e5f60", "invited@example.com", "INVITED"}
			active := imported{"6b2d1f3e-9e4c-4d7b-8f80-2c3e4d5f6071", "active@example.com", "ACTIVATED"}
			blocked := imported{"7c3e2a4f-0f5d-4e8c-9a91-3d4f5e6a7182", "blocked@example.com", "BLOCKED"}
			importPersons(t, s, invited, active, blocked)
			sink.WaitFor(2, wait, nil)
			importPersons(t, s, invited, active) // updates: no mail
			// A marker mail queued after the updates: once it arrived,
			// any mail the updates had caused has too (one outbox, in order).
			marker := imported{"8d4f3b5a-1a6e-4f9d-8ba2-4e5f6a7b8293", "marker@example.com", "ACTIVATED"}
			importPersons(t, s, marker)
			sink.WaitFor(1, wait, func(m smtpsink.Mail) bool { return m.To == marker.email })
			got := subjects(sink)
			if want := []string{"You are invited"}; !equal(got[invited.email], want) {
				t.Errorf("invited person got %q, want %q", got[invited.email], want)
			}
			if want := []string{"Welcome"}; !equal(got[active.email], want) {
				t.Errorf("activated person got %q, want %q", got[active.email], want)
			}
			if len(got[blocked.email]) != 0 {
				t.Errorf("blocked person got %q", got[blocked.email])
			}
			inv := sink.WaitFor(1, wait, func(m smtpsink.Mail) bool { return m.To == invited.email })
			if link := inv[0].Link(s.URL + "/activate?"); link == "" {
				t.Errorf("no invitation link in:\n%s", inv[0].Raw)
			}
		})
	}
}

func equal(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// Deleting a person mails account_removed to the address read before the
// row went, in the deleting transaction; with the switch off, nothing.
func TestDeletionSendsAccountRemoved(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			yes := true
			s, sink := mailServer(t, backend, &cimconfig.EmailNotificationConfiguration{AccountRemoved: &yes})
			gone := imported{"5a1c0f2e-8d3b-4c6a-9e7f-1b2d3c4e5f60", "gone@example.com", "ACTIVATED"}
			importPersons(t, s, gone)
			ctx := context.Background()
			if _, err := s.App.Journeys().Identity.DeletePerson(ctx, gone.ref, "test"); err != nil {
				t.Fatal(err)
			}
			m := sink.WaitFor(1, wait, func(m smtpsink.Mail) bool { return m.To == gone.email })
			if got := m[0].Header.Get("Subject"); got != "Your account was removed" {
				t.Errorf("subject %q", got)
			}

			off := false
			err := s.App.Journeys().Config.Update(ctx, []string{cimconfig.UnitEmailNotifications}, func(snap *cimconfig.Snapshot) error {
				snap.EmailNotifications = &cimconfig.EmailNotificationConfiguration{AccountRemoved: &off, Welcome: &cimconfig.Welcome{OnAPIEnabled: &yes}}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			quiet := imported{"6b2d1f3e-9e4c-4d7b-8f80-2c3e4d5f6071", "quiet@example.com", "ACTIVATED"}
			importPersons(t, s, quiet)
			sink.WaitFor(1, wait, func(m smtpsink.Mail) bool { return m.To == quiet.email }) // the welcome
			if _, err := s.App.Journeys().Identity.DeletePerson(ctx, quiet.ref, "test"); err != nil {
				t.Fatal(err)
			}
			marker := imported{"8d4f3b5a-1a6e-4f9d-8ba2-4e5f6a7b8293", "marker@example.com", "ACTIVATED"}
			importPersons(t, s, marker)
			sink.WaitFor(1, wait, func(m smtpsink.Mail) bool { return m.To == marker.email })
			if got := subjects(sink)[quiet.email]; !equal(got, []string{"Welcome"}) {
				t.Errorf("with account_removed off the deleted person got %q", got)
			}
		})
	}
}
