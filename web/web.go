// Package web holds the hosted pages' templates and static assets, embedded
// in the binary. An operator can override any of them from a folder
// (templates_dir); templates are parsed and checked at start.
package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"
)

//go:embed templates/*.html static/*
var embedded embed.FS

// Pages are the page templates every Templates must define.
var Pages = []string{"login.html", "consent.html", "error.html", "device_code.html", "device_consent.html", "device_status.html", "demo.html", "totp.html", "logout.html",
	"forgot.html", "reset.html", "notice.html", "signup.html", "home.html", "end_session.html", "stepup.html", "email_code.html", "ldap.html"}

// Templates renders the hosted pages.
type Templates struct {
	dir string // override folder; "" for none
	mu  sync.RWMutex
	set map[string]*template.Template
}

// Load parses the embedded templates, each overridden by a file of the same
// name in dir when dir is set.
func Load(dir string) (*Templates, error) {
	t := &Templates{dir: dir}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// Reload parses the templates again (POST /api/config/extension/reload).
// On error the previous templates stay in use.
func (t *Templates) Reload() error {
	read := func(name string) ([]byte, error) {
		if t.dir != "" {
			b, err := os.ReadFile(path.Join(t.dir, name))
			if err == nil {
				return b, nil
			}
			if !os.IsNotExist(err) {
				return nil, err
			}
		}
		return embedded.ReadFile("templates/" + name)
	}
	layout, err := read("layout.html")
	if err != nil {
		return fmt.Errorf("templates: layout.html: %w", err)
	}
	set := map[string]*template.Template{}
	for _, name := range Pages {
		body, err := read(name)
		if err != nil {
			return fmt.Errorf("templates: %s: %w", name, err)
		}
		tpl, err := template.New("layout.html").Parse(string(layout))
		if err == nil {
			_, err = tpl.New(name).Parse(string(body))
		}
		if err != nil {
			return fmt.Errorf("templates: %s: %w", name, err)
		}
		set[name] = tpl
	}
	t.mu.Lock()
	t.set = set
	t.mu.Unlock()
	return nil
}

// Render executes page with data into w. It renders into a buffer first so a
// template error never leaves half a page.
func (t *Templates) Render(w io.Writer, page string, data any) error {
	t.mu.RLock()
	tpl := t.set[page]
	t.mu.RUnlock()
	if tpl == nil {
		return fmt.Errorf("templates: no page %q", page)
	}
	var buf bytes.Buffer
	if err := tpl.ExecuteTemplate(&buf, "layout.html", data); err != nil {
		return err
	}
	_, err := buf.WriteTo(w)
	return err
}

// Static is the static assets folder (CSS), to be served under /static/.
func Static() fs.FS {
	sub, err := fs.Sub(embedded, "static")
	if err != nil {
		panic(err) // the folder is embedded: cannot happen
	}
	return sub
}
