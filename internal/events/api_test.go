package events_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

const auditorSecret = "auditor-secret-auditor"

func eventsConfig(enabled bool) *config.Config {
	return &config.Config{
		Clients: []config.Client{
			{ClientID: "auditor", ClientSecret: auditorSecret, GrantTypes: []string{"client_credentials"}, Scopes: []string{"vendor_api_events"}},
			{ClientID: "plain", ClientSecret: "plain-secret-plain-secret", GrantTypes: []string{"client_credentials"}, Scopes: []string{"read"}},
		},
		APIUsers: []config.APIUser{{Username: "admin", Password: "admin-password"}},
		Features: config.Features{EventsAPIEnabled: &enabled},
	}
}

// base is an hour ago, in whole seconds: no test depends on the date it runs.
var base = time.Now().UTC().Truncate(time.Second).Add(-time.Hour)

// seed appends n OAuth events, one millisecond apart, cycling through users,
// clients and types, plus person events by two actors.
func seed(t *testing.T, s *servertest.Server, n int) {
	t.Helper()
	var evs []store.Event
	for i := range n {
		evs = append(evs, store.Event{ID: fmt.Sprintf("00000000-0000-0000-0000-%012d", i), Kind: store.EventOAuth,
			Type: []string{"TOKEN_REQUEST_ACCESS_TOKEN_CREATED", "TOKEN_REVOKE_ACCESS_TOKEN_SUCCESS", "CONSENT_GIVEN"}[i%3],
			Name: "x", UserID: []string{"Alice", "bob"}[i%2], ClientID: []string{"c1", "c2", "c3", "c4"}[i%4],
			TransactionID: fmt.Sprintf("tx%d", i%5), Occurred: base.Add(time.Duration(i) * time.Millisecond)})
	}
	for i := range 3 {
		evs = append(evs, store.Event{ID: fmt.Sprintf("p-%d", i), Kind: store.EventPerson, Type: "person.PersonCreatedEvent",
			Name: "Person Created", PersonID: fmt.Sprintf("person-%d", i), AgentUser: []string{"admin", "admin", "other"}[i],
			Occurred: base.Add(time.Duration(i) * time.Second)})
	}
	if err := s.Store.AppendEvents(t.Context(), evs...); err != nil {
		t.Fatal(err)
	}
}

type page struct {
	status     int
	ResultSet  []map[string]any `json:"result_set"`
	Pagination map[string]any   `json:"pagination"`
	Error      string           `json:"error"`
}

func search(t *testing.T, s *servertest.Server, path, query, user, pass string) page {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+path+"?"+query, nil)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, body := openapicheck.Do(t, s.Client(), req)
	p := page{status: resp.StatusCode}
	_ = json.Unmarshal(body, &p)
	return p
}

func ids(p page) []int {
	out := []int{}
	for _, r := range p.ResultSet {
		var n int
		fmt.Sscanf(r["event_identifier"].(string)[24:], "%d", &n)
		out = append(out, n)
	}
	return out
}

func TestOAuthEventSearch(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, eventsConfig(true), servertest.Options{Backend: backend})
			seed(t, s, 30)
			q := func(query string) page { return search(t, s, "/oauth/api/v1/events", query, "auditor", auditorSecret) }
			ms := func(i int) string { return fmt.Sprint(base.Add(time.Duration(i) * time.Millisecond).UnixMilli()) }
			for name, tc := range map[string]struct {
				query string
				want  []int
			}{
				"latest first, default size":      {"", []int{29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10}},
				"size and page":                   {"size=4&page=2", []int{21, 20, 19, 18}},
				"a page past the end is empty":    {"size=10&page=3", []int{}},
				"user, case-insensitive":          {"user_id=ALICE&size=5", []int{28, 26, 24, 22, 20}},
				"client":                          {"client_id=c3&size=3", []int{26, 22, 18}},
				"event_type repeated is OR":       {"event_type=CONSENT_GIVEN&event_type=TOKEN_REVOKE_ACCESS_TOKEN_SUCCESS&size=4", []int{29, 28, 26, 25}},
				"exclude_event_type":              {"exclude_event_type=CONSENT_GIVEN&exclude_event_type=TOKEN_REVOKE_ACCESS_TOKEN_SUCCESS&size=3", []int{27, 24, 21}},
				"transaction":                     {"transaction_id=tx0", []int{25, 20, 15, 10, 5, 0}},
				"filters AND":                     {"user_id=bob&client_id=c2&size=3", []int{29, 25, 21}},
				"date range inclusive":            {"start_date=" + ms(3) + "&end_date=" + ms(5), []int{5, 4, 3}},
				"end_date_exclusive":              {"start_date=" + ms(3) + "&end_date=" + ms(5) + "&end_date_exclusive=true", []int{4, 3}},
				"client and type in a date range": {"client_id=c1&event_type=TOKEN_REQUEST_ACCESS_TOKEN_CREATED&start_date=" + ms(0) + "&end_date=" + ms(20), []int{12, 0}},
			} {
				t.Run(name, func(t *testing.T) {
					p := q(tc.query)
					if p.status != 200 || !cmp.Equal(ids(p), tc.want) {
						t.Errorf("got %d %v, want %v", p.status, ids(p), tc.want)
					}
				})
			}
			p := q("size=10&page=1")
			want := map[string]any{"total_results": float64(30), "offset": float64(10), "page_size": float64(10), "max_visible": float64(5),
				"pages_before": float64(2), "range_start": float64(11), "range_end": float64(20), "first_page": false, "last_page": false,
				"number_of_pages": float64(3), "previous_page": float64(0), "next_page": float64(2), "visible_pages": []any{float64(0), float64(1), float64(2)}}
			if d := cmp.Diff(want, p.Pagination); d != "" {
				t.Errorf("pagination of a middle page (-want +got):\n%s", d)
			}
			r := p.ResultSet[0]
			if r["event_type"] != "TOKEN_REVOKE_ACCESS_TOKEN_SUCCESS" || r["occurred"] != float64(base.Add(19*time.Millisecond).UnixMilli()) {
				t.Errorf("record %v", r)
			}
			if p := search(t, s, "/api/v1/events", "size=1", "auditor", auditorSecret); p.status != 200 || len(p.ResultSet) != 1 {
				t.Errorf("the sample's path: %d", p.status)
			}
		})
	}
}

