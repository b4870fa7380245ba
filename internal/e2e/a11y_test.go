package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/journey"
	"github.com/latchkey/latchkey/internal/mail/smtpsink"
	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// auditJS looks at the page as WCAG 2.1 asks: no horizontal scrolling
// (1.4.10 reflow, at 390 px), a label for every input (1.3.1, 3.3.2), text
// contrast at least 4.5:1, or 3:1 for large text (1.4.3), input borders at
// least 3:1 against what surrounds them (1.4.11), and a focus order that
// follows the page (2.4.3: no positive tabindex, and no focusable control
// above the one before it). Colours are computed by Chromium from the CSS
// and composed over every ancestor's background. It returns the problems.
const auditJS = `(() => {
  const problems = [];
  const de = document.documentElement;
  if (de.scrollWidth > de.clientWidth) problems.push('scrolls sideways: ' + de.scrollWidth + ' > ' + de.clientWidth);
  const parse = c => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return {r: 0, g: 0, b: 0, a: 0};
    const p = m[1].split(',').map(parseFloat); return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
  const over = (fg, bg) => ({r: fg.r*fg.a + bg.r*(1-fg.a), g: fg.g*fg.a + bg.g*(1-fg.a), b: fg.b*fg.a + bg.b*(1-fg.a), a: 1});
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v/12.92 : Math.pow((v+0.055)/1.055, 2.4); };
    return 0.2126*f(c.r) + 0.7152*f(c.g) + 0.0722*f(c.b); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y)+0.05) / (Math.min(x, y)+0.05); };
  const background = el => { const chain = []; for (let e = el; e; e = e.parentElement) chain.unshift(e);
    let bg = {r: 255, g: 255, b: 255, a: 1};
    for (const e of chain) bg = over(parse(getComputedStyle(e).backgroundColor), bg);
    return bg; };
  const visible = el => { const cs = getComputedStyle(el); return cs.display !== 'none' && cs.visibility !== 'hidden' && el.getClientRects().length > 0; };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  while (walker.nextNode()) {
    const n = walker.currentNode, el = n.parentElement;
    if (!n.textContent.trim() || seen.has(el) || !visible(el)) continue;
    seen.add(el);
    const cs = getComputedStyle(el), bg = background(el);
    const r = ratio(over(parse(cs.color), bg), bg);
    const size = parseFloat(cs.fontSize), large = size >= 24 || (parseInt(cs.fontWeight) >= 700 && size >= 18.66);
    if (r < (large ? 3 : 4.5)) problems.push('text "' + n.textContent.trim().slice(0, 40) + '": contrast ' + r.toFixed(2));
  }
  for (const i of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
    const name = '#' + (i.id || i.name);
    if (!(i.labels && i.labels.length) && !i.getAttribute('aria-label')) problems.push(name + ' has no label');
    const around = background(i.parentElement);
    const r = ratio(over(parse(getComputedStyle(i).borderTopColor), around), around);
    if (r < 3) problems.push(name + ' border contrast ' + r.toFixed(2));
  }
  for (const e of document.querySelectorAll('[tabindex]')) if (parseInt(e.getAttribute('tabindex')) > 0) problems.push('positive tabindex');
  let last = -Infinity;
  for (const e of document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea')) {
    if (!visible(e)) continue;
    const top = e.getBoundingClientRect().top;
    if (top < last - 1) problems.push('focus order goes up at ' + (e.id || e.tagName));
    last = Math.max(last, top);
  }
  return JSON.stringify(problems);
})()`

