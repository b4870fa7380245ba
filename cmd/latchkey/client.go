package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/latchkey/latchkey/internal/admin"
	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/backend"
	"github.com/latchkey/latchkey/internal/token"
)

// clientCmd is "latchkey client create|list|show|delete|rotate-secret".
// list and show read beside running servers (SQLite too); the writes go
// through the admin rules (internal/admin) on PostgreSQL beside running
// servers, which see them at once (the client generation), and on SQLite
// with the server stopped: a running server's admin API does it there.
func clientCmd(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New(`client: want "client create|list|show|delete|rotate-secret"`)}
	}
	verb := args[0]
	fs := flags("client " + verb)
	path := fs.String("config", "", "YAML config `file`")
	// serve --demo's clients live in that process only (they are added to
	// its config, never stored): --demo adds them here the same way.
	var demo *bool
	if verb == "list" || verb == "show" {
		demo = fs.Bool("demo", false, "also the clients serve --demo adds (their secrets are the running server's)")
	}
	switch verb {
	case "list":
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		return clientList(ctx, *path, *demo, stdout)
	case "show", "delete", "rotate-secret":
		id, err := parseOneArg(fs, args[1:], "the CLIENT_ID")
		if err != nil {
			return err
		}
		if verb == "show" {
			return clientShow(ctx, *path, *demo, id, stdout)
		}
		return clientWrite(ctx, *path, stdout, func(svc *admin.Service, a admin.Actor) error {
			if verb == "delete" {
				r, err := svc.DeleteClient(ctx, a, id, 0)
				if err != nil {
					return clientErr(err, id)
				}
				fmt.Fprintf(stdout, "deleted client %s: revoked %d grant(s) and %d token(s)\n", id, r.Grants, r.Tokens)
				return nil
			}
			_, secret, err := svc.RotateSecret(ctx, a, id, 0)
			if err != nil {
				return clientErr(err, id)
			}
			fmt.Fprintf(stdout, "new client_secret of %s (shown once; the old one no longer works):\n%s\n", id, secret)
			return nil
		})
	case "create":
		return clientCreate(ctx, fs, path, args[1:], stdin, stdout)
	}
	return usageError{fmt.Errorf("client: unknown subcommand %q (want create, list, show, delete or rotate-secret)", verb)}
}

