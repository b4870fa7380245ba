package login_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/federation"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// TestUpstreamLogoutRefusesAStoredScriptTarget: the state of a logout at an
// upstream provider keeps where the browser goes afterwards; a stored
// target with a script or local scheme (forged in the store here) is not
// followed when the upstream sends the browser back: the signed-out page.
func TestUpstreamLogoutRefusesAStoredScriptTarget(t *testing.T) {
	s := servertest.Start(t, &config.Config{}, servertest.Options{})
	h, err := token.NewHasher(servertest.Key)
	if err != nil {
		t.Fatal(err)
	}
	const binding = "browser-binding-0123456789"
	for i, tc := range []struct {
		target string
		follow bool
	}{
		{"JAVASCRIPT://app.example/%0aalert(1)", false}, {"data:text/html,x", false}, {"file:///etc/passwd", false},
		{"https://app.example/bye", true},
	} {
		state := federation.StateToken.Prefix + "forged-state-" + string(rune('a'+i))
		now := time.Now().UTC()
		if err := s.Store.CreateFederationState(context.Background(), store.FederationState{Hash: h.HashOf(federation.StateToken, state),
			Kind: store.FederationLogout, Browser: h.Hash("federation_browser", binding), Target: tc.target,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodGet, s.URL+"/login/oidc/logged-out?state="+state, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.AddCookie(&http.Cookie{Name: "lk_fed", Value: binding})
		resp, err := s.Browser().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		switch {
		case tc.follow && (resp.StatusCode != http.StatusSeeOther || loc != tc.target):
			t.Errorf("stored target %q: %d to %q, want 303 there", tc.target, resp.StatusCode, loc)
		case !tc.follow && (resp.StatusCode != http.StatusOK || loc != ""):
			t.Errorf("stored target %q: %d to %q, want the signed-out page", tc.target, resp.StatusCode, loc)
		}
	}
}
