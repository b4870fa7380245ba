// Package api embeds the OpenAPI 3.1 description of latchkey's interface.
package api

import _ "embed"

// OpenAPI is api/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
