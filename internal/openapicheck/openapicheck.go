// Package openapicheck lets tests check HTTP responses against api/openapi.yaml,
// so the document and the service cannot drift apart unnoticed.
package openapicheck

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/latchkey/latchkey/api"
)

// canonical is the server URL the document is matched against; requests to
// any test server are rewritten to it.
const canonical = "http://latchkey.test"

var (
	once    sync.Once
	doc     *openapi3.T
	router  routers.Router
	loadErr error
)

// Load parses and validates the document once per test binary.
func Load() (routers.Router, error) {
	once.Do(func() {
		// The hosted pages answer HTML, which the document describes as a
		// string: the status and content type are checked, not the markup.
		openapi3filter.RegisterBodyDecoder("text/html", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef,
			_ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(body)
			return string(b), err
		})
		loader := openapi3.NewLoader()
		var err error
		doc, err = loader.LoadFromData(api.OpenAPI)
		if err != nil {
			loadErr = err
			return
		}
		if err = doc.Validate(context.Background()); err != nil {
			loadErr = err
			return
		}
		doc.Servers = openapi3.Servers{{URL: canonical}}
		router, loadErr = legacy.NewRouter(doc)
	})
	return router, loadErr
}

// Members lists the property names of the named component schema, sorted,
// so a test can ask an answer for every member the document promises.
func Members(t testing.TB, schema string) []string {
	t.Helper()
	if _, err := Load(); err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	ref := doc.Components.Schemas[schema]
	if ref == nil || ref.Value == nil {
		t.Fatalf("api/openapi.yaml has no schema %s", schema)
	}
	names := make([]string, 0, len(ref.Value.Properties))
	for name := range ref.Value.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Response checks that resp (whose body was already read into body) is
// described by the document for the request req: the route exists, the
// status is listed, and the body matches its schema.
func Response(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	r, err := Load()
	if err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	u, _ := url.Parse(canonical)
	clone := req.Clone(context.Background())
	clone.URL.Scheme, clone.URL.Host, clone.Host = u.Scheme, u.Host, u.Host
	clone.Body = http.NoBody
	route, params, err := r.FindRoute(clone)
	if err != nil {
		t.Errorf("api/openapi.yaml has no operation for %s %s: %v", req.Method, req.URL.Path, err)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: clone, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s -> %d does not match api/openapi.yaml: %v", req.Method, req.URL.Path, resp.StatusCode, err)
	}
}

// Do sends req with c, reads the body, checks the response against the
// document and returns both.
func Do(t testing.TB, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	Response(t, req, resp, body)
	return resp, body
}
