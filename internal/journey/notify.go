package journey

import (
	"context"
	"errors"

	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/mail"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

// The notifications of changes made outside the hosted pages: the import
// API and the deletion of a person. Each is written through the caller's
// transaction, so the mail commits with the change or not at all.

// Invite mails an invitation link to an INVITED person through tx.
func (s *Service) Invite(ctx context.Context, tx store.Store, f request.Facts, p store.Person) error {
	st, err := s.Settings(ctx)
	if err != nil {
		return err
	}
	if p.Status != identity.StatusInvited || !st.Notify("invitation") || mail.CheckAddress(p.Email) != nil {
		return nil
	}
	err = s.sendActivation(ctx, tx, f, st, p, p.Profile.PreferredLocale, "", store.PersonTokenInvitation)
	if errors.Is(err, errNotOwed) {
		return nil
	}
	return err
}

// Imported mails what a person the import API wrote is owed, through st
// (the person's savepoint): an invitation link when the person is now
// INVITED and was not before (created, or an update to INVITED), and the
// welcome.on_api_enabled mail to a new person who may sign in. A person
// without a mailable address gets none (the import does not fail for it).
func (s *Service) Imported(ctx context.Context, st store.Store, f request.Facts, p store.Person, created bool, oldStatus string) error {
	if mail.CheckAddress(p.Email) != nil {
		return nil
	}
	if p.Status == identity.StatusInvited && (created || oldStatus != identity.StatusInvited) {
		return s.Invite(ctx, st, f, p)
	}
	if !created || !identity.MaySignIn(p.Status) {
		return nil
	}
	set, err := s.Settings(ctx)
	if err != nil || !set.Notify("welcome_api") {
		return err
	}
	return s.enqueue(ctx, st, "welcome", p.Profile.PreferredLocale, p, mail.Data{})
}

// AccountRemoved mails the account_removed notification to p through tx,
// the transaction that deletes p, when the switch is on. p is the person
// as read in that transaction before the row goes (the address is gone
// after). Every deletion calls it: identity.Service.OnDelete is set to it
// (the server, latchkey person delete), and an API that deletes persons
// calls the same.
func (s *Service) AccountRemoved(ctx context.Context, tx store.Store, p store.Person) error {
	st, err := s.Settings(ctx)
	if err != nil || !st.Notify("account_removed") || mail.CheckAddress(p.Email) != nil {
		return err
	}
	return s.enqueue(ctx, tx, "account_removed", p.Profile.PreferredLocale, p, mail.Data{})
}
