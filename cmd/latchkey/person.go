package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/personimport"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/backend"
)

// personView is what an operator sees of a person: no credential material,
// only whether there is one and of which kind. Profile is in the import's
// shape, as the admin API reads it (personimport.ProfileOf): names,
// addresses and custom attributes are there.
type personView struct {
	ID         string               `json:"id"`
	Partition  string               `json:"partition_id"`
	Email      string               `json:"email"`
	Status     string               `json:"status"`
	Password   string               `json:"password"` // none | argon2id | pbkdf2-sha256 | ...
	TOTP       bool                 `json:"totp"`
	Profile    personimport.Profile `json:"profile"`
	Identities []identityView       `json:"identities"`
	Created    string               `json:"created"`
	Updated    string               `json:"updated"`
}

type identityView struct {
	IdPID      string `json:"idp_id"`
	ExternalID string `json:"external_person_id"`
	// Upstream is what the identity provider sent that no mapping took.
	Upstream map[string]string `json:"upstream_attributes,omitempty"`
}

// personCmd is "latchkey person show|block|unblock|delete ...".
func personCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New(`person: want "person show|block|unblock|delete"`)}
	}
	switch args[0] {
	case "show":
	case "block", "unblock", "delete":
		return personChangeCmd(ctx, args[0], args[1:], stdout)
	default:
		return usageError{fmt.Errorf(`person: unknown subcommand %q (want show, block, unblock or delete)`, args[0])}
	}
	fs := flags("person show")
	path := fs.String("config", "", "YAML config `file`")
	email := fs.String("email", "", "the person's email `address` (case-insensitive)")
	partition := fs.String("partition", "", "persons `partition` (default: the default partition)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *email == "" {
		return usageError{errors.New("person show: --email is required")}
	}
	cfg, err := config.Load(*path, os.Environ())
	if err != nil {
		return err
	}
	st, err := backend.OpenReadOnly(ctx, cfg.Database) // beside a running server
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer st.Close()
	p, err := st.GetPersonByEmail(ctx, *partition, *email)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no person with email %q in partition %q", *email, *partition)
	}
	if err != nil {
		return err
	}
	links, err := st.ListIdentities(ctx, p.ID)
	if err != nil {
		return err
	}
	v := personView{ID: p.ID, Partition: p.Partition, Email: p.Email, Status: p.Status, Password: hashKind(p.PasswordHash),
		TOTP: p.TOTPSecret != nil, Profile: personimport.ProfileOf(p), Identities: []identityView{},
		Created: p.CreatedAt.Format("2006-01-02T15:04:05Z07:00"),
		Updated: p.UpdatedAt.Format("2006-01-02T15:04:05Z07:00")}
	for _, l := range links {
		v.Identities = append(v.Identities, identityView{l.IdPID, l.ExternalID, l.Attributes})
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// hashKind names the algorithm of a PHC string ("$argon2id$..." -> argon2id).
func hashKind(phc string) string {
	if phc == "" {
		return "none"
	}
	parts := strings.SplitN(phc, "$", 3)
	if len(parts) < 3 || parts[1] == "" {
		return "unknown"
	}
	return parts[1]
}
