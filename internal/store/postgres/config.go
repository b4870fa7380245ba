package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"
)

// pgconnConfig parses dsn without echoing it: a DSN can hold a password.
func pgconnConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: the database URL cannot be parsed")
	}
	return cfg, nil
}
