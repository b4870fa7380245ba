package mail

import (
	"bytes"
	"errors"
	"net/mail"
	"strings"
	"testing"
	"time"
)

func TestCheckAddressRefusesInjection(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"jane@example.com", true},
		{"jane.doe+tag@sub.example.org", true},
		{"", false},
		{"jane@example.com\r\nBcc: evil@example.com", false},
		{"jane@example.com\nBcc: evil@example.com", false},
		{"Jane <jane@example.com>", false},
		{"jane@example.com, evil@example.com", false},
		{"jane@example.com>\r\nX: y", false},
		{"no-at-sign", false},
		{strings.Repeat("a", 250) + "@example.com", false},
	} {
		if err := CheckAddress(tc.addr); (err == nil) != tc.ok {
			t.Errorf("CheckAddress(%q) = %v, want ok %v", tc.addr, err, tc.ok)
		}
	}
}

// No CR or LF from a name or a subject reaches a header of its own.
func TestEncodeKeepsNamesAndSubjectsInTheirHeader(t *testing.T) {
	m := Message{To: "jane@example.com", ToName: "Jane\r\nBcc: evil@example.com", Subject: "Hi\r\nBcc: evil@example.com\n\nbody",
		Text: "text", HTML: "<p>html</p>"}
	raw, err := m.Encode("noreply@example.com", "id-1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.Header.Get("Bcc"); got != "" {
		t.Errorf("a Bcc header was injected: %q", got)
	}
	head := raw[:bytes.Index(raw, []byte("\r\n\r\n"))]
	for _, line := range strings.Split(string(head), "\r\n") {
		if strings.HasPrefix(strings.ToLower(line), "bcc") {
			t.Errorf("header line %q", line)
		}
	}
	to, err := mail.ParseAddress(msg.Header.Get("To"))
	if err != nil || to.Address != "jane@example.com" {
		t.Errorf("To %q: %v", msg.Header.Get("To"), err)
	}
	if _, err := (Message{To: "jane@example.com\r\nBcc: x@example.com"}).Encode("noreply@example.com", "id", time.Now()); !errors.Is(err, ErrBadAddress) {
		t.Errorf("a recipient with CR/LF: %v, want ErrBadAddress", err)
	}
	if id := msg.Header.Get("Message-ID"); id != "<id-1@example.com>" {
		t.Errorf("Message-ID %q", id)
	}
}
