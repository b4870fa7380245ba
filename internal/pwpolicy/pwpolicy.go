// Package pwpolicy enforces the configured password policy and checks
// passwords against a breached-password service that speaks the k-anonymity
// range protocol of the Have I Been Pwned Pwned Passwords API.
package pwpolicy

import (
	"bytes"
	"context"
	"crypto/sha1" // The range protocol is defined over SHA-1; this is not a security choice.
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Rules is the configured password policy (the configuration API's PasswordPolicy).
type Rules struct {
	MinLength, MaxLength    int // in characters (runes), not bytes; 0 = no bound
	LowerCaseCharRequired   bool
	UpperCaseCharRequired   bool
	SpecialCharRequired     bool // any rune that is not a letter or a digit (unicode)
	BreachedPasswordBlocked bool
}

// Rule names used in Violation.Rule.
const (
	RuleMinLength   = "min_length"
	RuleMaxLength   = "max_length"
	RuleLowerCase   = "lower_case_char_required"
	RuleUpperCase   = "upper_case_char_required"
	RuleSpecialChar = "special_char_required"
	RuleBreached    = "breached_password_blocked"
)

// Violation is one broken rule with a message meant for people.
type Violation struct{ Rule, Message string }

// BreachChecker tells whether a password is known to be breached.
type BreachChecker interface {
	Breached(ctx context.Context, password string) (bool, error)
}

// Check returns every violated rule, in the order of the Rule constants, so
// that people can fix them all at once. The breach check runs only when
// BreachedPasswordBlocked is set, checker is non-nil and the other rules
// pass, so that the service is not asked about passwords refused anyway.
// A checker error (only returned by checkers that fail closed) is returned
// as err.
func (r Rules) Check(ctx context.Context, password string, checker BreachChecker) ([]Violation, error) {
	var vs []Violation
	n := utf8.RuneCountInString(password)
	if r.MinLength > 0 && n < r.MinLength {
		vs = append(vs, Violation{RuleMinLength, fmt.Sprintf("The password must have at least %s.", characters(r.MinLength))})
	}
	if r.MaxLength > 0 && n > r.MaxLength {
		vs = append(vs, Violation{RuleMaxLength, fmt.Sprintf("The password must have at most %s.", characters(r.MaxLength))})
	}
	var lower, upper, special bool
	for _, c := range password {
		switch {
		case unicode.IsLower(c):
			lower = true
		case unicode.IsUpper(c):
			upper = true
		}
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			special = true
		}
	}
	if r.LowerCaseCharRequired && !lower {
		vs = append(vs, Violation{RuleLowerCase, "The password must contain a lower-case letter."})
	}
	if r.UpperCaseCharRequired && !upper {
		vs = append(vs, Violation{RuleUpperCase, "The password must contain an upper-case letter."})
	}
	if r.SpecialCharRequired && !special {
		vs = append(vs, Violation{RuleSpecialChar, "The password must contain a character that is neither a letter nor a digit, such as a space or a punctuation mark."})
	}
	if len(vs) > 0 || !r.BreachedPasswordBlocked || checker == nil {
		return vs, nil
	}
	breached, err := checker.Breached(ctx, password)
	if err != nil {
		return nil, err
	}
	if breached {
		vs = append(vs, Violation{RuleBreached, "This password appears in a list of breached passwords; choose another one."})
	}
	return vs, nil
}

func characters(n int) string {
	if n == 1 {
		return "1 character"
	}
	return fmt.Sprintf("%d characters", n)
}

// ErrUnavailable wraps checker failures.
var ErrUnavailable = errors.New("pwpolicy: breached-password service unavailable")

const (
	defaultTimeout = 2 * time.Second
	defaultMaxBody = 1 << 20
	prefixLen      = 5
	suffixLen      = sha1.Size*2 - prefixLen
)

// RangeChecker speaks the range protocol. Only the first five hex characters
// of the password's SHA-1 leave the process.
type RangeChecker struct {
	Endpoint   string        // e.g. "https://api.pwnedpasswords.com/range"; the 5-char prefix is appended after a "/"
	Client     *http.Client  // nil = a client with Timeout
	Timeout    time.Duration // default 2 s, bounds the whole call
	FailClosed bool          // on failure: true => return an error wrapping ErrUnavailable; false => log a warning and report "not breached"
	MaxBody    int64         // default 1 MiB; a longer answer is a failure
}

// Breached reports whether the service lists the password with a non-zero count.
func (c *RangeChecker) Breached(ctx context.Context, password string) (bool, error) {
	sum := sha1.Sum([]byte(password))
	hash := strings.ToUpper(hex.EncodeToString(sum[:]))
	prefix, suffix := hash[:prefixLen], hash[prefixLen:]

	found, err := c.query(ctx, prefix, suffix)
	if err == nil {
		return found, nil
	}
	if c.FailClosed {
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	// Failing open: an outage must not block sign-ups, but operators should
	// know. Never log the password or the full hash; the prefix is public.
	slog.WarnContext(ctx, "breached-password check skipped: service unavailable",
		slog.String("hash_prefix", prefix), slog.String("error", err.Error()))
	return false, nil
}

func (c *RangeChecker) query(ctx context.Context, prefix, suffix string) (bool, error) {
	if c.Endpoint == "" {
		return false, errors.New("no endpoint configured")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	maxBody := c.MaxBody
	if maxBody <= 0 {
		maxBody = defaultMaxBody
	}
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	// The context bounds the whole call, body included, whatever the client.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.Endpoint, "/")+"/"+prefix, nil)
	if err != nil {
		return false, err
	}
	// Padding hides the real number of matches from anyone watching sizes.
	req.Header.Set("Add-Padding", "true")
	req.Header.Set("User-Agent", "latchkey")
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("unexpected status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return false, fmt.Errorf("reading answer: %w", err)
	}
	if int64(len(body)) > maxBody {
		return false, fmt.Errorf("answer longer than %d bytes", maxBody)
	}
	return parseRange(body, suffix)
}

// parseRange reports whether body lists suffix with a non-zero count. Every
// line is validated, so that a garbled answer is a failure rather than a
// silent "not breached". Errors never quote the body: it could echo the hash.
func parseRange(body []byte, suffix string) (bool, error) {
	body = bytes.TrimSuffix(body, []byte("\n"))
	if len(body) == 0 {
		return false, nil
	}
	found := false
	for n := 1; ; n++ {
		line, rest, more := bytes.Cut(body, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		s, nonZero, ok := parseLine(line)
		if !ok {
			return false, fmt.Errorf("malformed answer line %d", n)
		}
		// Padding lines have count 0 and must never match.
		if nonZero && bytes.EqualFold(s, []byte(suffix)) {
			found = true
		}
		if !more {
			return found, nil
		}
		body = rest
	}
}

// parseLine splits "SUFFIX:COUNT" and checks that SUFFIX is 35 hex digits and
// COUNT is decimal. The count's value is not needed, only whether it is zero,
// which also spares overflow handling.
func parseLine(line []byte) (suffix []byte, nonZero, ok bool) {
	if len(line) < suffixLen+2 || line[suffixLen] != ':' {
		return nil, false, false
	}
	for _, b := range line[:suffixLen] {
		if !isHex(b) {
			return nil, false, false
		}
	}
	for _, b := range line[suffixLen+1:] {
		if b < '0' || b > '9' {
			return nil, false, false
		}
		if b != '0' {
			nonZero = true
		}
	}
	return line[:suffixLen], nonZero, true
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}
