package events

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/internal/clientauth"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/lazyre"
	"github.com/latchkey/latchkey/internal/store"
)

// APIScope is the scope a client needs for the OAuth events API.
const APIScope = "vendor_api_events"

// Pager window (documented in api/openapi.yaml): at most MaxVisible page
// links, PagesBefore of them before the current page when there are enough.
const (
	MaxVisible  = 5
	PagesBefore = 2
	// countCap bounds total_results: counting stops there, so a search never
	// counts a whole multi-million-row table. Beyond it total_results is a lower bound.
	countCap    = 10_000
	defaultSize = 20
	maxSize     = 1000
)

// Search serves the two event search APIs.
type Search struct {
	Store   store.Store
	Auth    *clientauth.Authenticator
	Users   *clientauth.BasicUsers
	Issuer  string
	Enabled func() bool // events_api_enabled; the person events API answers as disabled when false
}

var typeRE = lazyre.New(`^[A-Z][A-Z0-9_]{0,99}$`)

// OAuthRecord is the spec's OAuth event record.
type OAuthRecord struct {
	EventIdentifier string `json:"event_identifier"`
	EventName       string `json:"event_name"`
	EventType       string `json:"event_type"`
	ClientID        string `json:"client_id"`
	AppName         string `json:"app_name"`
	TransactionID   string `json:"transaction_id"`
	UserID          string `json:"user_id"`
	ClientIP        string `json:"client_ip"`
	UserAgent       string `json:"user_agent"`
	EventAgentUser  string `json:"event_agent_user"`
	Occurred        int64  `json:"occurred"`
}

// Pagination is the spec's pager object.
type Pagination struct {
	TotalResults  int   `json:"total_results"`
	Offset        int   `json:"offset"`
	PageSize      int   `json:"page_size"`
	MaxVisible    int   `json:"max_visible"`
	PagesBefore   int   `json:"pages_before"`
	RangeStart    int   `json:"range_start"`
	RangeEnd      int   `json:"range_end"`
	FirstPage     bool  `json:"first_page"`
	LastPage      bool  `json:"last_page"`
	NumberOfPages int   `json:"number_of_pages"`
	PreviousPage  *int  `json:"previous_page"`
	NextPage      *int  `json:"next_page"`
	VisiblePages  []int `json:"visible_pages"`
}

// Paginate computes the pager of page (0-based) of size over total results,
// with n results on this page. Page numbers are 0-based like the page parameter.
func Paginate(page, size, total, n int) Pagination {
	p := Pagination{TotalResults: total, Offset: page * size, PageSize: size, MaxVisible: MaxVisible,
		PagesBefore: PagesBefore, VisiblePages: []int{}}
	p.NumberOfPages = (total + size - 1) / size
	if n > 0 {
		p.RangeStart, p.RangeEnd = p.Offset+1, p.Offset+n
	}
	p.FirstPage = page == 0
	p.LastPage = page >= p.NumberOfPages-1
	if page > 0 {
		prev := min(page-1, max(p.NumberOfPages-1, 0))
		p.PreviousPage = &prev
	}
	if page+1 < p.NumberOfPages {
		next := page + 1
		p.NextPage = &next
	}
	if p.NumberOfPages > 1 && page < p.NumberOfPages {
		start := max(0, page-PagesBefore)
		end := min(p.NumberOfPages-1, start+MaxVisible-1)
		start = max(0, end-MaxVisible+1)
		for i := start; i <= end; i++ {
			p.VisiblePages = append(p.VisiblePages, i)
		}
	}
	return p
}

type oauthPage struct {
	ResultSet  []OAuthRecord `json:"result_set"`
	Pagination Pagination    `json:"pagination"`
}

func bad(desc string) error {
	return &httpx.Error{Status: http.StatusBadRequest, Code: "invalid_request", Description: desc}
}

