package client_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

func TestStaticClientsAreAReadOnlyLayer(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "static.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A client created at run time, and a stale stored copy of a file client.
	runtime := store.Client{ID: "runtime", Name: "Runtime", TokenEndpointAuthMethod: client.AuthNone, AccessTokenLifetime: time.Hour}
	for _, c := range []store.Client{runtime, {ID: "web", Name: "Stale"}} {
		if err := st.UpsertClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	layer := client.NewStatic(st, []store.Client{{ID: "web", Name: "From the file"}})
	var changed []string
	layer.Changed = func(ids ...string) { changed = append(changed, ids...) }

	if c, err := layer.GetClient(ctx, "web"); err != nil || c.Name != "From the file" {
		t.Errorf("a file client: %+v %v, want the file's, in front of the store's", c, err)
	}
	if c, err := layer.GetClient(ctx, "runtime"); err != nil || c.Name != "Runtime" {
		t.Errorf("a runtime client: %+v %v, want the store's", c, err)
	}
	if err := layer.UpsertClient(ctx, store.Client{ID: "web"}); !errors.Is(err, client.ErrReadOnly) {
		t.Errorf("writing a file client: %v, want ErrReadOnly", err)
	}
	if _, err := layer.DeleteClient(ctx, "web", time.Now()); !errors.Is(err, client.ErrReadOnly) {
		t.Errorf("deleting a file client: %v, want ErrReadOnly", err)
	}
	runtime.Name = "Renamed"
	if err := layer.UpsertClient(ctx, runtime); err != nil || !slices.Equal(changed, []string{"runtime"}) {
		t.Errorf("writing a runtime client: %v, changed %v, want it told", err, changed)
	}
	all, err := layer.ListClients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range all {
		names = append(names, c.ID+"="+c.Name)
	}
	if want := []string{"runtime=Renamed", "web=From the file"}; !slices.Equal(names, want) {
		t.Errorf("ListClients = %v, want %v", names, want)
	}
	// Inside a transaction the file's clients are there too.
	err = layer.Tx(ctx, func(tx store.Store) error {
		c, err := tx.GetClient(ctx, "web")
		if err == nil && c.Name != "From the file" {
			t.Errorf("in a transaction: %+v, want the file's client", c)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
