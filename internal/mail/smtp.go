package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"strconv"
	"time"
)

// TLS modes of the SMTP connection.
const (
	TLSNone     = "none"     // plain text (a relay on the same host or network)
	TLSStartTLS = "starttls" // upgrade with STARTTLS, refuse a server without it
	TLSImplicit = "tls"      // TLS from the first byte (port 465)
)

// Sender delivers an encoded message to one recipient.
type Sender interface {
	Send(ctx context.Context, to string, msg []byte) error
}

// PermanentError is a refusal that retrying will not change (an SMTP 5xx
// reply): the outbox gives the mail up at once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// SMTP sends through one SMTP server (net/smtp).
type SMTP struct {
	Host     string
	Port     int
	From     string // envelope sender
	Username string // "" for no authentication
	Password string
	TLS      string        // TLSNone | TLSStartTLS | TLSImplicit
	Timeout  time.Duration // the whole conversation of one mail
	// TLSConfig is for tests (a server's own certificate); nil: verify the
	// server's name against the system roots.
	TLSConfig *tls.Config
}

func (s *SMTP) tlsConfig() *tls.Config {
	if s.TLSConfig != nil {
		return s.TLSConfig
	}
	return &tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}
}

// Send delivers msg to to. Every step shares one deadline, so a server that
// stops answering cannot hold the sender past Timeout.
func (s *SMTP) Send(ctx context.Context, to string, msg []byte) (err error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	d := &net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("smtp dial %s: %w", addr, err)
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if s.TLS == TLSImplicit {
		conn = tls.Client(conn, s.tlsConfig())
	}
	c, err := smtp.NewClient(conn, s.Host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp greeting: %w", classify(err))
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return classify(err)
	}
	if s.TLS == TLSStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return &PermanentError{Err: errors.New("smtp: the server does not offer STARTTLS")}
		}
		if err := c.StartTLS(s.tlsConfig()); err != nil {
			return fmt.Errorf("smtp starttls: %w", classify(err))
		}
	}
	if s.Username != "" {
		// net/smtp's PLAIN refuses to send the password unencrypted except
		// to localhost.
		if err := c.Auth(smtp.PlainAuth("", s.Username, s.Password, s.Host)); err != nil {
			return fmt.Errorf("smtp auth: %w", classify(err))
		}
	}
	if err := c.Mail(s.From); err != nil {
		return fmt.Errorf("smtp MAIL FROM: %w", classify(err))
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("smtp RCPT TO: %w", classify(err))
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp DATA: %w", classify(err))
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("smtp DATA: %w", classify(err))
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp end of DATA: %w", classify(err))
	}
	_ = c.Quit() // the message is accepted; a failed QUIT changes nothing
	return nil
}

// classify marks 5xx replies permanent.
func classify(err error) error {
	var te *textproto.Error
	if errors.As(err, &te) && te.Code >= 500 {
		return &PermanentError{Err: err}
	}
	return err
}
