package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// GroupPolicies fetches a person's group memberships and policies from the
// configured person report API (GET {base}/people/{id}/report) and keeps
// each answer for a short time.
type GroupPolicies struct {
	Base    string
	Timeout time.Duration
	TTL     time.Duration
	Client  *http.Client
	Now     func() time.Time
	// OnFailure is told of each failed fetch (a metric); introspection goes on without the member.
	OnFailure func(err error)

	mu    sync.Mutex
	cache map[string]cachedPolicies
}

type cachedPolicies struct {
	report  map[string]any
	fetched time.Time
}

// Enabled reports whether an API is configured.
func (g *GroupPolicies) Enabled() bool { return g != nil && g.Base != "" }

// Report returns the person's report object, or nil when it cannot be had.
func (g *GroupPolicies) Report(ctx context.Context, personID string) map[string]any {
	now := g.Now()
	g.mu.Lock()
	c, ok := g.cache[personID]
	g.mu.Unlock()
	if ok && now.Sub(c.fetched) < g.TTL {
		return c.report
	}
	report, err := g.fetch(ctx, personID)
	if err != nil {
		if g.OnFailure != nil {
			g.OnFailure(err)
		}
		return nil
	}
	g.mu.Lock()
	if g.cache == nil || len(g.cache) > 100_000 {
		g.cache = map[string]cachedPolicies{}
	}
	g.cache[personID] = cachedPolicies{report: report, fetched: now}
	g.mu.Unlock()
	return report
}

func (g *GroupPolicies) fetch(ctx context.Context, personID string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	u := strings.TrimRight(g.Base, "/") + "/people/" + url.PathEscape(personID) + "/report"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	c := g.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("group permissions API: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("group permissions API: status %d", resp.StatusCode)
	}
	var report map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&report); err != nil {
		return nil, fmt.Errorf("group permissions API: %w", err)
	}
	return report, nil
}
