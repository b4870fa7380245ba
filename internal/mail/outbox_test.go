package mail_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/mail"
	"github.com/latchkey/latchkey/internal/mail/smtpsink"
	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

func openStore(t *testing.T, backend string) store.Store {
	t.Helper()
	var st store.Store
	var err error
	if backend == "sqlite" {
		st, err = sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "latchkey.db"))
	} else {
		st, err = postgres.Open(context.Background(), pgtest.NewDatabase(t))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newOutbox(t *testing.T, st store.Store, sink *smtpsink.Process) *mail.Outbox {
	t.Helper()
	host, port, _ := strings.Cut(sink.Addr, ":")
	p, _ := strconv.Atoi(port)
	sealer, err := seal.New(bytes.Repeat([]byte{7}, 32), "mail")
	if err != nil {
		t.Fatal(err)
	}
	return &mail.Outbox{Store: st, Sealer: sealer, From: "noreply@latchkey.test", Now: time.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: mail.NewOwner(), SendTimeout: 2 * time.Second,
		RetryAfter: 10 * time.Millisecond, Poll: 20 * time.Millisecond,
		Sender: &mail.SMTP{Host: host, Port: p, From: "noreply@latchkey.test", TLS: mail.TLSNone, Timeout: 2 * time.Second}}
}

func enqueue(t *testing.T, o *mail.Outbox, st store.Store, to, subject string) {
	t.Helper()
	err := st.Tx(context.Background(), func(tx store.Store) error {
		return o.Enqueue(context.Background(), tx, "test", "", mail.Message{To: to, ToName: "Jane Doe", Subject: subject,
			Text: "Hello Jane,\nfollow https://example.test/x?token=abc\n", HTML: "<p>Hello Jane</p>"})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A mail enqueued while the server is down is sent once it is back: the
// attempts in between fail and are retried with back-off.
func TestOutboxSendsWhenTheServerIsBack(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			st := openStore(t, backend)
			sink := smtpsink.Start(t)
			o := newOutbox(t, st, sink)
			var mu sync.Mutex
			failures := 0
			o.Finished = func(_ context.Context, _ store.Mail, err error, _ bool) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failures++
				}
			}
			sink.Stop()
			enqueue(t, o, st, "jane@example.com", "Reset your password")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { o.Run(ctx); close(done) }()
			t.Cleanup(func() { cancel(); <-done })

			deadline := time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				f := failures
				mu.Unlock()
				if f >= 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the outbox never tried the unreachable server twice")
				}
				time.Sleep(10 * time.Millisecond)
			}
			sink.Restart()
			got := sink.WaitFor(1, 10*time.Second, nil)
			text, html, err := got[0].Parts()
			if err != nil || !strings.Contains(text, "https://example.test/x?token=abc") || !strings.Contains(html, "<p>Hello Jane</p>") {
				t.Errorf("mail parts: %q %q %v", text, html, err)
			}
			if s := got[0].Header.Get("Subject"); s != "Reset your password" {
				t.Errorf("subject %q", s)
			}
			if got[0].To != "jane@example.com" {
				t.Errorf("envelope recipient %q", got[0].To)
			}
			// Nothing more arrives: the mail is marked sent.
			if _, err := o.SendDue(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := len(sink.Mails()); n != 1 {
				t.Errorf("%d mails received, want 1", n)
			}
		})
	}
}

// Instances sending from one outbox at once send every mail exactly once.
func TestOutboxSendsEachMailOnceAcrossInstances(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			st := openStore(t, backend)
			sink := smtpsink.Start(t)
			first := newOutbox(t, st, sink)
			const n = 30
			for i := range n {
				enqueue(t, first, st, fmt.Sprintf("p%d@example.com", i), fmt.Sprintf("mail %d", i))
			}
			var wg sync.WaitGroup
			for range 4 {
				o := newOutbox(t, st, sink) // its own owner: another instance
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := o.SendDue(context.Background()); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			got := sink.Mails()
			seen := map[string]int{}
			for _, m := range got {
				seen[m.Header.Get("Message-ID")]++
			}
			if len(got) != n || len(seen) != n {
				t.Errorf("%d mails received with %d distinct Message-IDs, want %d of each", len(got), len(seen), n)
			}
		})
	}
}

// A server's permanent refusal gives the mail up at once.
func TestOutboxGivesUpOnPermanentRefusal(t *testing.T) {
	st := openStore(t, "sqlite")
	sink := smtpsink.Start(t)
	o := newOutbox(t, st, sink)
	o.Sender = senderFunc(func(context.Context, string, []byte) error {
		return &mail.PermanentError{Err: fmt.Errorf("550 no such user")}
	})
	var final bool
	o.Finished = func(_ context.Context, _ store.Mail, err error, f bool) { final = f && err != nil }
	enqueue(t, o, st, "nobody@example.com", "x")
	if _, err := o.SendDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !final {
		t.Error("a permanent refusal was not final")
	}
	o.Sender = senderFunc(func(context.Context, string, []byte) error { t.Error("a given-up mail was sent again"); return nil })
	if _, err := o.SendDue(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type senderFunc func(ctx context.Context, to string, msg []byte) error

func (f senderFunc) Send(ctx context.Context, to string, msg []byte) error { return f(ctx, to, msg) }
