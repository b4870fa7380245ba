package events

import (
	"testing"
)

func TestDisplayName(t *testing.T) {
	if got := DisplayName("TOKEN_REQUEST_ACCESS_TOKEN_CREATED"); got != "Token Request Access Token Created" {
		t.Errorf("%q", got)
	}
}
