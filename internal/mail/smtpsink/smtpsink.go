// Package smtpsink is a tiny SMTP server for tests: it accepts every mail
// and writes it, as received, into a folder (one .eml file per message,
// written atomically). Tests run it as a separate process (cmd/smtpsink,
// built by Start), so that it can be stopped and started like a real mail
// server, and read the mails with Mails.
package smtpsink

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sync/atomic"
	"time"
)

// Serve answers SMTP on ln, writing each accepted message into dir, until
// ln is closed.
func Serve(ln net.Listener, dir string) error {
	var n atomic.Int64
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go session(c, dir, &n)
	}
}

// maxMessage bounds one message, as a real server would.
const maxMessage = 10 << 20

func session(c net.Conn, dir string, n *atomic.Int64) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	r := bufio.NewReader(c)
	reply := func(s string) { fmt.Fprintf(c, "%s\r\n", s) }
	reply("220 smtpsink ready")
	var from string
	var rcpts []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		switch verb {
		case "EHLO":
			reply("250-smtpsink")
			reply("250-8BITMIME")
			reply("250 SIZE " + fmt.Sprint(maxMessage))
		case "HELO":
			reply("250 smtpsink")
		case "MAIL":
			from, rcpts = arg(line), nil
			reply("250 OK")
		case "RCPT":
			rcpts = append(rcpts, arg(line))
			reply("250 OK")
		case "DATA":
			if from == "" || len(rcpts) == 0 {
				reply("503 need MAIL and RCPT first")
				continue
			}
			reply("354 go ahead")
			body, err := readData(r)
			if err != nil {
				return
			}
			name := fmt.Sprintf("%d-%d", time.Now().UnixNano(), n.Add(1))
			env := "X-Smtpsink-From: " + from + "\r\nX-Smtpsink-To: " + strings.Join(rcpts, ",") + "\r\n"
			if err := writeAtomic(dir, name, append([]byte(env), body...)); err != nil {
				reply("451 cannot store: " + err.Error())
				continue
			}
			reply("250 OK queued as " + name)
			from, rcpts = "", nil
		case "RSET":
			from, rcpts = "", nil
			reply("250 OK")
		case "NOOP":
			reply("250 OK")
		case "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 not implemented")
		}
	}
}

func arg(line string) string {
	_, v, _ := strings.Cut(line, ":")
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, ' '); i >= 0 {
		v = v[:i]
	}
	return strings.Trim(v, "<>")
}

// readData reads a DATA section up to the lone dot, undoing dot-stuffing.
func readData(r *bufio.Reader) ([]byte, error) {
	var b bytes.Buffer
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		if line == ".\r\n" || line == ".\n" {
			return b.Bytes(), nil
		}
		line = strings.TrimPrefix(line, ".") // dot-stuffing (RFC 5321 section 4.5.2)
		if b.Len()+len(line) > maxMessage {
			return nil, io.ErrShortBuffer
		}
		b.WriteString(line)
	}
}

func writeAtomic(dir, name string, b []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name+".eml"))
}

// Mail is one received message.
type Mail struct {
	File    string
	To      string // the envelope recipient(s)
	Header  mail.Header
	Raw     []byte
	Message *mail.Message
}

// Mails reads every message in dir, oldest first.
func Mails(dir string) ([]Mail, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Mail
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		m, err := mail.ReadMessage(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, Mail{File: n, To: m.Header.Get("X-Smtpsink-To"), Header: m.Header, Raw: b, Message: m})
	}
	return out, nil
}

// Parts returns the decoded text/plain and text/html parts of the mail.
func (m Mail) Parts() (text, html string, err error) {
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		return "", "", err
	}
	decode := func(enc string, r io.Reader) (string, error) {
		if strings.EqualFold(enc, "quoted-printable") {
			r = quotedprintable.NewReader(r)
		}
		b, err := io.ReadAll(r)
		return string(b), err
	}
	if !strings.HasPrefix(mt, "multipart/") {
		text, err = decode(m.Header.Get("Content-Transfer-Encoding"), m.Message.Body)
		return text, "", err
	}
	mr := multipart.NewReader(bytes.NewReader(m.body()), params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return text, html, nil
		}
		if err != nil {
			return "", "", err
		}
		s, err := decode(p.Header.Get("Content-Transfer-Encoding"), p)
		if err != nil {
			return "", "", err
		}
		switch {
		case strings.HasPrefix(p.Header.Get("Content-Type"), "text/plain"):
			text = s
		case strings.HasPrefix(p.Header.Get("Content-Type"), "text/html"):
			html = s
		}
	}
}

func (m Mail) body() []byte {
	if i := bytes.Index(m.Raw, []byte("\r\n\r\n")); i >= 0 {
		return m.Raw[i+4:]
	}
	return nil
}

// Link returns the first URL in the mail's text part that starts with
// prefix ("" when none).
func (m Mail) Link(prefix string) string {
	text, _, err := m.Parts()
	if err != nil {
		return ""
	}
	i := strings.Index(text, prefix)
	if i < 0 {
		return ""
	}
	end := strings.IndexAny(text[i:], " \r\n\t>")
	if end < 0 {
		return text[i:]
	}
	return text[i : i+end]
}

var codeRE = regexp.MustCompile(`(?m)^\s*([0-9]{6})\s*$`)

// Code returns the one-time code of the mail's text part: a line of six
// digits alone ("" when none).
func (m Mail) Code() string {
	text, _, err := m.Parts()
	if err != nil {
		return ""
	}
	if c := codeRE.FindStringSubmatch(text); c != nil {
		return c[1]
	}
	return ""
}
