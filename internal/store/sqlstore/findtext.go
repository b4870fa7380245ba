package sqlstore

import (
	"context"
	"fmt"
	"strings"
)

// FindText reports every row of every table of the store that holds one
// of needles, case-insensitively, in any column, as "table: values". It
// reads every table whole: it checks an erasure (tests, docs/ADMIN.md),
// never serves a request.
func (db *DB) FindText(ctx context.Context, needles ...string) ([]string, error) {
	rows, err := db.write.QueryContext(ctx, db.d.TablesQuery)
	if err != nil {
		return nil, err
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, err
		}
		tables = append(tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var found []string
	for _, table := range tables {
		hits, err := db.findIn(ctx, table, needles)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", table, err)
		}
		found = append(found, hits...)
	}
	return found, nil
}

func (db *DB) findIn(ctx context.Context, table string, needles []string) ([]string, error) {
	rows, err := db.write.QueryContext(ctx, `SELECT * FROM `+table) // names from the catalogue
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var found []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		var b strings.Builder
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" | ")
			}
			if bs, ok := v.([]byte); ok {
				b.Write(bs)
			} else {
				fmt.Fprint(&b, v)
			}
		}
		text := strings.ToLower(b.String())
		for _, n := range needles {
			if strings.Contains(text, strings.ToLower(n)) {
				found = append(found, table+": "+b.String())
				break
			}
		}
	}
	return found, rows.Err()
}
