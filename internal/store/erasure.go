package store

import (
	"slices"
	"strings"
)

// Erasure says which stored events are about an erased person and what
// is left of them: the person ID, the event's type, time, client and
// transaction; never an address (IP or email), a user agent or a flow
// context. Backends apply it to their events table (in SQL) and to events
// they hold elsewhere (SQLite's event log, in Go), with the same rule.
type Erasure struct {
	PersonID string
	Emails   []string // the person's email addresses, lower-cased
	// Spelled are the addresses as the profile spells them, where that is
	// not lower case (event_agent_user is compared as stored).
	Spelled []string
}

// NewErasure is the erasure of p: its ID and every email address of its
// profile.
func NewErasure(p Person) Erasure {
	e := Erasure{PersonID: p.ID}
	add := func(s string) {
		s = strings.TrimSpace(s)
		low := strings.ToLower(s)
		if low != "" && !slices.Contains(e.Emails, low) {
			e.Emails = append(e.Emails, low)
		}
		if s != low && !slices.Contains(e.Spelled, s) {
			e.Spelled = append(e.Spelled, s)
		}
	}
	add(p.Email)
	for _, c := range p.Profile.Emails {
		add(c.Value)
	}
	return e
}

// About reports whether ev is about the person: its user_id, person_id or
// event_agent_user is the person's ID or one of its email addresses.
func (x Erasure) About(ev Event) bool {
	if x.PersonID == "" {
		return false
	}
	return strings.EqualFold(ev.UserID, x.PersonID) || ev.AgentUser == x.PersonID ||
		x.isEmail(ev.UserID) || x.isEmail(ev.AgentUser)
}

// Scrub removes the personal data of an event About the person.
func (x Erasure) Scrub(ev *Event) {
	ev.ClientIP, ev.UserAgent, ev.Context = "", "", nil
	if x.isEmail(ev.UserID) {
		ev.UserID = x.PersonID
	}
	if x.isEmail(ev.PersonID) {
		ev.PersonID = x.PersonID
	}
	if x.isEmail(ev.AgentUser) {
		ev.AgentUser = x.PersonID
	}
}

func (x Erasure) isEmail(s string) bool {
	return s != "" && slices.Contains(x.Emails, strings.ToLower(s))
}