// focusJS tells where the focus is: the index of the focused control
// among the page's focusable ones in document order, and the contrast of
// its focus outline against what surrounds it (WCAG 2.4.7 and 1.4.11).
const focusJS = `(() => {
  const all = [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea')]
    .filter(e => getComputedStyle(e).visibility !== 'hidden' && e.getClientRects().length > 0);
  const e = document.activeElement;
  const parse = c => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return {r: 0, g: 0, b: 0, a: 0};
    const p = m[1].split(',').map(parseFloat); return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
  const over = (fg, bg) => ({r: fg.r*fg.a + bg.r*(1-fg.a), g: fg.g*fg.a + bg.g*(1-fg.a), b: fg.b*fg.a + bg.b*(1-fg.a), a: 1});
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v/12.92 : Math.pow((v+0.055)/1.055, 2.4); };
    return 0.2126*f(c.r) + 0.7152*f(c.g) + 0.0722*f(c.b); };
  const chain = []; for (let x = e.parentElement; x; x = x.parentElement) chain.unshift(x);
  let bg = {r: 255, g: 255, b: 255, a: 1};
  for (const x of chain) bg = over(parse(getComputedStyle(x).backgroundColor), bg);
  const cs = getComputedStyle(e);
  const ring = over(parse(cs.outlineColor), bg), x = lum(ring), y = lum(bg);
  const ok = cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2;
  return JSON.stringify({count: all.length, index: all.indexOf(e), name: e.id || e.name || e.tagName,
    ratio: ok ? (Math.max(x, y)+0.05) / (Math.min(x, y)+0.05) : 0});
})()`

type focused struct {
	Count, Index int
	Name         string
	Ratio        float64
}

