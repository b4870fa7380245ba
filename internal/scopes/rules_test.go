package scopes

import (
	"testing"

	"github.com/latchkey/latchkey/internal/store"
)

func TestUsageLimitIsTheSmallestNonZero(t *testing.T) {
	for name, tc := range map[string]struct {
		limits []int
		want   int
	}{
		"none configured":   {nil, 0},
		"all unlimited":     {[]int{0, 0}, 0},
		"one limited":       {[]int{0, 5}, 5},
		"smallest non-zero": {[]int{7, 0, 3, 9}, 3},
	} {
		var cs []store.Scope
		for _, l := range tc.limits {
			cs = append(cs, store.Scope{UsageLimit: l})
		}
		if got := UsageLimit(cs); got != tc.want {
			t.Errorf("%s: %d, want %d", name, got, tc.want)
		}
	}
}

func TestRequiredLevel(t *testing.T) {
	cs := []store.Scope{{ID: "a", AuthenticationLevel: 1, ServiceEndpoint: "https://a"},
		{ID: "b", AuthenticationLevel: 3, ServiceEndpoint: "https://b", VerificationFailedEndpoint: "https://b/failed"},
		{ID: "c", AuthenticationLevel: 2}}
	if level, url := RequiredLevel(cs); level != 3 || url != "https://b/failed" {
		t.Errorf("got %d %q", level, url)
	}
	if level, url := RequiredLevel(nil); level != 0 || url != "" {
		t.Errorf("no scopes: %d %q", level, url)
	}
	// A stored endpoint that fails the redirect URI rule (written before
	// it, or a service_endpoint, which is not held to it) is never where
	// the browser goes.
	for _, bad := range []string{"javascript://b/%0aalert(1)", "data:text/html,x", "http://b.example/failed"} {
		for _, sc := range []store.Scope{{ID: "v", AuthenticationLevel: 3, VerificationFailedEndpoint: bad},
			{ID: "s", AuthenticationLevel: 3, ServiceEndpoint: bad}} {
			if level, url := RequiredLevel(append([]store.Scope{cs[0]}, sc)); level != 3 || url != "" {
				t.Errorf("%+v: got %d %q, want 3 and no URL", sc, level, url)
			}
		}
	}
}

func TestDescriptionFallsBack(t *testing.T) {
	s := store.Scope{Descriptions: map[string]string{"en": "Read", "nl": "Lezen", "nl_BE": "Lezen (BE)"}}
	for lang, want := range map[string]string{"nl_BE": "Lezen (BE)", "nl_NL": "Lezen", "nl": "Lezen", "de": "Read", "": "Read", "nl-BE": "Lezen (BE)"} {
		if got := Description(s, lang); got != want {
			t.Errorf("Description(%q) = %q, want %q", lang, got, want)
		}
	}
	if got := Description(store.Scope{}, "en"); got != "" {
		t.Errorf("no descriptions: %q", got)
	}
}
