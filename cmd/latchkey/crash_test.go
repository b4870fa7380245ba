package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const crashConfig = `
clients:
  - client_id: m2m
    client_secret: "m2m-secret-m2m-secret"
    token_endpoint_auth_method: client_secret_post
    grant_types: [client_credentials]
    scopes: [read]
  - client_id: auditor
    client_secret: "auditor-secret-auditor"
    grant_types: [client_credentials]
    scopes: [vendor_api_events]
`

// Events whose action was answered survive a SIGKILL: requests that got a
// token before the kill have their TOKEN_REQUEST_ACCESS_TOKEN_CREATED event
// after the restart (each request is marked by its User-Agent).
func TestAnsweredEventsSurviveSIGKILL(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			s := setupServe(t, backend, crashConfig, "warn")
			addr := s.addr
			start := func() *exec.Cmd {
				cmd := command(t, s.env, "serve", "--config", s.cfgPath)
				startServing(t, cmd, addr)
				return cmd
			}
			cmd := start()
			// Half the load is token requests, whose events commit with the
			// token; half is introspection, whose events are recorded outside
			// a transaction (on SQLite: the event log, indexed behind).
			const tokenForm = "grant_type=client_credentials&scope=read&client_id=m2m&client_secret=m2m-secret-m2m-secret"
			post := func(ctx context.Context, path, form, ua string) (*http.Response, error) {
				req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+path, strings.NewReader(form))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("User-Agent", ua)
				return http.DefaultClient.Do(req)
			}
			resp, err := post(context.Background(), "/oauth/token", tokenForm, "setup")
			if err != nil {
				t.Fatal(err)
			}
			var tok struct {
				AccessToken string `json:"access_token"`
			}
			err = json.NewDecoder(resp.Body).Decode(&tok)
			resp.Body.Close()
			if err != nil || tok.AccessToken == "" {
				t.Fatalf("token: %d %v", resp.StatusCode, err)
			}
			introspectForm := "client_id=m2m&client_secret=m2m-secret-m2m-secret&token=" + url.QueryEscape(tok.AccessToken)
			const created, introspected = "TOKEN_REQUEST_ACCESS_TOKEN_CREATED", "TOKEN_INTROSPECTION_SUCCESS"
			var mu sync.Mutex
			answered := map[string]string{} // user agent -> the event type its answer promises
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					path, form, typ := "/oauth/token", tokenForm, created
					if w%2 == 1 {
						path, form, typ = "/oauth/api/v2/token/introspect", introspectForm, introspected
					}
					for i := 0; ctx.Err() == nil; i++ {
						ua := fmt.Sprintf("crash-%d-%d", w, i)
						resp, err := post(ctx, path, form, ua)
						if err != nil {
							return // the server is gone
						}
						var body struct {
							Active *bool `json:"active"`
						}
						err = json.NewDecoder(resp.Body).Decode(&body)
						resp.Body.Close()
						if err != nil || resp.StatusCode != 200 {
							continue // cut off by the kill
						}
						if typ == introspected && (body.Active == nil || !*body.Active) {
							t.Errorf("introspection answered inactive")
							return
						}
						mu.Lock()
						answered[ua] = typ
						mu.Unlock()
					}
				}()
			}
			time.Sleep(1500 * time.Millisecond)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			cancel()
			wg.Wait()
			counts := map[string]int{}
			for _, typ := range answered {
				counts[typ]++
			}
			if counts[created] < 10 || counts[introspected] < 10 {
				t.Fatalf("only %v requests answered before the kill", counts)
			}
			cmd = start()
			defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
			found := map[string]string{}
			for _, typ := range []string{created, introspected} {
				for page := 0; ; page++ {
					q := url.Values{"event_type": {typ}, "size": {"1000"}, "page": {fmt.Sprint(page)}}
					req, _ := http.NewRequest("GET", "http://"+addr+"/oauth/api/v1/events?"+q.Encode(), nil)
					req.SetBasicAuth("auditor", "auditor-secret-auditor")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					var body struct {
						ResultSet []struct {
							UserAgent string `json:"user_agent"`
						} `json:"result_set"`
					}
					err = json.NewDecoder(resp.Body).Decode(&body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != 200 {
						t.Fatalf("search: %d %v", resp.StatusCode, err)
					}
					for _, r := range body.ResultSet {
						found[r.UserAgent] = typ
					}
					if len(body.ResultSet) < 1000 {
						break
					}
				}
			}
			missing := 0
			for ua, typ := range answered {
				if found[ua] != typ {
					missing++
				}
			}
			if missing > 0 {
				t.Errorf("%d of %d answered requests have no event after SIGKILL and restart", missing, len(answered))
			}
			// Nor the other way round: each stored token has exactly one
			// issuance event, also the tokens of requests cut off by the
			// kill, and no issuance event outlives a token that did not
			// commit (SQLite writes them ahead of the commit).
			events := 0
			for _, typ := range found {
				if typ == created {
					events++
				}
			}
			if tokens := storedAccessTokens(t, s.database, "m2m"); tokens != events {
				t.Errorf("%d access tokens stored and %d events of their issuance after SIGKILL and restart", tokens, events)
			}
			t.Logf("%s: %v answered requests before SIGKILL, %d events found after restart", backend, counts, len(answered)-missing)
		})
	}
}

// storedAccessTokens counts the access tokens of client in database (a
// latchkey database URL), read beside the running server.
func storedAccessTokens(t *testing.T, database, client string) int {
	t.Helper()
	driver, dsn := "pgx", database
	if path, ok := strings.CutPrefix(database, "sqlite:"); ok {
		driver, dsn = "sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM tokens WHERE kind = 'access' AND client_id = '` + client + `'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
