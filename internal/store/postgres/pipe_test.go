package postgres

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

// turnCounter is a TCP proxy in front of PostgreSQL that counts client
// turns: the times a client starts sending after the server has answered
// (or for the first time). A turn is a round trip the client waits for.
type turnCounter struct {
	ln    net.Listener
	turns atomic.Int64
	wg    sync.WaitGroup
}

func newTurnCounter(t *testing.T, target string) *turnCounter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tc := &turnCounter{ln: ln}
	t.Cleanup(func() { ln.Close(); tc.wg.Wait() })
	tc.wg.Add(1)
	go func() {
		defer tc.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			tc.wg.Add(1)
			go func() { defer tc.wg.Done(); tc.relay(c, s) }()
		}
	}()
	return tc
}

// relay copies both ways, counting the client's turns.
func (tc *turnCounter) relay(c, s net.Conn) {
	var mu sync.Mutex
	serverSpokeLast := true
	pass := func(dst, src net.Conn, fromClient bool) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				mu.Lock()
				if fromClient && serverSpokeLast {
					tc.turns.Add(1)
				}
				serverSpokeLast = !fromClient
				mu.Unlock()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					err = werr
				}
			}
			if err != nil { // either side gone: end both
				c.Close()
				s.Close()
				return
			}
		}
	}
	done := make(chan struct{})
	go func() { pass(s, c, true); close(done) }()
	pass(c, s, false)
	<-done
}

