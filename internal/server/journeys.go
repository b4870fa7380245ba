package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/journey"
	"github.com/latchkey/latchkey/internal/mail"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
	"github.com/latchkey/latchkey/web"
)

// newJourneys builds the self-service journeys and their mail outbox.
func (s *Server) newJourneys(cim *cimconfig.Service, serverKey []byte, rec *events.Recorder, mailTemplates *web.MailTemplates) (*journey.Service, error) {
	sealer, err := seal.New(serverKey, "mail")
	if err != nil {
		return nil, err
	}
	c := s.cfg.SMTP
	o := &mail.Outbox{Store: s.store, Sealer: sealer, From: c.From, Now: s.now, Log: s.log, Owner: mail.NewOwner(),
		SendTimeout: time.Duration(c.Timeout), RetryAfter: time.Duration(c.RetryAfter)}
	if c.Host != "" {
		o.Sender = &mail.SMTP{Host: c.Host, Port: c.Port, From: c.From, Username: c.Username, Password: c.Password,
			TLS: c.TLS, Timeout: time.Duration(c.Timeout)}
	} else {
		// Mails are kept (never lost) until smtp is configured.
		o.From = "noreply@localhost"
		// Debug, not a warning: most deployments start without the journeys,
		// and the start must stay quiet (one line on stderr for a failure).
		s.log.Debug("smtp.host is not set: mails of the identity journeys wait in the outbox until it is")
	}
	// Every attempt's outcome is a person event of the mail's person.
	o.Finished = func(ctx context.Context, m store.Mail, err error, final bool) {
		if m.PersonID == "" {
			return
		}
		e := events.Person{Type: events.PersonNotificationSent, PersonID: m.PersonID, AgentUser: "mailer",
			Context: map[string]string{"notification": m.Kind, "mail_id": m.ID}}
		if err != nil {
			e.Type = events.PersonNotificationFailed
			e.Context["final"] = map[bool]string{true: "true", false: "false"}[final]
		}
		if rerr := rec.RecordPerson(ctx, s.store, request.Facts{}, e); rerr != nil {
			s.log.Warn("record mail event", "err", rerr)
		}
	}
	o.Init()
	return &journey.Service{Store: s.store, Identity: s.identity, Config: cim, Outbox: o,
		Mails: &mail.Composer{Templates: mailTemplates, Custom: cim.Messages}, Hasher: s.secrets, Events: rec,
		Issuer: s.cfg.Issuer, Now: s.now, Log: s.log}, nil
}

// SendMail sends the outbox's mails until ctx ends (serve runs it beside
// Maintain; every instance may: leases keep each mail to one sender).
func (s *Server) SendMail(ctx context.Context) { s.journeys.Outbox.Run(ctx) }

// Journeys is the journeys service (tests).
func (s *Server) Journeys() *journey.Service { return s.journeys }

// JourneysFor builds the journeys alone, for a command that changes persons
// beside the running servers (latchkey person delete): the mails it
// enqueues in its transactions, the servers' outbox loops send. The store
// must belong to serverKey (store.ErrServerKeyMismatch otherwise): the
// mails are sealed under it.
func JourneysFor(ctx context.Context, cfg *config.Config, st store.Store, logger *slog.Logger, serverKey []byte) (*journey.Service, error) {
	h, err := token.NewHasher(serverKey)
	if err != nil {
		return nil, err
	}
	h.Stamped = cfg.StampedTokenKeys(st.Backend())
	if err := st.ClaimServerKey(ctx, h.Fingerprint()); err != nil {
		return nil, err
	}
	rec := events.NewRecorder()
	s := &Server{cfg: cfg, store: st, log: logger, secrets: h, now: time.Now}
	if s.identity, err = identity.New(st, rec, time.Now); err != nil {
		return nil, err
	}
	mailTemplates, err := web.LoadMail(cfg.TemplatesDir)
	if err != nil {
		return nil, err
	}
	return s.newJourneys(&cimconfig.Service{Store: st, Events: rec, Now: time.Now}, serverKey, rec, mailTemplates)
}
