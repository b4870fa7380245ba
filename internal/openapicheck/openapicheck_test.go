package openapicheck

import "testing"

func TestDocumentIsValid(t *testing.T) {
	if _, err := Load(); err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
}
