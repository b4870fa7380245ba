// Package mail sends latchkey's mails: messages built from templates, a
// durable outbox in the store (written in the transaction of the change
// that causes the mail, sent behind by whichever instance claims it), and
// an SMTP sender.
package mail

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"time"
	"unicode"
)

// Message is one mail before it is encoded.
type Message struct {
	To      string // the address alone
	ToName  string // display name; control characters are dropped
	Subject string
	Text    string
	HTML    string // "" for a text-only mail
}

// ErrBadAddress: an address that cannot be a mail's recipient or sender.
var ErrBadAddress = errors.New("mail: not a valid address")

// MaxAddressLength is RFC 5321's limit of a forward path.
const MaxAddressLength = 254

// CheckAddress accepts a bare address (local@domain) with no display
// name, comments, CR, LF or other control characters, so that nothing a
// person typed can add a header or a recipient.
func CheckAddress(addr string) error {
	if addr == "" || len(addr) > MaxAddressLength || strings.ContainsFunc(addr, unicode.IsControl) ||
		strings.ContainsAny(addr, " <>,;\"()") {
		return ErrBadAddress
	}
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Address != addr || a.Name != "" {
		return ErrBadAddress
	}
	return nil
}

// headerText makes s safe for a header: control characters (CR, LF among
// them) become spaces, and non-ASCII text is encoded (RFC 2047).
func headerText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return mime.QEncoding.Encode("utf-8", strings.TrimSpace(s))
}

// Encode renders m as an RFC 5322 message from from, with id as its
// Message-ID (receivers can drop a duplicate by it) and date as its Date.
func (m Message) Encode(from, id string, date time.Time) ([]byte, error) {
	if err := CheckAddress(from); err != nil {
		return nil, fmt.Errorf("from %q: %w", from, err)
	}
	if err := CheckAddress(m.To); err != nil {
		return nil, err
	}
	to := m.To
	if name := strings.TrimSpace(strings.Map(dropControl, m.ToName)); name != "" {
		to = (&mail.Address{Name: name, Address: m.To}).String()
	}
	domain := from[strings.LastIndexByte(from, '@')+1:]
	var b bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	header("From", from)
	header("To", to)
	header("Subject", headerText(m.Subject))
	header("Date", date.UTC().Format(time.RFC1123Z))
	header("Message-ID", "<"+id+"@"+domain+">")
	header("MIME-Version", "1.0")
	header("Auto-Submitted", "auto-generated") // RFC 3834: no auto-replies to these
	if m.HTML == "" {
		header("Content-Type", `text/plain; charset="utf-8"`)
		header("Content-Transfer-Encoding", "quoted-printable")
		b.WriteString("\r\n")
		writeQP(&b, m.Text)
		return b.Bytes(), nil
	}
	boundary := randomBoundary()
	header("Content-Type", `multipart/alternative; boundary="`+boundary+`"`)
	b.WriteString("\r\n")
	for _, part := range []struct{ typ, body string }{{"text/plain", m.Text}, {"text/html", m.HTML}} {
		b.WriteString("--" + boundary + "\r\n")
		header("Content-Type", part.typ+`; charset="utf-8"`)
		header("Content-Transfer-Encoding", "quoted-printable")
		b.WriteString("\r\n")
		writeQP(&b, part.body)
		b.WriteString("\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return b.Bytes(), nil
}

func dropControl(r rune) rune {
	if unicode.IsControl(r) {
		return -1
	}
	return r
}

// writeQP writes body quoted-printable with CRLF line ends.
func writeQP(b *bytes.Buffer, body string) {
	body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n")
	w := quotedprintable.NewWriter(b)
	_, _ = w.Write([]byte(body)) // a bytes.Buffer does not fail
	_ = w.Close()
}

func randomBoundary() string {
	var r [16]byte
	_, _ = rand.Read(r[:])
	return "lk-" + hex.EncodeToString(r[:])
}
