package personimport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/internal/clientauth"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/lazyre"
	"github.com/latchkey/latchkey/internal/request"
)

// Path is the import API's path.
const Path = "/api/import/persons"

// maxBodyBytes bounds a request's bytes; the person count is bounded apart.
const maxBodyBytes = 32 << 20

// Header names of the spec's Import API.
const (
	HeaderPartition   = "X-Vendor-Persons-Partition-Id"
	HeaderFlowContext = "X-Vendor-Flow-Context-Params"
)

// Handler serves POST /api/import/persons.
type Handler struct {
	Service *Service
	Users   *clientauth.BasicUsers
	// Enabled reports whether the import feature is on (config import.enabled).
	Enabled func() bool
	// Partitioning makes the partition header required.
	Partitioning bool
	MaxPersons   int
}

// Import imports the persons of the body: 201 when all were imported, 207
// with failures otherwise.
func (h *Handler) Import(w http.ResponseWriter, r *http.Request) error {
	user, ok, err := h.Users.Guard(w, r)
	if !ok {
		return err
	}
	if h.Enabled != nil && !h.Enabled() {
		httpx.WriteJSON(w, http.StatusServiceUnavailable, ErrorResponse{CodeFeatureDisabled, "Requested feature not available."})
		return nil
	}
	bad := func(status, code int, format string, args ...any) error {
		httpx.WriteJSON(w, status, ErrorResponse{code, fmt.Sprintf(format, args...)})
		return nil
	}
	partition, err := h.partition(r)
	if err != nil {
		return bad(http.StatusBadRequest, CodeBadRequest, "%s: %v", HeaderPartition, err)
	}
	flow, err := ParseFlowContext(strings.Join(r.Header.Values(HeaderFlowContext), ";"))
	if err != nil {
		return bad(http.StatusBadRequest, CodeBadRequest, "%s: %v", HeaderFlowContext, err)
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return bad(http.StatusUnsupportedMediaType, CodeBadRequest, "The request body must be application/json.")
	}
	persons, err := decode(w, r, h.MaxPersons)
	var tooMany errTooMany
	var he *httpx.Error
	switch {
	case errors.As(err, &tooMany):
		return bad(http.StatusRequestEntityTooLarge, CodeRequestTooLarge, "At most %d persons per request.", h.MaxPersons)
	case errors.As(err, &he) && he.Status == http.StatusRequestEntityTooLarge:
		return bad(http.StatusRequestEntityTooLarge, CodeRequestTooLarge, "The request body is larger than %d bytes.", maxBodyBytes)
	case errors.As(err, &he):
		return bad(http.StatusBadRequest, CodeBadRequest, "%s", he.Description)
	case err != nil:
		return err
	}
	res, err := h.Service.Import(r.Context(), persons, Options{Partition: partition, Context: flow, Agent: user, Facts: request.Of(r)})
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if len(res.Failures) > 0 {
		status = http.StatusMultiStatus
	}
	httpx.NoStore(w)
	httpx.WriteJSON(w, status, res)
	return nil
}

var partitionRE = lazyre.New(`^[A-Za-z0-9_.:-]{1,64}$`)

func (h *Handler) partition(r *http.Request) (string, error) {
	v := r.Header.Values(HeaderPartition)
	switch {
	case !h.Partitioning && len(v) > 0:
		// Refused rather than ignored: the caller believes it writes into a
		// partition, and the persons would land in the default one.
		return "", errors.New("persons partitioning is not enabled")
	case !h.Partitioning:
		return "", nil
	case len(v) == 0:
		return "", errors.New("required when persons partitioning is enabled")
	case len(v) > 1 || !partitionRE.MatchString(v[0]):
		return "", errors.New("must be one value of 1 to 64 characters a-z A-Z 0-9 _ . : -")
	}
	return v[0], nil
}

var flowKeyRE = lazyre.New(`^[A-Za-z0-9_.\-]{1,64}$`)

// maxFlowParams bounds the flow context parameters of one request.
const maxFlowParams = 32

// ParseFlowContext reads "k1=v1;k2=v2": keys of a-z A-Z 0-9 _ . -, values of
// at most 256 printable characters without ';', no key twice. Spaces
// around pairs are ignored; an empty header is no context.
func ParseFlowContext(h string) (map[string]string, error) {
	if strings.TrimSpace(h) == "" {
		return nil, nil
	}
	out := map[string]string{}
	parts := strings.Split(h, ";")
	if strings.TrimSpace(parts[len(parts)-1]) == "" {
		parts = parts[:len(parts)-1] // a trailing ';'
	}
	for _, part := range parts {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("%q is not key=value", clip(part))
		case !flowKeyRE.MatchString(k):
			return nil, fmt.Errorf("key %q must be 1 to 64 characters a-z A-Z 0-9 _ . -", clip(k))
		case len(v) > 256 || !printableASCII(v):
			return nil, fmt.Errorf("the value of %q must be at most 256 printable characters", k)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("key %q appears twice", k)
		}
		out[k] = v
		if len(out) > maxFlowParams {
			return nil, fmt.Errorf("at most %d parameters", maxFlowParams)
		}
	}
	return out, nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

type errTooMany struct{}

func (errTooMany) Error() string { return "too many persons" }

// decode reads {"persons":[...]} one person at a time, strictly (unknown
// members refused), so that only the decoded persons are held in memory.
func decode(w http.ResponseWriter, r *http.Request, maxPersons int) ([]Person, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	describe := func(err error) error { return httpx.JSONError(err, maxBodyBytes) }
	expect := func(want json.Delim) error {
		tok, err := dec.Token()
		if err != nil {
			return describe(err)
		}
		if d, ok := tok.(json.Delim); !ok || d != want {
			return httpx.Errorf(http.StatusBadRequest, "invalid_request", "Expected %q in the request body.", string(want))
		}
		return nil
	}
	if err := expect('{'); err != nil {
		return nil, err
	}
	var persons []Person
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, describe(err)
		}
		if key, _ := tok.(string); key != "persons" || seen {
			return nil, httpx.Errorf(http.StatusBadRequest, "invalid_request", "Unknown or repeated member %q.", clip(fmt.Sprint(tok)))
		}
		seen = true
		if err := expect('['); err != nil {
			return nil, httpx.Errorf(http.StatusBadRequest, "invalid_request", "persons must be an array.")
		}
		for dec.More() {
			if len(persons) == maxPersons {
				return nil, errTooMany{}
			}
			var p Person
			if err := dec.Decode(&p); err != nil {
				he := httpx.JSONError(err, maxBodyBytes)
				if he.Status == http.StatusBadRequest {
					he.Description = fmt.Sprintf("persons[%d]: %s", len(persons), he.Description)
				}
				return nil, he
			}
			persons = append(persons, p)
		}
		if err := expect(']'); err != nil {
			return nil, err
		}
	}
	if err := expect('}'); err != nil {
		return nil, err
	}
	if !seen {
		return nil, httpx.Errorf(http.StatusBadRequest, "invalid_request", "persons is required.")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, httpx.Errorf(http.StatusBadRequest, "invalid_request", "The request body holds data after the JSON value.")
	}
	return persons, nil
}
