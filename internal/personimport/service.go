package personimport

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/store"
)

// batchSize persons share one transaction: few commits (SQLite's fsync,
// PostgreSQL's round trips), short enough that the single SQLite writer is
// not held for long. Each person has its own savepoint inside it.
const batchSize = 200

// Service imports persons.
type Service struct {
	Store  store.Store
	Events *events.Recorder
	// TOTP seals step-up secrets; the person id is the associated data.
	TOTP *seal.Sealer
	// PRF is the PBKDF2 PRF of imported digests (config import.pbkdf2_prf).
	PRF string
	// IdPs lists the identity providers persons can be linked to: id (lower
	// case) -> type. Nil means only the built-in username and password.
	IdPs func(ctx context.Context) (map[string]string, error)
	Log  *slog.Logger
	Now  func() time.Time
	// Mails sends what an imported person is owed (journey.Service: the
	// invitation of an INVITED person, welcome.on_api_enabled) through the
	// person's savepoint; nil: no mails.
	Mails Mailer
}

// Mailer writes the mails of an imported person through st, the person's
// savepoint, and sends them once the import committed.
type Mailer interface {
	Imported(ctx context.Context, st store.Store, f request.Facts, p store.Person, created bool, oldStatus string) error
	Wake()
}

// Options are the request's context of an import.
type Options struct {
	Partition string
	Context   map[string]string // flow context parameters, recorded with the events
	Agent     string            // the API user
	Facts     request.Facts     // client_ip and user_agent of the events
}

// errFailed carries a person's failure out of its savepoint (rolling it back).
type errFailed struct{ f *Failure }

func (e errFailed) Error() string { return e.f.ErrorMessage }

// Import validates and writes persons, each atomically on its own. The error
// is for when nothing could be tried at all.
func (s *Service) Import(ctx context.Context, persons []Person, o Options) (Result, error) {
	idps := map[string]string{identity.PasswordIdPID: identity.PasswordIdPType}
	if s.IdPs != nil {
		more, err := s.IdPs(ctx)
		if err != nil {
			return Result{}, err
		}
		for id, typ := range more {
			idps[strings.ToLower(id)] = typ
		}
	}
	now := s.Now()
	outcome := make([]*Failure, len(persons)) // nil: imported
	var todo []candidate
	seen := make(map[string]bool, len(persons))
	for i, p := range persons {
		c, f := validate(p, s.PRF, idps, now)
		if f == nil && seen[c.ref] {
			f = fail(CodeUnknown, c.ref, "reference_id appears more than once in this request")
		}
		if f != nil {
			outcome[i] = f
			continue
		}
		seen[c.ref] = true
		c.index = i
		c.person.Partition = o.Partition
		for j := range c.links {
			c.links[j].Partition = o.Partition
		}
		todo = append(todo, c)
	}
	for len(todo) > 0 {
		batch := todo[:min(batchSize, len(todo))]
		todo = todo[len(batch):]
		s.writeBatch(ctx, batch, o, outcome)
	}
	if s.Mails != nil {
		s.Mails.Wake()
	}
	res := Result{SuccessfulReferenceIDs: []string{}, Failures: []Failure{}}
	for i, f := range outcome {
		if f != nil {
			res.Failures = append(res.Failures, *f)
		} else {
			res.SuccessfulReferenceIDs = append(res.SuccessfulReferenceIDs, canonicalRef(persons[i]))
		}
	}
	return res, nil
}

func canonicalRef(p Person) string { return uuid.MustParse(p.Profile.ReferenceID).String() }