// OAuthEvents is GET /oauth/api/v1/events (also /api/v1/events).
func (s *Search) OAuthEvents(w http.ResponseWriter, r *http.Request) error {
	_, err := s.Auth.APICaller(r, s.Issuer+"/oauth/api/v1/events", APIScope, s.Store)
	switch {
	case errors.Is(err, clientauth.ErrUnauthenticated):
		return &httpx.Error{Status: http.StatusUnauthorized, Code: "invalid_client", Description: "Valid client credentials are required.",
			Header: map[string]string{"WWW-Authenticate": `Basic realm="latchkey", Bearer realm="latchkey"`}, Cause: err}
	case errors.Is(err, clientauth.ErrThrottled):
		retry, _ := clientauth.RetryAfter(err)
		return httpx.TooManyRequests("too_many_attempts", "Too many failed client authentications. Retry later.", retry)
	case errors.Is(err, clientauth.ErrForbidden):
		return &httpx.Error{Status: http.StatusForbidden, Code: "insufficient_scope", Description: "The client is not allowed the scope " + APIScope + "."}
	case err != nil:
		return err
	}
	f, page, size, err := parseOAuthQuery(r)
	if err != nil {
		return err
	}
	offset := page * size
	events, total, err := s.Store.EventPage(r.Context(), f, offset, size, max(countCap, offset+size+1))
	if err != nil {
		return err
	}
	out := oauthPage{ResultSet: make([]OAuthRecord, len(events)), Pagination: Paginate(page, size, total, len(events))}
	for i, e := range events {
		out.ResultSet[i] = OAuthRecord{EventIdentifier: e.ID, EventName: e.Name, EventType: e.Type, ClientID: e.ClientID,
			AppName: e.AppName, TransactionID: e.TransactionID, UserID: e.UserID, ClientIP: e.ClientIP, UserAgent: e.UserAgent,
			EventAgentUser: e.AgentUser, Occurred: e.Occurred.UnixMilli()}
	}
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func parseOAuthQuery(r *http.Request) (store.EventFilter, int, int, error) {
	q := r.URL.Query()
	f := store.EventFilter{Kind: store.EventOAuth}
	single := func(name string) (string, error) {
		if len(q[name]) > 1 {
			return "", bad("The parameter " + name + " is repeated.")
		}
		v := q.Get(name)
		if len(v) > 255 {
			return "", bad("The parameter " + name + " is too long.")
		}
		return v, nil
	}
	integer := func(name string, def, lo, hi int64) (int64, error) {
		v, err := single(name)
		if err != nil || v == "" {
			return def, err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return 0, bad("The parameter " + name + " must be an integer from " + strconv.FormatInt(lo, 10) + " to " + strconv.FormatInt(hi, 10) + ".")
		}
		return n, nil
	}
	page, err := integer("page", 0, 0, 1_000_000)
	if err != nil {
		return f, 0, 0, err
	}
	size, err := integer("size", defaultSize, 1, maxSize)
	if err != nil {
		return f, 0, 0, err
	}
	for name, dst := range map[string]*string{"user_id": &f.UserID, "client_id": &f.ClientID, "transaction_id": &f.TransactionID} {
		if *dst, err = single(name); err != nil {
			return f, 0, 0, err
		}
	}
	for name, dst := range map[string]*[]string{"event_type": &f.Types, "exclude_event_type": &f.ExcludeTypes} {
		if len(q[name]) > 50 {
			return f, 0, 0, bad("Too many " + name + " values.")
		}
		for _, v := range q[name] {
			if !typeRE.MatchString(v) {
				return f, 0, 0, bad("The parameter " + name + " must be upper case with underscores.")
			}
			*dst = append(*dst, v)
		}
	}
	const maxMillis = 1<<53 - 1
	start, err := integer("start_date", -1, 0, maxMillis)
	if err != nil {
		return f, 0, 0, err
	}
	end, err := integer("end_date", -1, 0, maxMillis)
	if err != nil {
		return f, 0, 0, err
	}
	if start >= 0 {
		f.From = time.UnixMilli(start)
	}
	if end >= 0 {
		f.To = time.UnixMilli(end)
	}
	if v, err := single("end_date_exclusive"); err != nil {
		return f, 0, 0, err
	} else if v != "" {
		if f.ToExclusive, err = strconv.ParseBool(v); err != nil {
			return f, 0, 0, bad("The parameter end_date_exclusive must be true or false.")
		}
	}
	if start >= 0 && end >= 0 && end < start {
		return f, 0, 0, bad("end_date is before start_date.")
	}
	return f, int(page), int(size), nil
}
