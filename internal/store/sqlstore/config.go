package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// GetConfigUnits returns every unit's body.
func (db *DB) GetConfigUnits(ctx context.Context) (map[string]string, error) {
	return db.configUnits(ctx, `SELECT name, body FROM config_units`)
}

func (db *DB) configUnits(ctx context.Context, q string, args ...any) (map[string]string, error) {
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, body string
		if err := rows.Scan(&name, &body); err != nil {
			return nil, err
		}
		out[name] = body
	}
	return out, rows.Err()
}

// UpdateConfigUnits locks the units by touching their rows first (a row
// lock on PostgreSQL, the writer on SQLite), then reads and writes them.
func (db *DB) UpdateConfigUnits(ctx context.Context, names []string, fn func(map[string]string) (map[string]string, error)) error {
	if len(names) == 0 {
		return nil
	}
	in := `(?` + strings.Repeat(", ?", len(names)-1) + `)`
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	return db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		res, err := tx.exec(ctx, `UPDATE config_units SET updated_at = updated_at WHERE name IN `+in, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if int(n) != len(names) {
			return fmt.Errorf("config unit among %v: %w", names, store.ErrNotFound)
		}
		old, err := tx.configUnits(ctx, `SELECT name, body FROM config_units WHERE name IN `+in, args...)
		if err != nil {
			return err
		}
		updated, err := fn(old)
		if err != nil {
			return err
		}
		now := micros(time.Now())
		for name, body := range updated {
			if _, ok := old[name]; !ok {
				return fmt.Errorf("config unit %q was not locked", name)
			}
			if _, err := tx.exec(ctx, `UPDATE config_units SET body = ?, updated_at = ? WHERE name = ?`, body, now, name); err != nil {
				return err
			}
		}
		return nil
	})
}