// listFlag is a comma-separated list flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// clientCreate is "client create [--file F|-] [--id ID] [--name N]
// [--auth-method M] [--grant-types a,b] [--scopes a,b] [--redirect-uris a,b]":
// the body of POST /api/v1/clients from a file (or stdin), and flags for
// the common members on top.
func clientCreate(ctx context.Context, fs *flag.FlagSet, path *string, args []string, stdin io.Reader, stdout io.Writer) error {
	file := fs.String("file", "", "JSON `file` of the client, as POST /api/v1/clients takes it (- for stdin)")
	id := fs.String("id", "", "client_id (default: generated)")
	name := fs.String("name", "", "name")
	method := fs.String("auth-method", "", "token_endpoint_auth_method")
	var grants, scopes, redirects listFlag
	fs.Var(&grants, "grant-types", "grant_types, comma-separated")
	fs.Var(&scopes, "scopes", "scopes, comma-separated")
	fs.Var(&redirects, "redirect-uris", "redirect_uris, comma-separated")
	if err := parse(fs, args); err != nil {
		return err
	}
	var in admin.ClientInput
	if *file != "" {
		var r io.Reader = stdin
		if *file != "-" {
			f, err := os.Open(*file)
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		dec := json.NewDecoder(io.LimitReader(r, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return fmt.Errorf("client create: %s: %w", *file, err)
		}
	}
	for dst, v := range map[*string]string{&in.ClientID: *id, &in.Name: *name, &in.TokenEndpointAuthMethod: *method} {
		if v != "" {
			*dst = v
		}
	}
	for dst, v := range map[*[]string][]string{&in.GrantTypes: grants, &in.Scopes: scopes, &in.RedirectURIs: redirects} {
		if len(v) > 0 {
			*dst = v
		}
	}
	return clientWrite(ctx, *path, stdout, func(svc *admin.Service, a admin.Actor) error {
		c, secret, err := svc.CreateClient(ctx, a, in)
		if err != nil {
			return clientErr(err, in.ClientID)
		}
		fmt.Fprintf(stdout, "created client %s (%s, grant types %s, scopes %s)\n", c.ID, c.TokenEndpointAuthMethod,
			strings.Join(c.GrantTypes, " "), strings.Join(c.Scopes, " "))
		if secret != "" {
			fmt.Fprintf(stdout, "client_secret (shown once):\n%s\n", secret)
		}
		return nil
	})
}

// clientErr says what a refused change means, naming the member.
func clientErr(err error, id string) error {
	var ie *admin.InvalidError
	switch {
	case errors.As(err, &ie) && strings.HasPrefix(ie.Msg, ie.Field):
		return ie
	case errors.As(err, &ie):
		return fmt.Errorf("%s: %s", ie.Field, ie.Msg)
	case errors.Is(err, admin.ErrNotFound):
		return fmt.Errorf("no client with id %q", id)
	case errors.Is(err, admin.ErrConflict):
		return fmt.Errorf("client_id %q is taken", id)
	case errors.Is(err, admin.ErrReadOnly):
		return fmt.Errorf("client %q is defined in the config file: change it there", id)
	}
	return err
}

// readService is the admin rules over a store opened for reading (beside a
// running server), with the config file's clients in front, and with demo
// the clients serve --demo adds.
func readService(ctx context.Context, path string, demo bool) (*admin.Service, func(), error) {
	cfg, err := config.Load(path, os.Environ())
	if err != nil {
		return nil, nil, err
	}
	if demo {
		if err := addDemoClients(cfg, ""); err != nil {
			return nil, nil, err
		}
	}
	st, err := backend.OpenReadOnly(ctx, cfg.Database)
	if err != nil {
		return nil, nil, fmt.Errorf("database: %w", err)
	}
	statics, err := fileClients(cfg, nil)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return &admin.Service{Store: client.NewStatic(st, statics)}, func() { st.Close() }, nil
}

// fileClients are the config file's clients as stored clients; with a
// hasher their secrets are hashed (a write may not need them).
func fileClients(cfg *config.Config, h *token.Hasher) ([]store.Client, error) {
	out := make([]store.Client, 0, len(cfg.Clients))
	for _, c := range cfg.Clients {
		r, err := c.Registration()
		if err != nil {
			return nil, fmt.Errorf("client %s: %w", c.ClientID, err)
		}
		out = append(out, r.Stored(func(secret string) []byte {
			if h == nil {
				return nil
			}
			return h.Hash(token.LabelClientSecret, secret)
		}))
	}
	return out, nil
}

func clientList(ctx context.Context, path string, demo bool, stdout io.Writer) error {
	svc, done, err := readService(ctx, path, demo)
	if err != nil {
		return err
	}
	defer done()
	cs, _, err := svc.ListClients(ctx, 0, 1<<31-1)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT_ID\tSOURCE\tAUTH METHOD\tGRANT TYPES\tSCOPES\tNAME")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Source, c.TokenEndpointAuthMethod, strings.Join(c.GrantTypes, ","),
			strings.Join(c.Scopes, ","), c.Name)
	}
	return tw.Flush()
}

func clientShow(ctx context.Context, path string, demo bool, id string, stdout io.Writer) error {
	svc, done, err := readService(ctx, path, demo)
	if err != nil {
		return err
	}
	defer done()
	c, err := svc.GetClient(ctx, id)
	if err != nil {
		return clientErr(err, id)
	}
	b, err := json.MarshalIndent(admin.View(c, ""), "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// clientWrite opens the store for writing, with the server key (the
// secrets' hashes are keyed with it), and runs fn with the admin rules.
func clientWrite(ctx context.Context, path string, stdout io.Writer, fn func(*admin.Service, admin.Actor) error) error {
	cfg, err := config.Load(path, os.Environ())
	if err != nil {
		return err
	}
	key, err := os.ReadFile(cfg.SecretKeyFile)
	if err != nil {
		return fmt.Errorf("secret key file: %w (client secrets are hashed with the server key)", err)
	}
	h, err := token.NewHasher(key)
	if err != nil {
		return fmt.Errorf("secret key file %s: %w", cfg.SecretKeyFile, err)
	}
	st, err := openStore(ctx, cfg, "stop latchkey serve first, or use the running server's admin API: /api/v1/clients")
	if err != nil {
		return err
	}
	defer st.Close()
	if err := claimServerKey(ctx, st, cfg, key); err != nil {
		return err
	}
	statics, err := fileClients(cfg, h)
	if err != nil {
		return err
	}
	rec := events.NewRecorder()
	// The server fetches a stored client's jwks_uri through the outbound
	// guard: the CLI refuses what the admin API does, with the same
	// outbound.allow, rather than store a client that cannot authenticate.
	ob, err := outbound.New(outbound.Options{Allow: cfg.Outbound.Allow})
	if err != nil {
		return err
	}
	svc := &admin.Service{Store: client.NewStatic(st, statics), Secrets: h, Events: rec, Now: time.Now, Outbound: ob}
	return fn(svc, admin.Actor{Name: cliAgent()})
}
