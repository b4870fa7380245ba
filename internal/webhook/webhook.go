// Package webhook calls the operator's web hooks (the access token hook and
// the user details hook): JSON over HTTP POST, signed, with a bounded time.
// Payload shapes follow shared/spec/NOTES.md; docs/webhooks.md documents them.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/internal/client"
)

// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA-256 of "<t>.<body>">".
// The timestamp lets a receiver refuse replays of old requests.
const SignatureHeader = "X-Latchkey-Signature"

// maxResponse bounds what a hook may answer.
const maxResponse = 64 << 10

// Hook is one configured web hook.
type Hook struct {
	Name       string // "access_token" | "user_details", sent in X-Latchkey-Hook
	URL        string
	Secret     string
	Timeout    time.Duration
	FailClosed bool // a failure stops the flow instead of being ignored
	Client     *http.Client
	Now        func() time.Time
}

// idleConns is how many idle connections a Client keeps to each host.
// Every concurrent issuance calls a hook; with Go's default of two, nearly
// every call under load opened a new connection (and left one closing).
const idleConns = 64

// NewClient is an HTTP client for web hooks and the APIs they stand
// beside, keeping idleConns connections to each host. Each call has its
// own, shorter, deadline.
func NewClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 4*idleConns, idleConns
	return &http.Client{Timeout: time.Minute, Transport: t}
}

// Enabled reports whether the hook is configured.
func (h *Hook) Enabled() bool { return h != nil && h.URL != "" }

// Sign returns the signature header value for body at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// Call posts payload and decodes the answer into out.
func (h *Hook) Call(ctx context.Context, payload, out any) error {
	// A request that decided on generations it did not read confirms them
	// before it tells anyone outside (client.Optimistic).
	if err := client.Confirm(ctx); err != nil {
		return err
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Latchkey-Hook", h.Name)
	req.Header.Set(SignatureHeader, Sign(h.Secret, now(), body))
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s hook: %w", h.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Read a short error body so that the connection is kept.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("%s hook: status %d", h.Name, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("%s hook: %w", h.Name, err)
	}
	if len(b) > maxResponse {
		return fmt.Errorf("%s hook: answer larger than %d bytes", h.Name, maxResponse)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil // an empty answer changes nothing
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s hook: answer is not the expected JSON: %w", h.Name, err)
	}
	return nil
}

// ID is {"id": ...}.
type ID struct {
	ID string `json:"id"`
}

// AccessTokenRequest is sent when an access token is about to be issued.
type AccessTokenRequest struct {
	User                *ID                 `json:"user"` // null for client credentials
	Client              ID                  `json:"client"`
	Scopes              []string            `json:"scopes"`
	UserClaims          map[string]any      `json:"userClaims"`
	ContextCustomParams map[string][]string `json:"contextCustomParams"`
}

// AccessTokenResponse may narrow the scopes and add claims.
type AccessTokenResponse struct {
	RemoveScopes     []string       `json:"removeScopes"`
	AdditionalClaims map[string]any `json:"additionalClaims"`
}

// UserDetailsRequest is sent when user details are loaded.
type UserDetailsRequest struct {
	User                ID                  `json:"user"`
	Scopes              []string            `json:"scopes"`
	Claims              map[string]any      `json:"claims"`
	ContextCustomParams map[string][]string `json:"contextCustomParams"`
}

// UserDetailsResponse replaces claims.
type UserDetailsResponse struct {
	Claims map[string]any `json:"claims"`
}

// ErrAllScopesRemoved: the access token hook removed every scope; the flow is refused.
var ErrAllScopesRemoved = errors.New("webhook: the access token hook removed every scope")

// ApplyRemoval removes the hook's removeScopes from scopes; unknown ones are ignored.
func ApplyRemoval(scopes, remove []string) ([]string, error) {
	if len(remove) == 0 {
		return scopes, nil
	}
	gone := map[string]bool{}
	for _, s := range remove {
		gone[s] = true
	}
	var out []string
	for _, s := range scopes {
		if !gone[s] {
			out = append(out, s)
		}
	}
	if len(out) == 0 && len(scopes) > 0 {
		return nil, ErrAllScopesRemoved
	}
	return out, nil
}

// Protected reports whether the user details hook may not change claim k
// (shared/spec/NOTES.md).
func Protected(k string) bool {
	switch k {
	case "iss", "aud", "sub", "group_permissions":
		return true
	}
	return len(k) >= len("urn:vendor.com:oidc:") && k[:len("urn:vendor.com:oidc:")] == "urn:vendor.com:oidc:"
}
