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
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/backend"
	"github.com/latchkey/latchkey/internal/token"
)

// keysCmd is "latchkey keys list|rotate [--now]|retire KID [--config FILE]".
func keysCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New(`keys: want "keys list", "keys rotate" or "keys retire KID"`)}
	}
	verb := args[0]
	if verb != "list" && verb != "rotate" && verb != "retire" {
		return usageError{fmt.Errorf("keys: unknown subcommand %q (want list, rotate or retire)", verb)}
	}
	fs := flags("keys " + verb)
	path := fs.String("config", "", "YAML config `file`")
	var now *bool
	if verb == "rotate" {
		now = fs.Bool("now", false, "the new key signs at once, without oidc.key_publish_ahead (a compromised key)")
	}
	var kid string
	var err error
	if verb == "retire" {
		kid, err = parseOneArg(fs, args[1:], "the KID of the key to retire (latchkey keys list)")
	} else {
		err = parse(fs, args[1:])
	}
	if err != nil {
		return err
	}
	cfg, err := config.Load(*path, os.Environ())
	if err != nil {
		return err
	}
	switch verb {
	case "list":
		return keysList(ctx, cfg, stdout)
	case "retire":
		return keysRetire(ctx, cfg, kid, stdout)
	}
	return keysRotate(ctx, cfg, *now, stdout)
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

// openKeys opens the store for writing and the keys sealed under the
// server key. It writes the store, so on SQLite the server must be stopped;
// on PostgreSQL it runs beside the servers, which read the keys again
// within 30 s (5 s with oidc.key_publish_ahead: 0s).
func openKeys(ctx context.Context, cfg *config.Config) (*signing.Keys, func(), error) {
	key, err := os.ReadFile(cfg.SecretKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("secret key file%s: %w (the signing keys are sealed with the server key the database was set up with)",
			cfg.Origin("secret_key_file"), err)
	}
	if len(key) < token.KeySize {
		return nil, nil, fmt.Errorf("secret key file %s: holds %d bytes, need at least %d", cfg.SecretKeyFile, len(key), token.KeySize)
	}
	st, err := openStore(ctx, cfg, "stop latchkey serve first: a running SQLite server holds the database")
	if err != nil {
		return nil, nil, err
	}
	// A key sealed under another server key would not open on any instance.
	if err := claimServerKey(ctx, st, cfg, key); err != nil {
		st.Close()
		return nil, nil, err
	}
	sealer, err := seal.New(key, signing.SealPurpose)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	o := cfg.OIDC
	keys, err := signing.New(st, sealer, signing.Config{Algorithm: o.SigningAlgorithm,
		RotationPeriod: time.Duration(o.KeyRotationPeriod), PublishAhead: time.Duration(o.KeyPublishAhead),
		MaxSignedLifetime: time.Duration(o.MaxSignedLifetime)}, time.Now)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return keys, func() { st.Close() }, nil
}

// keysRotate adds a signing key now: published at once, signing after
// oidc.key_publish_ahead, or at once with --now (the emergency rotation).
func keysRotate(ctx context.Context, cfg *config.Config, now bool, stdout io.Writer) error {
	keys, done, err := openKeys(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	rotate := keys.Rotate
	if now {
		rotate = keys.RotateNow
	}
	in, err := rotate(ctx)
	if err != nil {
		return err
	}
	o := cfg.OIDC
	switch {
	case in.Generation == 1:
		fmt.Fprintf(stdout, "created the first signing key %s (%s): it signs from now\n", in.KID, in.Algorithm)
	case in.State == signing.StateSigning:
		fmt.Fprintf(stdout, "new signing key %s (%s), generation %d: published and signing now; the key it replaces "+
			"no longer signs and stays in the JWKS until %s, or until you retire it: latchkey keys retire KID\n",
			in.KID, in.Algorithm, in.Generation, date(in.SignFrom.Add(time.Duration(o.MaxSignedLifetime))))
	default:
		fmt.Fprintf(stdout, "new signing key %s (%s), generation %d: published now, signs from %s; "+
			"the key it replaces stays in the JWKS until %s\n",
			in.KID, in.Algorithm, in.Generation, date(in.SignFrom), date(in.SignFrom.Add(time.Duration(o.MaxSignedLifetime))))
	}
	return nil
}

// keysRetire takes a key out of the JWKS at once (a compromised key): it
// no longer verifies and never signs again. The key that signs is refused.
func keysRetire(ctx context.Context, cfg *config.Config, kid string, stdout io.Writer) error {
	keys, done, err := openKeys(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	switch err := keys.Retire(ctx, kid); {
	case errors.Is(err, signing.ErrSigningKeyInUse):
		return fmt.Errorf("keys retire: %s signs now, or is published to sign later, and no newer key signs yet: "+
			"run latchkey keys rotate --now first, then retire it (a key must always sign)", kid)
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("keys retire: no key %q in the JWKS (latchkey keys list)", kid)
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "retired signing key %s: out of the JWKS and no longer verifying. Running servers drop it "+
		"within 30 s; relying parties when their cached JWKS expires (Cache-Control max-age, at most 1 h)\n", kid)
	return nil
}
