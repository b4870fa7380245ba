package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/admin"
	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/store"
)

// personChangeCmd is "latchkey person block|unblock|delete EMAIL_OR_ID
// [--config FILE] [--partition P]". Blocking and deleting revoke every
// session, grant and token of the person in the transaction that changes
// the person (identity.SetStatus; admin.Service.ErasePerson, the erasure
// of the admin API).
func personChangeCmd(ctx context.Context, verb string, args []string, stdout io.Writer) error {
	fs := flags("person " + verb)
	path := fs.String("config", "", "YAML config `file`")
	partition := fs.String("partition", "", "persons `partition` of an email address (default: the default partition)")
	ref, err := parseOneArg(fs, args, "the person's EMAIL or ID")
	if err != nil {
		return err
	}
	cfg, err := config.Load(*path, os.Environ())
	if err != nil {
		return err
	}
	// The embedded store is locked to the serving process, whose in-memory
	// token cache must see every revocation.
	st, err := openStore(ctx, cfg, "stop latchkey serve first, or block through the import API")
	if err != nil {
		return err
	}
	defer st.Close()
	p, err := findPerson(ctx, st, ref, *partition)
	if err != nil {
		return err
	}
	svc, err := identity.New(st, events.NewRecorder(), time.Now)
	if err != nil {
		return err
	}
	agent := cliAgent()
	who := fmt.Sprintf("%s (id %s)", p.Email, p.ID)
	switch verb {
	case "block":
		r, err := svc.SetStatus(ctx, p.ID, identity.StatusBlocked, agent)
		if err != nil {
			return err
		}
		was := ""
		if p.Status == identity.StatusBlocked {
			was = " (was already blocked)"
		}
		fmt.Fprintf(stdout, "blocked %s%s: %s\n", who, was, revoked(r))
	case "unblock":
		switch {
		case identity.MaySignIn(p.Status):
			fmt.Fprintf(stdout, "%s is not blocked (status %s): nothing changed\n", who, p.Status)
			return nil
		case p.Status == identity.StatusInvited:
			return fmt.Errorf("%s is %s, not blocked: the invitation must be accepted", who, p.Status)
		}
		if _, err := svc.SetStatus(ctx, p.ID, identity.StatusActivated, agent); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "unblocked %s: status %s -> %s; tokens revoked by the block stay revoked\n",
			who, p.Status, identity.StatusActivated)
	case "delete":
		// The erasure of the admin API (docs/ADMIN.md): the events keep the
		// person's id and lose every personal datum; the account_removed
		// mail, when on, is written in the same transaction.
		removed, err := accountRemovedMail(ctx, cfg, st)
		if err != nil {
			return err
		}
		adm := &admin.Service{Store: client.NewStatic(st, nil), Events: events.NewRecorder(), Now: time.Now, AccountRemoved: removed}
		r, err := adm.ErasePerson(ctx, admin.Actor{Name: agent}, p.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted %s: %s; the events keep the id, no personal data\n", who, revoked(r))
	}
	return nil
}

// parseOneArg parses the flags and the one positional argument (what names
// it in the usage error), which may come before, between or after them.
func parseOneArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	arg := ""
	for {
		if err := fs.Parse(args); err != nil {
			return "", parseError(fs, err)
		}
		if fs.NArg() == 0 {
			break
		}
		if arg != "" {
			return "", usageError{fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
		}
		arg, args = fs.Arg(0), fs.Args()[1:]
	}
	if arg == "" {
		return "", usageError{fmt.Errorf("%s: want %s", fs.Name(), what)}
	}
	return arg, nil
}

// findPerson finds a person by email address (within partition) or by ID.
func findPerson(ctx context.Context, st store.Store, ref, partition string) (store.Person, error) {
	var p store.Person
	var err error
	if strings.Contains(ref, "@") {
		p, err = st.GetPersonByEmail(ctx, partition, ref)
	} else {
		p, err = st.GetPerson(ctx, ref)
	}
	if errors.Is(err, store.ErrNotFound) {
		if strings.Contains(ref, "@") {
			return p, fmt.Errorf("no person with email %q in partition %q", ref, partition)
		}
		return p, fmt.Errorf("no person with id %q", ref)
	}
	return p, err
}

func revoked(r store.PersonRevocation) string {
	return fmt.Sprintf("revoked %d grant(s) and %d token(s), ended %d session(s)", r.Grants, r.Tokens, r.Sessions)
}

// cliAgent names the operator in the person events (event_agent_user).
func cliAgent() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}

// accountRemovedMail is what a deletion mails: the account_removed
// notification (journey.Service.AccountRemoved, in the deleting
// transaction) when the identity configuration switches it on; the
// servers' outbox loops send it. The mail is sealed with the server key,
// so the key file is read then (never created).
func accountRemovedMail(ctx context.Context, cfg *config.Config, st store.Store) (func(context.Context, store.Store, store.Person) error, error) {
	snap, err := (&cimconfig.Service{Store: st, Now: time.Now}).Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if n := snap.EmailNotifications; n == nil || n.AccountRemoved == nil || !*n.AccountRemoved {
		return nil, nil
	}
	key, err := os.ReadFile(cfg.SecretKeyFile)
	if err != nil {
		return nil, fmt.Errorf("secret key file: %w (the account_removed mail is on, and mails are sealed with the server key)", err)
	}
	j, err := server.JourneysFor(ctx, cfg, st, slog.New(slog.NewTextHandler(io.Discard, nil)), key)
	if errors.Is(err, store.ErrServerKeyMismatch) {
		return nil, errServerKeyMismatch(cfg.SecretKeyFile)
	}
	if err != nil {
		return nil, err
	}
	return j.AccountRemoved, nil
}
