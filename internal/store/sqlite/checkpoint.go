package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// checkpointInterval is how often the checkpointer copies committed WAL
// frames into the database file. A checkpoint with nothing new to copy
// costs a shared-memory read.
const checkpointInterval = 200 * time.Millisecond

// writerAutoCheckpoint is the writer's own checkpoint threshold in pages:
// a backstop for when the checkpointer falls behind (SQLite's default is
// 1,000).
const writerAutoCheckpoint = 20_000

// checkpointer runs passive WAL checkpoints on a connection of its own.
// SQLite's automatic checkpoint runs inside the commit that crosses its
// threshold, so the single writer, and every caller waiting on its group
// commit, waits for the copy and its two fsyncs (a third of the writer's
// time under a token load on the development machine). A passive
// checkpoint beside it takes no writer lock: the writer and the readers go
// on while it runs.
type checkpointer struct {
	db   *sql.DB
	quit chan struct{}
	done chan struct{}
}

func startCheckpointer(db *sql.DB) *checkpointer {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	c := &checkpointer{db: db, quit: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

func (c *checkpointer) loop() {
	defer close(c.done)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
			// An error (SQLITE_BUSY while another checkpoint runs) leaves
			// the frames to the next tick or to the writer's backstop.
			_, _ = c.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
		}
	}
}

// stop ends the loop and closes the connection.
func (c *checkpointer) stop() error {
	close(c.quit)
	<-c.done
	return c.db.Close()
}
