package events

import (
	"context"
	"net/http"
	"strconv"
	"unicode"

	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

// Person is a person event about to be recorded.
type Person struct {
	Type      string
	PersonID  string
	AgentUser string            // the actor: an API user, an administrator, "config"
	Partition string            // the persons partition; "" is the default one
	Context   map[string]string // flow context parameters (X-Vendor-Flow-Context-Params)
}

// RecordPerson appends a person event through st (possibly a transaction).
func (rec *Recorder) RecordPerson(ctx context.Context, st Appender, f request.Facts, e Person) error {
	name := personNames[e.Type]
	if name == "" {
		name = e.Type
	}
	ev := store.Event{ID: rec.NewID(), Kind: store.EventPerson, Type: e.Type, Name: name, PersonID: e.PersonID,
		UserID: e.PersonID, AgentUser: e.AgentUser, Partition: e.Partition, Context: e.Context, Occurred: rec.Now().UTC()}
	ev.ClientIP, ev.UserAgent = f.Addr, f.UserAgent
	return rec.append(ctx, st, f, ev)
}

// PersonRecord is the spec's person event record.
type PersonRecord struct {
	EventIdentifier string            `json:"event_identifier"`
	PersonID        string            `json:"person_id"`
	Occurred        int64             `json:"occurred"`
	EventType       string            `json:"event_type"`
	EventName       string            `json:"event_name"`
	ClientIP        string            `json:"client_ip"`
	UserAgent       string            `json:"user_agent"`
	PartitionID     string            `json:"partition_id"`
	EventAgentUser  string            `json:"event_agent_user"`
	FlowContext     map[string]string `json:"flow_context,omitempty"`
}

type personPage struct {
	ResultSet  []PersonRecord `json:"resultSet"`
	Pagination struct {
		Offset       int `json:"offset"`
		PageSize     int `json:"pageSize"`
		TotalResults int `json:"totalResults"`
	} `json:"pagination"`
}

type personError struct {
	ErrorCode    int    `json:"error_code"`
	ErrorMessage string `json:"error_message"`
}

// PersonEvents is GET /api/events (HTTP basic): the events an actor triggered.
func (s *Search) PersonEvents(w http.ResponseWriter, r *http.Request) error {
	if _, ok, err := s.Users.Guard(w, r); !ok {
		return err
	}
	if s.Enabled != nil && !s.Enabled() {
		httpx.WriteJSON(w, http.StatusServiceUnavailable, personError{ErrorCode: 1001, ErrorMessage: "Requested feature not available."})
		return nil
	}
	q := r.URL.Query()
	errs := map[string]personError{}
	actor := q.Get("actor")
	if len(q["actor"]) != 1 || actor == "" || len(actor) > 255 || !printable(actor) {
		errs["invalidActor"] = personError{4001, "No or malformed actor."}
	}
	limit, err := strconv.Atoi(q.Get("limit"))
	if len(q["limit"]) != 1 || err != nil || limit < 1 || limit > maxSize {
		errs["invalidLimit"] = personError{4002, "Limit must be a number between 1 and 1000."}
	}
	offset, err := strconv.Atoi(q.Get("offset"))
	if len(q["offset"]) != 1 || err != nil || offset < 0 || offset > 100_000_000 {
		errs["invalidOffset"] = personError{4003, "Offset must be at least 0."}
	}
	if len(errs) > 0 {
		httpx.WriteJSON(w, http.StatusBadRequest, errs)
		return nil
	}
	f := store.EventFilter{Kind: store.EventPerson, AgentUser: actor}
	evs, total, err := s.Store.EventPage(r.Context(), f, offset, limit, max(countCap, offset+limit+1))
	if err != nil {
		return err
	}
	var out personPage
	out.ResultSet = make([]PersonRecord, len(evs))
	for i, e := range evs {
		out.ResultSet[i] = PersonRecord{EventIdentifier: e.ID, PersonID: e.PersonID, Occurred: e.Occurred.UnixMilli(),
			EventType: e.Type, EventName: e.Name, ClientIP: e.ClientIP, UserAgent: e.UserAgent,
			PartitionID: e.Partition, EventAgentUser: e.AgentUser, FlowContext: e.Context}
	}
	out.Pagination.Offset, out.Pagination.PageSize, out.Pagination.TotalResults = offset, limit, total
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Person events of the self-service journeys (issue 25).
const (
	PersonActivated              = "person.PersonActivatedEvent"
	PersonInvitationSent         = "person.PersonInvitationSentEvent"
	PersonPasswordResetRequested = "person.PasswordResetRequestedEvent"
	PersonPasswordReset          = "person.PasswordResetEvent"
	PersonNotificationSent       = "person.NotificationSentEvent"
	PersonNotificationFailed     = "person.NotificationFailedEvent"
)

// Person events of the admin API (issue 21, docs/ADMIN.md).
const (
	PersonBlocked       = "person.PersonBlockedEvent"
	PersonUnblocked     = "person.PersonUnblockedEvent"
	PersonErased        = "person.PersonErasedEvent" // the right to erasure: the person ID is all the events keep
	PersonSessionsEnded = "person.PersonSessionsEndedEvent"
)

func init() {
	for typ, name := range map[string]string{PersonBlocked: "Person Blocked", PersonUnblocked: "Person Unblocked",
		PersonErased: "Person Erased", PersonSessionsEnded: "Person Sessions Ended"} {
		personNames[typ] = name
	}
	for typ, name := range map[string]string{PersonActivated: "Person Activated", PersonInvitationSent: "Invitation Sent",
		PersonPasswordResetRequested: "Password Reset Requested", PersonPasswordReset: "Password Reset",
		PersonNotificationSent: "Notification Sent", PersonNotificationFailed: "Notification Failed"} {
		personNames[typ] = name
	}
}