// tabThrough presses Tab from the page's first control to its last: each
// press must reach the next control in document order, with a focus
// outline of at least 3:1.
func tabThrough(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	where := func() focused {
		var f focused
		if err := json.Unmarshal([]byte(run(t, ctx, "focus on "+page, chromedp.Evaluate[string](focusJS))), &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	// Chromium applies autofocus at a rendering update after the load, not
	// by the time navigation returns: start once it has, or a late
	// autofocus moves the start under the first Tab.
	run(t, ctx, "autofocus on "+page, chromedp.Poll[bool](
		`(() => { const a = document.querySelector('[autofocus]'); return !a || document.activeElement === a; })()`,
		chromedp.WithPollingTimeout(stepTimeout)))
	f := where()
	for f.Index < f.Count-1 {
		prev := f.Index
		do(t, ctx, "Tab on "+page, chromedp.KeyEvent(kb.Tab))
		f = where()
		if f.Index != prev+1 {
			t.Errorf("%s: Tab went from control %d to %d (%s), want the next in the page", page, prev, f.Index, f.Name)
			return
		}
		if f.Ratio < 3 {
			t.Errorf("%s: the focus outline of %s has contrast %.2f, want 3:1", page, f.Name, f.Ratio)
		}
	}
}

const narrow = 390

func audit(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	defer tabThrough(t, ctx, page)
	var problems []string
	if err := json.Unmarshal([]byte(run(t, ctx, "audit "+page, chromedp.Evaluate[string](auditJS))), &problems); err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", page, p)
	}
}

// Every hosted page of the journeys, the login and the step-up, looked at
// in Chromium 390 px wide (a phone): see auditJS. The screenshots of the
// step-up's choice and of the device page's retry are taken here.
func TestPagesAccessibilityAt390px(t *testing.T) {
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(narrow, 844)); err != nil {
		t.Fatal(err)
	}
	sink := smtpsink.Start(t)
	app := newClientApp(t)
	cfg := testConfig(app.callbackURL())
	cfg.SMTP = sink.SMTP()
	s := servertest.Start(t, cfg, servertest.Options{Backend: "sqlite"})
	e := &journeyEnv{env: &env{backend: "sqlite", s: s, app: app, ctx: ctx}, sink: sink}
	bg := context.Background()
	level, strategy, act := int64(2), "USER_PREFERENCE", cimconfig.ActivationEmail
	err := s.App.Journeys().Config.Update(bg, []string{cimconfig.UnitFeatures, cimconfig.UnitStepUp}, func(snap *cimconfig.Snapshot) error {
		snap.Features = &cimconfig.Features{SignUpEnabled: yes(), PasswordResetEnabled: yes(),
			PersonActivation: &cimconfig.PersonActivation{Enabled: yes(), Type: &act}}
		snap.StepUp = &cimconfig.StepUp{Stategy: &strategy,
			AuthenticationMethods: &cimconfig.StepUpAuthenticationMethods{EmailAuthenticationLevel: &level}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.CreateScope(bg, store.Scope{ID: "write", AuthenticationLevel: 2}); err != nil {
		t.Fatal(err)
	}
	person, err := s.Store.GetPersonByEmail(bg, "", personEmail)
	if err != nil {
		t.Fatal(err)
	}
	sealer, _ := seal.New(servertest.Key, "totp")
	if err := s.Store.UpdatePerson(bg, person.ID, func(p store.Person) (store.Person, error) {
		p.TOTPSecret = sealer.Seal([]byte("12345678901234567890"), []byte(p.ID))
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
	invited := store.Person{ID: "5a1c0f2e-8d3b-4c6a-9e7f-1b2d3c4e5f60", Email: "invited@example.com", Status: "INVITED"}
	if err := s.Store.CreatePerson(bg, invited); err != nil {
		t.Fatal(err)
	}
	created := store.Person{ID: "6b2d1f3e-9e4c-4d7b-8f80-2c3e4d5f6071", Email: "created@example.com", FirstName: "Nina", Status: "CREATED"}
	if err := s.Store.CreatePerson(bg, created); err != nil {
		t.Fatal(err)
	}
	link := func(kind, personID string) string {
		value, hash := s.App.Journeys().Hasher.Mint(journey.LinkToken)
		now := time.Now().UTC()
		if err := s.Store.CreatePersonToken(bg, store.PersonToken{Hash: hash, Kind: kind, PersonID: personID, CreatedAt: now,
			ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		return value
	}

	oc := e.oauthConfig("web", webSecret, oauth2.AuthStyleInHeader, "read", "write")
	navigate(t, ctx, oc.AuthCodeURL("st-a11y", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	audit(t, ctx, "login")
	login(t, ctx, personEmail, "not the password")
	audit(t, ctx, "login error")
	request := run(t, ctx, "read the request id", chromedp.Evaluate[string](`document.querySelector('input[name=request]').value`))
	for _, p := range []struct{ name, path string }{
		{"sign-up", "/signup?request=" + request},
		{"forgot", "/password/forgot?request=" + request},
		{"forgot sent", "/password/forgot/sent?request=" + request},
		{"reset", "/password/reset?token=" + link(store.PersonTokenPasswordReset, person.ID)},
		{"activation", "/activate?token=" + link(store.PersonTokenActivation, created.ID)},
		{"invitation", "/activate?token=" + link(store.PersonTokenInvitation, invited.ID)},
		{"resend", "/activate/resend"},
		{"used link", "/activate?token=lk_ml_unknown"},
		{"error", "/login?request=gone"},
		{"home", "/"},
		{"device code", "/oauth/device_authorization/verification"},
	} {
		navigate(t, ctx, s.URL+p.path)
		audit(t, ctx, p.name)
	}
	fill(t, ctx, map[string]string{"user_code": "BBBB-BBBB"})
	click(t, ctx, "submit")
	audit(t, ctx, "device code retry")
	e.screenshot(t, "device-retry.png")
	navigate(t, ctx, s.URL+"/signup?request="+request)
	click(t, ctx, "submit")
	audit(t, ctx, "sign-up errors")

	navigate(t, ctx, s.URL+"/login?request="+request)
	resp := login(t, ctx, personEmail, personPass)
	expectPage(t, resp, s.URL, "/login/step-up", 200)
	audit(t, ctx, "step-up choice")
	e.screenshot(t, "stepup-choice.png")
	expectPage(t, click(t, ctx, "method-totp"), s.URL, "/login/totp", 200)
	audit(t, ctx, "TOTP")
	expectPage(t, click(t, ctx, "other"), s.URL, "/login/step-up", 200)
	expectPage(t, click(t, ctx, "method-email"), s.URL, "/login/email", 200)
	audit(t, ctx, "mailed code")
	expectPage(t, click(t, ctx, "send"), s.URL, "/login/email", 200)
	audit(t, ctx, "mailed code sent")
	code := e.mailTo(t, personEmail, "Your sign-in code").Code()
	fill(t, ctx, map[string]string{"code": code})
	expectPage(t, click(t, ctx, "submit"), s.URL, "/consent", 200)
	audit(t, ctx, "consent")
	// Signed in: the OpenID Connect logout asks first, without a hint.
	navigate(t, ctx, s.URL+"/oauth/end_session?client_id=web")
	audit(t, ctx, "logout confirmation")
	expectPage(t, click(t, ctx, "confirm"), s.URL, "/oauth/end_session", 200)
	audit(t, ctx, "signed out")
}
