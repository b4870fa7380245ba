package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/mail/smtpsink"
)

// invite imports n INVITED persons (each owed an invitation mail, written
// in the person's savepoint) and returns their addresses.
func invite(t *testing.T, addr string, request, n int) []string {
	t.Helper()
	persons := make([]any, n)
	to := make([]string, n)
	for i := range persons {
		ref := crashRef(request, i)
		to[i] = ref + "@example.com"
		persons[i] = map[string]any{"status": "INVITED", "profile": map[string]any{"reference_id": ref,
			"name": map[string]any{"first_name": "F", "last_name": "L"}, "email_addresses": []any{map[string]any{"value": to[i], "primary": true}}}}
	}
	body, _ := json.Marshal(map[string]any{"persons": persons})
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/import/persons", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("importer", "importer-password")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Successful []string `json:"successful_reference_ids"`
	}
	err = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated || len(res.Successful) != n {
		t.Fatalf("import: %d, %d of %d imported, %v", resp.StatusCode, len(res.Successful), n, err)
	}
	return to
}

// received counts the mails per recipient and the Message-IDs of each.
func received(sink *smtpsink.Process) map[string][]string {
	out := map[string][]string{}
	for _, m := range sink.Mails() {
		out[m.To] = append(out[m.To], m.Header.Get("Message-ID"))
	}
	return out
}

// TestOutboxSurvivesSIGKILL runs the real binary against a real SMTP
// server process. Killed between the change and the send (the mail server
// down, so nothing could leave), a restart sends every mail whose change
// was answered, once. Killed while sending, every mail still arrives, and
// only the one mail in flight may arrive twice — with the same Message-ID
// (the documented exception: accepted by the server, not yet marked sent).
func TestOutboxSurvivesSIGKILL(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			sink := smtpsink.Start(t)
			host, port, _ := strings.Cut(sink.Addr, ":")
			const timeout = 2 * time.Second // the lease is twice this
			cfg := importCrashConfig + fmt.Sprintf(`
smtp:
  host: %s
  port: %s
  from: noreply@latchkey.test
  tls: none
  timeout: %s
  retry_after: 100ms
`, host, port, timeout)
			s := setupServe(t, backend, cfg, "error")
			addr := s.addr
			var cmd *exec.Cmd
			start := func() {
				cmd = command(t, s.env, "serve", "--config", s.cfgPath)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				waitReady(t, addr, cmd)
			}
			kill := func() time.Time {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				_ = cmd.Wait()
				return time.Now()
			}
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Signal(syscall.SIGTERM)
					_ = cmd.Wait()
				}
			})
			arrived := func(to []string) func(smtpsink.Mail) bool {
				set := map[string]bool{}
				for _, a := range to {
					set[a] = true
				}
				return func(m smtpsink.Mail) bool { return set[m.To] }
			}

			// 1. Between the change and the send: the mail server is down,
			// the import is answered (its mails committed with it), kill.
			start()
			sink.Stop()
			first := invite(t, addr, 1, 30)
			kill()
			sink.Restart()
			start()
			sink.WaitFor(len(first), 60*time.Second, arrived(first))

			// 2. While sending: kill as soon as the first mails arrive.
			second := invite(t, addr, 2, 400)
			sink.WaitFor(1, 60*time.Second, arrived(second))
			killedAt := kill()
			before := len(sink.WaitFor(0, 0, arrived(second)))
			if before == 0 || before >= len(second) {
				t.Fatalf("%d of %d mails had arrived at the kill: the kill was not during the sending", before, len(second))
			}
			start()
			sink.WaitFor(len(second), 120*time.Second, arrived(second))

			// A mail the killed instance held is sent again only once its
			// lease has run out; a marker mail enqueued after that is
			// claimed after it (due later), so once the marker has arrived
			// every copy has too.
			time.Sleep(time.Until(killedAt.Add(2*timeout + time.Second)))
			marker := invite(t, addr, 3, 1)
			sink.WaitFor(1, 60*time.Second, arrived(marker))

			got := received(sink)
			for _, a := range first {
				if len(got[a]) != 1 {
					t.Errorf("killed before the send: %s received %d mails, want 1", a, len(got[a]))
				}
			}
			twice := 0
			for _, a := range second {
				ids := got[a]
				switch {
				case len(ids) == 0:
					t.Errorf("killed while sending: %s received nothing", a)
				case len(ids) > 1:
					twice++
					for _, id := range ids[1:] {
						if id != ids[0] {
							t.Errorf("%s received two mails with Message-IDs %q and %q", a, ids[0], id)
						}
					}
				}
			}
			if twice > 1 {
				t.Errorf("%d mails sent twice after the kill; only the one in flight may be", twice)
			}
			t.Logf("%s: %d of %d mails had arrived at the kill; %d sent twice (the one in flight)", backend, before, len(second), twice)
		})
	}
}