// writeBatch writes a batch in one transaction. A person that fails rolls
// back its own savepoint only; if the transaction itself fails, no person
// of the batch was imported and each gets a referenced failure.
func (s *Service) writeBatch(ctx context.Context, batch []candidate, o Options, outcome []*Failure) {
	failed := map[int]*Failure{}
	// A batch writes hundreds of persons: it should not share a commit (and
	// a savepoint journaling every page it changes) with small requests.
	err := s.Store.BulkTx(ctx, func(tx store.Store) error {
		clear(failed)
		for _, c := range batch {
			err := tx.Savepoint(ctx, func(sp store.Store) error { return s.writeOne(ctx, sp, c, o) })
			var ef errFailed
			switch {
			case err == nil:
			case errors.As(err, &ef):
				failed[c.index] = ef.f
			case ctx.Err() != nil:
				return err
			default:
				failed[c.index] = s.referenced(c.ref, err)
			}
		}
		return nil
	})
	for _, c := range batch {
		switch {
		case err != nil:
			outcome[c.index] = s.referenced(c.ref, err)
		case failed[c.index] != nil:
			outcome[c.index] = failed[c.index]
		}
	}
}

// referenced logs an unexpected error under a fresh reference id and
// returns the failure that names it (the error itself stays in the log).
func (s *Service) referenced(ref string, err error) *Failure {
	id := uuid.NewString()
	s.Log.Error("person import failed", "reference", id, "person", ref, "err", err)
	return fail(CodeReferenced, ref, "the import failed; give reference %s to the operator", id)
}

// writeOne creates or updates one person with its links and its event.
func (s *Service) writeOne(ctx context.Context, st store.Store, c candidate, o Options) error {
	p := c.person
	if c.totp != nil {
		p.TOTPSecret = s.TOTP.Seal(c.totp, []byte(p.ID))
	}
	old, err := st.GetPerson(ctx, p.ID)
	created := errors.Is(err, store.ErrNotFound)
	typ := events.PersonCreated
	switch {
	case errors.Is(err, store.ErrNotFound):
		err = st.CreatePerson(ctx, p)
		if errors.Is(err, store.ErrConflict) {
			return errFailed{fail(CodeInvalidEmail, c.ref, "email address %q is already used by another account", clip(p.Email))}
		}
	case err != nil:
		return err
	case old.Partition != p.Partition:
		return errFailed{fail(CodeUnknown, c.ref, "reference_id belongs to an account of another partition")}
	default:
		typ = events.PersonUpdated
		// An update replaces the profile and status; credentials that the
		// request does not carry are kept.
		if !c.hasHash {
			p.PasswordHash = old.PasswordHash
		}
		if p.TOTPSecret == nil {
			p.TOTPSecret = old.TOTPSecret
		}
		if p.Status == identity.StatusInvited && p.PasswordHash != "" {
			return errFailed{fail(CodeInvitedPassword, c.ref, "the account has a password and cannot be INVITED")}
		}
		err = st.UpdatePerson(ctx, p.ID, func(store.Person) (store.Person, error) { return p, nil })
		if errors.Is(err, store.ErrConflict) {
			return errFailed{fail(CodeInvalidEmail, c.ref, "email address %q is already used by another account", clip(p.Email))}
		}
		if err == nil {
			// An import that blocks a person ends their sessions and
			// tokens in this person's savepoint: with the update, or not at all.
			_, err = identity.EnforceStatus(ctx, st, p.ID, p.Status, s.Now().UTC())
		}
	}
	if err != nil {
		return err
	}
	for _, l := range c.links {
		if err := st.LinkIdentity(ctx, l); errors.Is(err, store.ErrConflict) {
			return errFailed{fail(CodeIdentityCoupled, c.ref, "external identity %q of provider %s is coupled with another account", clip(l.ExternalID), l.IdPID)}
		} else if err != nil {
			return err
		}
	}
	if s.Mails != nil {
		if err := s.Mails.Imported(ctx, st, o.Facts, p, created, old.Status); err != nil {
			return err
		}
	}
	return s.Events.RecordPerson(ctx, st, o.Facts, events.Person{Type: typ, PersonID: p.ID, AgentUser: o.Agent,
		Partition: o.Partition, Context: o.Context})
}