// TestTransactionRoundTrips: an issuance's transaction — the person read
// under a share lock, then a grant, a token and an event written — waits
// for two round trips: BEGIN goes with its first statement, and the held
// inserts with COMMIT (database/sql alone would take five: BEGIN, the read,
// the inserts, COMMIT). An access token's revocation — the token's UPDATE
// and its event — is one statement that commits itself: one round trip. A
// refresh's — its token read with the person's share lock, then its
// writes — two. A refresh token's revocation, with its grant's, is one.
func TestTransactionRoundTrips(t *testing.T) {
	s, proxy := openCounted(t)
	ctx := context.Background()
	// The first run prepares the statements on the connection (a round
	// trip of its own); a pooled connection idle for a second is pinged.
	// The least of three runs is the transaction's own count.
	least := func(run func(i int) error) int64 {
		if err := run(0); err != nil {
			t.Fatal(err)
		}
		least := int64(1 << 30)
		for i := 1; i <= 3; i++ {
			before := proxy.turns.Load()
			if err := run(i); err != nil {
				t.Fatal(err)
			}
			least = min(least, proxy.turns.Load()-before)
		}
		return least
	}
	if n := least(func(i int) error { return issueTx(ctx, s, fmt.Sprintf("g%d", i)) }); n != 2 {
		t.Errorf("an issuance's transaction took %d round trips, want 2", n)
	}
	if _, err := s.GetToken(ctx, []byte("g3")); err != nil {
		t.Errorf("the last issuance's token: %v", err)
	}
	now := time.Now().UTC()
	revoke := func(i int) error {
		return s.Tx(ctx, func(tx store.Store) error {
			if err := tx.RevokeToken(ctx, []byte(fmt.Sprintf("g%d", i)), now); err != nil {
				return err
			}
			return tx.EventSink().AppendEvents(ctx, store.Event{ID: fmt.Sprintf("r-g%d", i), Kind: store.EventOAuth,
				Type: "T", ClientID: "c1", Occurred: now})
		})
	}
	if n := least(revoke); n != 1 {
		t.Errorf("a revocation's transaction took %d round trips, want 1", n)
	}
	// A refresh: the token, its grant and its person read under a share
	// lock in one statement, then a token and an event written.
	refresh := func(i int) error {
		return s.Tx(ctx, func(tx store.Store) error {
			if _, _, _, err := tx.GetTokenGrantSharePerson(ctx, []byte("r0")); err != nil {
				return err
			}
			id := fmt.Sprintf("rt%d", i)
			return refreshWrites(ctx, tx, "g0", id)
		})
	}
	if err := s.CreateToken(ctx, store.Token{Hash: []byte("r0"), Kind: store.KindRefresh, GrantID: "g0", ClientID: "c1",
		Subject: "p1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if n := least(refresh); n != 2 {
		t.Errorf("a refresh's transaction took %d round trips, want 2", n)
	}
	// A refresh token's revocation without a read first: the token, its
	// grant, the grant's other tokens and the event in one statement.
	for i := range 4 {
		id := fmt.Sprintf("lg%d", i)
		if err := issueWrites(ctx, s, id, "at-"+id, "p1"); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateToken(ctx, store.Token{Hash: []byte("rt-" + id), Kind: store.KindRefresh, GrantID: id,
			ClientID: "c1", Subject: "p1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	// In a request, whose client's authentication has read the
	// generations (PerRequest): the cache's check for a token revoked
	// already reads none again.
	logout := int64(1 << 30)
	for i := range 4 {
		id := fmt.Sprintf("lg%d", i)
		rctx := client.PerRequest(ctx)
		if _, err := s.gens.Get(rctx); err != nil {
			t.Fatal(err)
		}
		before := proxy.turns.Load()
		ok, err := s.RevokeLiveToken(rctx, store.KindRefresh, []byte("rt-"+id), "c1", now, store.Event{ID: "r-" + id,
			Kind: store.EventOAuth, Type: "T", ClientID: "c1", Occurred: now})
		if err != nil || !ok {
			t.Fatalf("%s: revoked %v, %v", id, ok, err)
		}
		if i > 0 { // the first prepares its statement
			logout = min(logout, proxy.turns.Load()-before)
		}
	}
	if logout != 1 {
		t.Errorf("a refresh token's revocation took %d round trips, want 1", logout)
	}
	if tok, gr, err := s.GetTokenGrant(ctx, []byte("at-lg3")); err != nil || tok.RevokedAt.IsZero() || gr.RevokedAt.IsZero() {
		t.Errorf("the last revoked grant's access token: revoked at %v, grant at %v, %v", tok.RevokedAt, gr.RevokedAt, err)
	}
	for i := range 4 {
		if tok, err := s.GetToken(ctx, []byte(fmt.Sprintf("g%d", i))); err != nil || !tok.RevokedAt.Equal(now.Truncate(time.Microsecond)) {
			t.Errorf("token g%d after its revocation: revoked at %v, %v", i, tok.RevokedAt, err)
		}
	}
}

// openCounted opens a store on a new database, holding activePerson,
// whose connections go through a turnCounter.
func openCounted(t *testing.T) (*Store, *turnCounter) {
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTurnCounter(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	return openWithPerson(t, u.String()), proxy
}

// activePerson is the person p1, whom issueTx issues for.
func activePerson() store.Person {
	now := time.Now()
	return store.Person{ID: "p1", Email: "a@example.com", Status: "ACTIVATED", CreatedAt: now, UpdatedAt: now}
}

// openWithPerson opens a store on dsn, closed at the test's end, holding
// activePerson.
func openWithPerson(tb testing.TB, dsn string) *Store {
	tb.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := s.CreatePerson(context.Background(), activePerson()); err != nil {
		tb.Fatal(err)
	}
	return s
}

// issueTx is an issuance's transaction: the person read under a share
// lock, then a grant, a token and an event written.
func issueTx(ctx context.Context, s store.Store, id string) error {
	return s.Tx(ctx, func(tx store.Store) error {
		if _, err := tx.SharePerson(ctx, "p1"); err != nil {
			return err
		}
		return issueWrites(ctx, tx, id, id, "p1")
	})
}

// issueWrites are an issuance's writes: a grant, its access token and
// the event.
func issueWrites(ctx context.Context, tx store.Store, grantID, tokenID, subject string) error {
	now := time.Now().UTC()
	if err := tx.CreateGrant(ctx, store.Grant{ID: grantID, ClientID: "c1", Subject: subject, CreatedAt: now,
		ExpiresAt: now.Add(time.Hour)}); err != nil {
		return err
	}
	if err := tx.CreateToken(ctx, store.Token{Hash: []byte(tokenID), Kind: store.KindAccess, GrantID: grantID,
		ClientID: "c1", Subject: subject, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		return err
	}
	return tx.EventSink().AppendEvents(ctx, store.Event{ID: "e-" + tokenID, Kind: store.EventOAuth, Type: "T",
		ClientID: "c1", Occurred: now})
}

// BenchmarkIssuanceTransaction: issueTx one at a time (its latency: two
// round trips and a commit's flush) and from parallel callers.
func BenchmarkIssuanceTransaction(b *testing.B) {
	s := openWithPerson(b, pgtest.NewDatabase(b))
	ctx := context.Background()
	var n atomic.Int64
	b.Run("serial", func(b *testing.B) {
		for range b.N {
			if err := issueTx(ctx, s, fmt.Sprintf("s%d", n.Add(1))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := issueTx(ctx, s, fmt.Sprintf("p%d", n.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// TestTransactionFailuresWriteNothing: a held insert that fails at commit,
// and a statement whose error fn ignored, each lose their whole
// transaction and leave the connection fit for the next one.
func TestTransactionFailuresWriteNothing(t *testing.T) {
	s := newStore(t).(*Store)
	ctx := context.Background()
	if err := s.CreatePerson(ctx, activePerson()); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	g := store.Grant{ID: "g1", ClientID: "c1", Subject: "p1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	event := func(id string) store.Event {
		return store.Event{ID: id, Kind: store.EventOAuth, Type: "T", ClientID: "c1", Occurred: now}
	}

	// The duplicate grant is held, and fails with COMMIT: the event held
	// with it and the lock taken before it are undone.
	err := s.Tx(ctx, func(tx store.Store) error {
		if _, err := tx.SharePerson(ctx, "p1"); err != nil {
			return err
		}
		if err := tx.EventSink().AppendEvents(ctx, event("e-dup")); err != nil {
			return err
		}
		return tx.CreateGrant(ctx, g)
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate grant at commit: %v, want ErrConflict", err)
	}

	// A statement fails and fn goes on as if it had not: PostgreSQL has
	// aborted the transaction, and its COMMIT rolls back.
	err = s.Tx(ctx, func(tx store.Store) error {
		if _, err := tx.SharePerson(ctx, "p1"); err != nil {
			return err
		}
		_ = tx.CreatePerson(ctx, activePerson()) // a duplicate: fails at once
		return tx.EventSink().AppendEvents(ctx, event("e-ignored"))
	})
	if err == nil {
		t.Error("a transaction whose statement failed committed")
	}

	// The connections are fit: later transactions, on whatever pooled
	// connection, commit.
	for i := range 20 {
		if err := s.Tx(ctx, func(tx store.Store) error {
			if _, err := tx.SharePerson(ctx, "p1"); err != nil {
				return err
			}
			return tx.EventSink().AppendEvents(ctx, event(fmt.Sprintf("e-ok-%d", i)))
		}); err != nil {
			t.Fatalf("transaction %d after the failures: %v", i, err)
		}
	}
	es, err := s.SearchEvents(ctx, store.EventFilter{Kind: store.EventOAuth}, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.ID == "e-dup" || e.ID == "e-ignored" {
			t.Errorf("event %s of a failed transaction was stored", e.ID)
		}
	}
	if len(es) != 20 {
		t.Errorf("%d events stored, want the 20 of the transactions that committed", len(es))
	}
}

// QueryEach reads each statement's rows in full and decodes them as a read
// on the pool would; a statement's server error reaches the caller, and
// the connection is idle again after it.
func TestQueryEachReadsEveryStatementsRows(t *testing.T) {
	raw := openRaw(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	p, err := openPipe(raw)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	rows, err := p.QueryEach(ctx, []sqlstore.Stmt{
		{SQL: "SELECT $1::text, $2::bigint, $3::bytea, NULL::text, true", Args: []any{"ab", int64(-7), []byte{0, 1, 255}}},
		{SQL: "SELECT g FROM generate_series(1, 3) g"},
		{SQL: "SELECT 1 WHERE false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var (
		s    string
		n    int64
		b    []byte
		null sql.NullString
		yes  bool
	)
	if !rows[0].Next() {
		t.Fatal("the first statement's row is missing")
	}
	if err := rows[0].Scan(&s, &n, &b, &null, &yes); err != nil {
		t.Fatal(err)
	}
	if s != "ab" || n != -7 || !bytes.Equal(b, []byte{0, 1, 255}) || null.Valid || !yes {
		t.Errorf("the first row: %q %d %v %v %v", s, n, b, null, yes)
	}
	var series []int64
	for rows[1].Next() {
		if err := rows[1].Scan(&n); err != nil {
			t.Fatal(err)
		}
		series = append(series, n)
	}
	if fmt.Sprint(series) != "[1 2 3]" {
		t.Errorf("the second statement's rows: %v", series)
	}
	if rows[2].Next() {
		t.Error("a statement without rows gave one")
	}

	_, err = p.QueryEach(ctx, []sqlstore.Stmt{{SQL: "SELECT 1"}, {SQL: "SELECT 1 / 0"}, {SQL: "SELECT 2"}})
	var se interface{ SQLState() string }
	if !errors.As(err, &se) || se.SQLState() != "22012" {
		t.Fatalf("a round trip with a division by zero: %v", err)
	}
	rows, err = p.QueryEach(ctx, []sqlstore.Stmt{{SQL: "SELECT 3"}})
	if err != nil || !rows[0].Next() || rows[0].Scan(&n) != nil || n != 3 {
		t.Fatalf("the connection after a failed round trip: %v", err)
	}
}

// Concurrent guarded reads share round trips (sqlstore's sharedReads), and
// each still gets its own token, grant and person, and commits what it
// decided on.
func TestConcurrentGuardedReadsEachGetTheirOwnRows(t *testing.T) {
	s, _ := guardedStore(t)
	ctx := context.Background()
	now := time.Now().UTC()
	const n = 48
	for i := range n {
		id := fmt.Sprintf("g%d", i)
		if err := s.CreateGrant(ctx, store.Grant{ID: id, ClientID: "c1", Subject: "p1", Scopes: []string{id},
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateToken(ctx, store.Token{Hash: []byte("r-" + id), Kind: store.KindRefresh, GrantID: id,
			ClientID: "c1", Subject: "p1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("g%d", i)
			err := s.Tx(ctx, func(tx store.Store) error {
				tok, g, p, err := tx.GetTokenGrantGuardPerson(ctx, []byte("r-"+id))
				if err != nil {
					return err
				}
				if string(tok.Hash) != "r-"+id || g.ID != id || fmt.Sprint(g.Scopes) != "["+id+"]" || p.ID != "p1" {
					return fmt.Errorf("read %q, grant %s %v, person %s", tok.Hash, g.ID, g.Scopes, p.ID)
				}
				return refreshWrites(ctx, tx, id, "a-"+id)
			})
			if err != nil {
				t.Errorf("refresh of %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		id := fmt.Sprintf("g%d", i)
		if tok, err := s.GetToken(ctx, []byte("a-"+id)); err != nil || tok.GrantID != id {
			t.Errorf("the access token of %s: %+v, %v", id, tok, err)
		}
	}
}

// TestConcurrentSharedKeyReadsEachGetTheirOwnRows: the authorization
// endpoint's session-and-person read and a revocation's token-and-grant
// read share round trips (queryRowShared); under concurrency each caller
// still gets its own row, every column decoded (lists, bytea, NULL-free
// defaults, maps), and a missing key its ErrNotFound.
func TestConcurrentSharedKeyReadsEachGetTheirOwnRows(t *testing.T) {
	s := openWithPerson(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	const n = 48
	for i := range n {
		id := fmt.Sprintf("p%d", i+2)
		if err := s.CreatePerson(ctx, store.Person{ID: id, Email: id + "@example.com", Status: "ACTIVATED",
			FirstName: "F" + id, Custom: map[string]string{"k": id}, TOTPSecret: []byte{0, byte(i), 0xff},
			CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		sess := store.Session{Hash: []byte("s-" + id), PersonID: id, AuthLevel: i % 3, AMR: []string{"pwd", id},
			AuthTime: now, ExpiresAt: now.Add(time.Hour)}
		if i%2 == 1 {
			sess.IdPID, sess.UpstreamIDToken = "idp-"+id, []byte("sealed\x00"+id)
		}
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateGrant(ctx, store.Grant{ID: "g-" + id, ClientID: "c1", Subject: id, Scopes: []string{id},
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateToken(ctx, store.Token{Hash: []byte("t-" + id), Kind: store.KindAccess, GrantID: "g-" + id,
			ClientID: "c1", Subject: id, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range n + 2 {
		wg.Go(func() {
			id := fmt.Sprintf("p%d", i+2)
			sess, err := s.GetSession(ctx, []byte("s-"+id))
			tok, g, terr := s.GetTokenGrantToChange(ctx, []byte("t-"+id))
			if i >= n {
				if !errors.Is(err, store.ErrNotFound) || !errors.Is(terr, store.ErrNotFound) {
					t.Errorf("%s, which has no session or token: %v, %v", id, err, terr)
				}
				return
			}
			if err != nil || terr != nil {
				t.Errorf("%s: %v, %v", id, err, terr)
				return
			}
			p := sess.Person
			wantIdP, wantUp := "", []byte(nil)
			if i%2 == 1 {
				wantIdP, wantUp = "idp-"+id, []byte("sealed\x00"+id)
			}
			if string(sess.Hash) != "s-"+id || sess.PersonID != id || sess.AuthLevel != i%3 ||
				fmt.Sprint(sess.AMR) != "[pwd "+id+"]" || !sess.AuthTime.Equal(now) || sess.IdPID != wantIdP ||
				!bytes.Equal(sess.UpstreamIDToken, wantUp) || p == nil || p.ID != id || p.FirstName != "F"+id ||
				p.Custom["k"] != id || !bytes.Equal(p.TOTPSecret, []byte{0, byte(i), 0xff}) {
				t.Errorf("%s: session %+v, person %+v", id, sess, p)
			}
			if string(tok.Hash) != "t-"+id || tok.Subject != id || g.ID != "g-"+id || fmt.Sprint(g.Scopes) != "["+id+"]" {
				t.Errorf("%s: token %+v, grant %+v", id, tok, g)
			}
		})
	}
	wg.Wait()
}
