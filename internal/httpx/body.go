package httpx

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// Body size limits. OAuth forms are small; JSON configuration units are
// bigger; imports set their own limit.
const (
	MaxFormBytes = 64 << 10
	MaxJSONBytes = 1 << 20
)

// ParseForm reads an application/x-www-form-urlencoded body of at most limit
// bytes into r.PostForm (and r.Form). A GET request's query is parsed too.
func ParseForm(w http.ResponseWriter, r *http.Request, limit int64) error {
	if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/x-www-form-urlencoded" {
			return Errorf(http.StatusBadRequest, "invalid_request", "The request body must be application/x-www-form-urlencoded.")
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
	}
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &Error{Status: http.StatusRequestEntityTooLarge, Code: "invalid_request",
				Description: fmt.Sprintf("The request body is larger than %d bytes.", limit)}
		}
		return &Error{Status: http.StatusBadRequest, Code: "invalid_request", Description: "The request body is not a valid form.", Cause: err}
	}
	return nil
}

// Single returns the values of names from v, refusing any that occurs more
// than once (RFC 6749 section 3.1: parameters MUST NOT be included more than once).
func Single(v url.Values, names ...string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	for _, n := range names {
		switch vs := v[n]; len(vs) {
		case 0:
		case 1:
			out[n] = vs[0]
		default:
			return nil, Errorf(http.StatusBadRequest, "invalid_request", "The parameter %s is repeated.", n)
		}
	}
	return out, nil
}

// DecodeJSON decodes a JSON body of at most limit bytes into dst strictly:
// the media type must be JSON, unknown members and trailing data are refused.
// Errors carry the code invalid_request and a description safe to show.
func DecodeJSON(w http.ResponseWriter, r *http.Request, dst any, limit int64) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return Errorf(http.StatusUnsupportedMediaType, "invalid_request", "The request body must be application/json.")
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return JSONError(err, limit)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return JSONError(err, limit)
		}
		return Errorf(http.StatusBadRequest, "invalid_request", "The request body holds data after the JSON value.")
	}
	return nil
}

// JSONError describes a decoding error of a JSON body of at most limit bytes
// as an invalid_request error safe to show (413 when the body is too large).
func JSONError(err error, limit int64) *Error {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		te  *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: "invalid_request",
			Description: fmt.Sprintf("The request body is larger than %d bytes.", limit)}
	case errors.As(err, &se):
		return Errorf(http.StatusBadRequest, "invalid_request", "The request body is not valid JSON (at byte %d).", se.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Errorf(http.StatusBadRequest, "invalid_request", "The request body is empty or cut short.")
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the body"
		}
		return &Error{Status: http.StatusBadRequest, Code: "invalid_request",
			Description: fmt.Sprintf("%s must be of type %s.", field, te.Type.String()), Details: []string{field}}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &Error{Status: http.StatusBadRequest, Code: "invalid_request",
			Description: fmt.Sprintf("Unknown member %q.", field), Details: []string{field}}
	default:
		return &Error{Status: http.StatusBadRequest, Code: "invalid_request", Description: "The request body is not valid.", Cause: err}
	}
}
