package cimconfig

import (
	"net/http"
	"slices"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
)

// URLList is one of the two whitelisted-URL lists, inside its unit.
type URLList struct {
	unit string
	get  func(*Snapshot) []WhitelistedURL
	set  func(*Snapshot, []WhitelistedURL)
}

var ActionTokenURLs = URLList{
	unit: UnitFeatures,
	get: func(s *Snapshot) []WhitelistedURL {
		if s.Features == nil || s.Features.ActionToken == nil {
			return nil
		}
		return s.Features.ActionToken.WhitelistedURLs
	},
	set: func(s *Snapshot, urls []WhitelistedURL) {
		if s.Features == nil {
			s.Features = &Features{}
		}
		if s.Features.ActionToken == nil {
			s.Features.ActionToken = &ActionToken{}
		}
		s.Features.ActionToken.WhitelistedURLs = urls
	},
}

var RedirectURLs = URLList{
	unit: UnitRedirects,
	get: func(s *Snapshot) []WhitelistedURL {
		if s.Redirects == nil {
			return nil
		}
		return s.Redirects.URLWhitelist
	},
	set: func(s *Snapshot, urls []WhitelistedURL) {
		if s.Redirects == nil {
			s.Redirects = &Redirects{}
		}
		s.Redirects.URLWhitelist = urls
	},
}

func (h *Handler) ListURLs(l URLList) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		_, snap, ok, err := h.guard(w, r, v2)
		if !ok {
			return err
		}
		urls := l.get(snap)
		if urls == nil {
			urls = []WhitelistedURL{}
		}
		httpx.WriteJSON(w, http.StatusOK, WhitelistedURLs{WhitelistedURLs: urls})
		return nil
	}
}

// AddURL adds one URL ({"url": ...}) and answers it with its id; a URL
// already listed is answered as it is (adding is idempotent).
func (h *Handler) AddURL(l URLList, status int) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		agent, _, ok, err := h.guard(w, r, v2)
		if !ok {
			return err
		}
		var in WhitelistedURL
		if err := h.decode(w, r, &in); err != nil {
			return err
		}
		var p problems
		p.redirect("url", in.URL)
		if err := p.err(); err != nil {
			return badRequest(err)
		}
		var added WhitelistedURL
		err = h.Service.Update(r.Context(), []string{l.unit}, func(snap *Snapshot) error {
			urls := l.get(snap)
			if i := slices.IndexFunc(urls, func(w WhitelistedURL) bool { return w.URL == in.URL }); i >= 0 {
				added = urls[i]
				return nil
			}
			added = WhitelistedURL{ID: newID(), URL: in.URL}
			l.set(snap, append(slices.Clone(urls), added))
			return nil
		})
		if err != nil {
			return err
		}
		h.Service.record(r.Context(), r, eventFor(l.unit), agent)
		httpx.WriteJSON(w, status, added)
		return nil
	}
}

func (h *Handler) DeleteURL(l URLList) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		agent, _, ok, err := h.guard(w, r, v2)
		if !ok {
			return err
		}
		id := r.PathValue("url_id")
		err = h.Service.Update(r.Context(), []string{l.unit}, func(snap *Snapshot) error {
			urls := l.get(snap)
			i := slices.IndexFunc(urls, func(w WhitelistedURL) bool { return w.ID == id })
			if i < 0 {
				return notFound("whitelisted URL")
			}
			l.set(snap, slices.Delete(slices.Clone(urls), i, i+1))
			return nil
		})
		if err != nil {
			return err
		}
		h.Service.record(r.Context(), r, eventFor(l.unit), agent)
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}

// messagesOf returns the map of a locale variant ("default" is the default map).
func messagesOf(c *CustomMessages, locale string) map[string]string {
	if locale == "default" {
		return c.Default
	}
	return c.Locales[locale]
}

// PutMessages merges a batch of messages into one locale variant.
func (h *Handler) PutMessages(w http.ResponseWriter, r *http.Request) error {
	agent, _, ok, err := h.guard(w, r, v2)
	if !ok {
		return err
	}
	locale := r.PathValue("locale_variant")
	var batch map[string]string
	if err := h.decode(w, r, &batch); err != nil {
		return err
	}
	var p problems
	if locale != "default" {
		p.locale("locale_variant", locale)
	}
	p.messages("messages", batch)
	if err := p.err(); err != nil {
		return badRequest(err)
	}
	err = h.Service.Update(r.Context(), []string{UnitCustomMessages}, func(snap *Snapshot) error {
		c := snap.CustomMessages
		if c == nil {
			c = &CustomMessages{}
			snap.CustomMessages = c
		}
		m := messagesOf(c, locale)
		if m == nil {
			m = map[string]string{}
			if locale == "default" {
				c.Default = m
			} else {
				if c.Locales == nil {
					c.Locales = map[string]map[string]string{}
				}
				c.Locales[locale] = m
			}
		}
		for k, v := range batch {
			m[k] = v
		}
		return nil
	})
	if err != nil {
		return err
	}
	h.Service.record(r.Context(), r, events.AdminConfigUpdated, agent)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) DeleteMessage(w http.ResponseWriter, r *http.Request) error {
	agent, _, ok, err := h.guard(w, r, v2)
	if !ok {
		return err
	}
	locale, key := r.PathValue("locale_variant"), r.PathValue("message_key")
	err = h.Service.Update(r.Context(), []string{UnitCustomMessages}, func(snap *Snapshot) error {
		if snap.CustomMessages == nil {
			return notFound("message")
		}
		m := messagesOf(snap.CustomMessages, locale)
		if _, ok := m[key]; !ok {
			return notFound("message")
		}
		delete(m, key)
		return nil
	})
	if err != nil {
		return err
	}
	h.Service.record(r.Context(), r, events.AdminConfigUpdated, agent)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
