package web

import (
	"bytes"
	"embed"
	"fmt"
	htmltemplate "html/template"
	"os"
	"path"
	"sync"
	texttemplate "text/template"
)

//go:embed mail/*
var mailFiles embed.FS

// MailKinds are the mails latchkey sends; each has KIND.txt and KIND.html
// under mail/, overridable by templates_dir/mail/KIND.txt and .html.
var MailKinds = []string{"password_reset", "password_changed", "activation", "invitation", "welcome",
	"account_removed", "email_code", "step_up"}

// MailTemplates renders the text and HTML bodies of mails.
type MailTemplates struct {
	dir  string
	mu   sync.RWMutex
	text map[string]*texttemplate.Template
	html map[string]*htmltemplate.Template
}

// LoadMail parses the mail templates (embedded, each overridden by a file
// in dir/mail when dir is set).
func LoadMail(dir string) (*MailTemplates, error) {
	m := &MailTemplates{dir: dir}
	return m, m.Reload()
}

// Reload parses the templates again; on error the old ones stay.
func (m *MailTemplates) Reload() error {
	read := func(name string) ([]byte, error) {
		if m.dir != "" {
			b, err := os.ReadFile(path.Join(m.dir, "mail", name))
			if err == nil {
				return b, nil
			}
			if !os.IsNotExist(err) {
				return nil, err
			}
		}
		return mailFiles.ReadFile("mail/" + name)
	}
	text := map[string]*texttemplate.Template{}
	html := map[string]*htmltemplate.Template{}
	for _, k := range MailKinds {
		tb, err := read(k + ".txt")
		if err != nil {
			return fmt.Errorf("mail templates: %s.txt: %w", k, err)
		}
		if text[k], err = texttemplate.New(k + ".txt").Parse(string(tb)); err != nil {
			return fmt.Errorf("mail templates: %w", err)
		}
		hb, err := read(k + ".html")
		if err != nil {
			return fmt.Errorf("mail templates: %s.html: %w", k, err)
		}
		if html[k], err = htmltemplate.New(k + ".html").Parse(string(hb)); err != nil {
			return fmt.Errorf("mail templates: %w", err)
		}
	}
	m.mu.Lock()
	m.text, m.html = text, html
	m.mu.Unlock()
	return nil
}

// Render executes the templates of kind with data.
func (m *MailTemplates) Render(kind string, data any) (text, html string, err error) {
	m.mu.RLock()
	tt, ht := m.text[kind], m.html[kind]
	m.mu.RUnlock()
	if tt == nil || ht == nil {
		return "", "", fmt.Errorf("mail templates: no mail %q", kind)
	}
	var tb, hb bytes.Buffer
	if err := tt.Execute(&tb, data); err != nil {
		return "", "", err
	}
	if err := ht.Execute(&hb, data); err != nil {
		return "", "", err
	}
	return tb.String(), hb.String(), nil
}