func TestOAuthEventSearchRefusals(t *testing.T) {
	s := servertest.Start(t, eventsConfig(true), servertest.Options{})
	for name, tc := range map[string]struct {
		query, user, pass string
		status            int
		code              string
	}{
		"no credentials":         {"", "", "", 401, "invalid_client"},
		"client without scope":   {"", "plain", "plain-secret-plain-secret", 403, "insufficient_scope"},
		"size 0":                 {"size=0", "auditor", auditorSecret, 400, "invalid_request"},
		"size 1001":              {"size=1001", "auditor", auditorSecret, 400, "invalid_request"},
		"negative size":          {"size=-5", "auditor", auditorSecret, 400, "invalid_request"},
		"non-numeric size":       {"size=ten", "auditor", auditorSecret, 400, "invalid_request"},
		"negative page":          {"page=-1", "auditor", auditorSecret, 400, "invalid_request"},
		"lower-case event type":  {"event_type=consent_given", "auditor", auditorSecret, 400, "invalid_request"},
		"bad start_date":         {"start_date=yesterday", "auditor", auditorSecret, 400, "invalid_request"},
		"end before start":       {"start_date=10&end_date=5", "auditor", auditorSecret, 400, "invalid_request"},
		"bad end_date_exclusive": {"end_date_exclusive=maybe", "auditor", auditorSecret, 400, "invalid_request"},
		"repeated size":          {"size=1&size=2", "auditor", auditorSecret, 400, "invalid_request"},
	} {
		t.Run(name, func(t *testing.T) {
			p := search(t, s, "/oauth/api/v1/events", tc.query, tc.user, tc.pass)
			if p.status != tc.status || p.Error != tc.code {
				t.Errorf("got %d %q, want %d %s", p.status, p.Error, tc.status, tc.code)
			}
		})
	}
	if p := search(t, s, "/oauth/api/v1/events", "size=1000", "auditor", auditorSecret); p.status != 200 {
		t.Errorf("size 1000 is allowed: %d", p.status)
	}
}

func personSearch(t *testing.T, s *servertest.Server, query string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+"/api/events?"+query, nil)
	req.SetBasicAuth("admin", "admin-password")
	resp, body := openapicheck.Do(t, s.Client(), req)
	var out map[string]any
	_ = json.Unmarshal(body, &out)
	return resp.StatusCode, out
}

func TestPersonEvents(t *testing.T) {
	s := servertest.Start(t, eventsConfig(true), servertest.Options{})
	seed(t, s, 0)
	status, out := personSearch(t, s, "actor=admin&limit=1&offset=0")
	if status != 200 {
		t.Fatalf("%d %v", status, out)
	}
	want := map[string]any{"resultSet": []any{map[string]any{"event_identifier": "p-1", "person_id": "person-1",
		"occurred": float64(base.Add(time.Second).UnixMilli()), "event_type": "person.PersonCreatedEvent", "event_name": "Person Created",
		"client_ip": "", "user_agent": "", "partition_id": "", "event_agent_user": "admin"}}, "pagination": map[string]any{"offset": float64(0), "pageSize": float64(1), "totalResults": float64(2)}}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("person events (-want +got):\n%s", d)
	}
	if status, _ := personSearch(t, s, "actor=admin&limit=1000&offset=0"); status != 200 {
		t.Errorf("limit 1000: %d", status)
	}
	for name, tc := range map[string]struct {
		query string
		keys  []string
	}{
		"no actor":        {"limit=1&offset=0", []string{"invalidActor"}},
		"limit 0":         {"actor=a&limit=0&offset=0", []string{"invalidLimit"}},
		"limit 1001":      {"actor=a&limit=1001&offset=0", []string{"invalidLimit"}},
		"limit text":      {"actor=a&limit=x&offset=0", []string{"invalidLimit"}},
		"negative offset": {"actor=a&limit=1&offset=-1", []string{"invalidOffset"}},
		"all three":       {"offset=x", []string{"invalidActor", "invalidLimit", "invalidOffset"}},
	} {
		t.Run(name, func(t *testing.T) {
			status, out := personSearch(t, s, tc.query)
			if status != 400 || len(out) != len(tc.keys) {
				t.Fatalf("got %d %v, want 400 with %v", status, out, tc.keys)
			}
			codes := map[string]float64{"invalidActor": 4001, "invalidLimit": 4002, "invalidOffset": 4003}
			for _, k := range tc.keys {
				e, _ := out[k].(map[string]any)
				if e["error_code"] != codes[k] || e["error_message"] == "" {
					t.Errorf("%s: %v", k, out[k])
				}
			}
		})
	}
	req, _ := http.NewRequest("GET", s.URL+"/api/events?actor=a&limit=1&offset=0", nil)
	resp, _ := openapicheck.Do(t, s.Client(), req)
	if resp.StatusCode != 401 {
		t.Errorf("without credentials: %d", resp.StatusCode)
	}
	off := servertest.Start(t, eventsConfig(false), servertest.Options{})
	if status, out := personSearch(t, off, "actor=a&limit=1&offset=0"); status != 503 || out["error_code"] != float64(1001) {
		t.Errorf("events_api_enabled=false: %d %v", status, out)
	}
}
