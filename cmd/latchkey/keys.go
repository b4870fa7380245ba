package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/signing"
	"github.com/latchkey/latchkey/internal/store/backend"
	"github.com/latchkey/latchkey/internal/token"
)

// keysCmd is "latchkey keys list|rotate [--config FILE]".
func keysCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New(`keys: want "keys list" or "keys rotate"`)}
	}
	verb := args[0]
	if verb != "list" && verb != "rotate" {
		return usageError{fmt.Errorf("keys: unknown subcommand %q (want list or rotate)", verb)}
	}
	fs := flags("keys " + verb)
	path := fs.String("config", "", "YAML config `file`")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	cfg, err := config.Load(*path, os.Environ())
	if err != nil {
		return err
	}
	if verb == "list" {
		return keysList(ctx, cfg, stdout)
	}
	return keysRotate(ctx, cfg, stdout)
}

// keysList prints every stored key: dates and state, no key material. It
// reads beside running servers (SQLite too) and needs no server key.
func keysList(ctx context.Context, cfg *config.Config, stdout io.Writer) error {
	st, err := backend.OpenReadOnly(ctx, cfg.Database)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer st.Close()
	infos, err := signing.ListKeys(ctx, st, time.Now())
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		fmt.Fprintln(stdout, "no signing keys yet: latchkey serve creates the first at its first start")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KID\tALG\tSTATE\tGENERATION\tPUBLISHED\tSIGNS FROM\tRETIRES\tLEAVES JWKS")
	for _, in := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", in.KID, in.Algorithm, in.State, in.Generation,
			date(in.PublishAt), date(in.SignFrom), date(in.RetireAt), date(in.ExpireAt))
	}
	return tw.Flush()
}

// date is t in UTC to the second, or "-" for none.
func date(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// keysRotate adds a signing key now: published at once, signing after
// oidc.key_publish_ahead. It writes the store, so on SQLite the server must
// be stopped (its running instances rotate on their own schedule); on
// PostgreSQL it runs beside the servers, which read the new key within 30 s.
func keysRotate(ctx context.Context, cfg *config.Config, stdout io.Writer) error {
	key, err := os.ReadFile(cfg.SecretKeyFile)
	if err != nil {
		return fmt.Errorf("secret key file: %w (rotate seals the new key with the server key the database was set up with)", err)
	}
	if len(key) < token.KeySize {
		return fmt.Errorf("secret key file %s: holds %d bytes, need at least %d", cfg.SecretKeyFile, len(key), token.KeySize)
	}
	st, err := openStore(ctx, cfg, "stop latchkey serve first: the running server rotates on its own schedule")
	if err != nil {
		return err
	}
	defer st.Close()
	// A key sealed under another server key would not open on any instance.
	if err := claimServerKey(ctx, st, cfg, key); err != nil {
		return err
	}
	sealer, err := seal.New(key, signing.SealPurpose)
	if err != nil {
		return err
	}
	o := cfg.OIDC
	keys, err := signing.New(st, sealer, signing.Config{Algorithm: o.SigningAlgorithm,
		RotationPeriod: time.Duration(o.KeyRotationPeriod), PublishAhead: time.Duration(o.KeyPublishAhead),
		MaxSignedLifetime: time.Duration(o.MaxSignedLifetime)}, time.Now)
	if err != nil {
		return err
	}
	in, err := keys.Rotate(ctx)
	if err != nil {
		return err
	}
	if in.State == signing.StateSigning {
		fmt.Fprintf(stdout, "created the first signing key %s (%s): it signs from now\n", in.KID, in.Algorithm)
		return nil
	}
	fmt.Fprintf(stdout, "new signing key %s (%s), generation %d: published now, signs from %s; "+
		"the key it replaces stays in the JWKS until %s\n",
		in.KID, in.Algorithm, in.Generation, date(in.SignFrom), date(in.SignFrom.Add(time.Duration(o.MaxSignedLifetime))))
	return nil
}
