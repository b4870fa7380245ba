// Package config loads latchkey's YAML configuration (OPERATOR.md), applies
// LATCHKEY_* environment overrides and validates the result.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/mail"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"
	"gopkg.in/yaml.v3"

	"github.com/latchkey/latchkey/internal/claim"
	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/lazyre"
	"github.com/latchkey/latchkey/internal/outbound"
)

// Config is the whole operator configuration. Every key is optional.
type Config struct {
	// Issuer is the base URL that every absolute URL latchkey hands out
	// starts with (default http:// + listen).
	Issuer string `yaml:"issuer"`
	// Listen is the host:port of the public HTTP listener.
	Listen string `yaml:"listen"`
	// Database is the store: sqlite:PATH (embedded) or a postgres:// URL.
	Database string `yaml:"database"`
	// SecretKeyFile holds the server key that hashes and encrypts tokens
	// and secrets; created when absent.
	SecretKeyFile string `yaml:"secret_key_file"`
	// TemplatesDir is an optional folder whose templates override the
	// embedded ones.
	TemplatesDir string `yaml:"templates_dir"`
	// DebugListen serves Go's profiler (/debug/pprof/) on its own address,
	// never on the public one; empty (the default) serves nothing.
	DebugListen string `yaml:"debug_listen"`
	// AdminListen serves /metrics, the profiler and the API groups of
	// AdminAPIs on their own address (e.g. 127.0.0.1:9090, or an internal
	// network); the public address then answers 404 for them. Empty (the
	// default): all on the public address, the profiler only on debug_listen.
	AdminListen string `yaml:"admin_listen"`
	// AdminAPIs lists the API groups that move to admin_listen:
	// configuration, scopes, import, events (default none).
	AdminAPIs []string `yaml:"admin_apis"`
	// PasswordAuthenticationLevel is the authentication level a password
	// login reaches (scopes ask for levels; default 1).
	PasswordAuthenticationLevel int `yaml:"password_authentication_level"`
	// TOTPAuthenticationLevel is the level a password login followed by a
	// TOTP code reaches (default: the password level + 1).
	TOTPAuthenticationLevel int `yaml:"totp_authentication_level"`
	// TrustedProxies are the addresses or CIDR ranges of the reverse proxies
	// and load balancers in front of latchkey: only from them is
	// X-Forwarded-For believed, for throttling keys and events' client_ip
	// alike. events.trusted_proxies (older) still counts; both lists are
	// joined (ProxyList).
	TrustedProxies []string `yaml:"trusted_proxies"`
	// DeviceCodeLifetime is how long device and user codes live (default 10m).
	DeviceCodeLifetime Duration `yaml:"device_code_lifetime"`
	// TokenKeys is the kind of token values minted: "stamped" (they carry
	// their mint time, and the store appends their keys) or "plain" (what
	// releases before stamps read). Default: stamped on SQLite, plain on
	// PostgreSQL, where the previous release may serve the same database
	// during a rolling upgrade (docs/DEPLOY.md).
	TokenKeys         string            `yaml:"token_keys"`
	Shutdown          Shutdown          `yaml:"shutdown"`
	Metrics           Metrics           `yaml:"metrics"`
	Log               Log               `yaml:"log"`
	Introspection     Introspection     `yaml:"introspection"`
	Features          Features          `yaml:"features"`
	Events            Events            `yaml:"events"`
	Webhooks          Webhooks          `yaml:"webhooks"`
	Import            Import            `yaml:"import"`
	BreachedPasswords BreachedPasswords `yaml:"breached_passwords"`
	OIDC              OIDC              `yaml:"oidc"`
	SMTP              SMTP              `yaml:"smtp"`
	Outbound          Outbound          `yaml:"outbound"`
	// DynamicRegistration configures RFC 7591 registration at
	// /oauth/register (off by default; docs/ADMIN.md).
	DynamicRegistration DynamicRegistration `yaml:"dynamic_registration"`
	Clients             []Client            `yaml:"clients"`
	APIUsers            []APIUser           `yaml:"api_users"`
	Persons             []Person            `yaml:"persons"`

	// explicit holds the keys the file or a LATCHKEY_* variable set
	// ("oidc.key_publish_ahead", "clients[0].access_token_lifetime"), so
	// that an explicit zero is kept, not replaced by the default.
	explicit map[string]bool
	// fromEnv maps the keys a LATCHKEY_* variable set to the variable.
	fromEnv map[string]string
}

// unset reports whether d still needs its default: it is zero and neither
// the file nor the environment set key to zero (decision 0006).
func (c *Config) unset(key string, d Duration) bool {
	return d == 0 && !c.explicit[key]
}

// ProxyList is every trusted proxy: trusted_proxies joined with
// events.trusted_proxies (the union; neither takes precedence, because a
// proxy trusted for one purpose is in front of every request alike).
func (c *Config) ProxyList() []string {
	out := slices.Clone(c.TrustedProxies)
	for _, p := range c.Events.TrustedProxies {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Shutdown configures the graceful stop on SIGTERM/SIGINT (docs/DEPLOY.md).
type Shutdown struct {
	// DrainDelay is how long the instance keeps serving after the signal
	// while readiness answers 503 and responses carry Connection: close, so
	// that the load balancer takes it out of rotation before the listener
	// closes. Set it above the balancer's check (fall x interval). Default
	// 5s; "0s" closes the listener at once (no balancer in front).
	DrainDelay *Duration `yaml:"drain_delay"`
	// Timeout bounds how long requests still in flight when the listener
	// closes may take to finish (default 20s).
	Timeout Duration `yaml:"timeout"`
}

// AdminGroups are the API groups admin_apis may move to admin_listen
// (internal/server/routes.go registers each route under its group); admin
// is the admin API of clients and persons (/api/v1/clients, /api/v1/persons).
var AdminGroups = []string{"configuration", "scopes", "import", "events", "admin"}

// DynamicRegistration configures dynamic client registration (RFC 7591,
// RFC 7592; docs/ADMIN.md).
type DynamicRegistration struct {
	// Enabled serves /oauth/register.
	Enabled bool `yaml:"enabled"`
	// InitialAccessToken, when set, must be sent as a bearer token to
	// register; empty: anyone may register (throttled per address).
	InitialAccessToken string `yaml:"initial_access_token"`
}

// Outbound configures the guard of caller-supplied URLs (internal/outbound,
// docs/SECURITY.md): a jwks_uri registered through dynamic registration or
// the admin API, the URLs of login methods set through the configuration
// API. Those are fetched over https only and never on loopback,
// link-local, private or other internal addresses; URLs written in this
// file are not guarded.
type Outbound struct {
	// Allow lists the operator's exceptions: host names, IP addresses or
	// CIDR ranges that caller-supplied URLs may reach (over http too),
	// e.g. an internal test directory.
	Allow []string `yaml:"allow"`
}

// Metrics configures /metrics (docs/DEPLOY.md, "Metrics").
type Metrics struct {
	// ClientLabels adds a client_id label to the token and introspection
	// counters: one series per client, so off by default.
	ClientLabels bool `yaml:"client_labels"`
}

// Log configures the process log.
type Log struct {
	Level  string `yaml:"level"`  // debug | info | warn | error
	Format string `yaml:"format"` // text | json
}

// Events configures event recording.
type Events struct {
	// Retention removes events older than this in the background (0: keep all).
	Retention Duration `yaml:"retention"`
	// TrustedProxies is the older place of the top-level trusted_proxies;
	// its entries are joined to those (Config.ProxyList).
	TrustedProxies []string `yaml:"trusted_proxies"`
}

// Features are switches of the identity-management configuration (its
// features unit). A switch set here is written into the stored
// configuration at every start, so the file can always turn an API back
// on; a switch left out keeps what the configuration API stored (default on).
type Features struct {
	// EventsAPIEnabled turns the person events API on or off.
	EventsAPIEnabled *bool `yaml:"events_api_enabled"`
	// ConfigurationAPIEnabled turns the configuration API on or off.
	ConfigurationAPIEnabled *bool `yaml:"configuration_api_enabled"`
	// PersonAPIEnabled turns the admin API's persons (/api/v1/persons) on
	// or off.
	PersonAPIEnabled *bool `yaml:"person_api_enabled"`
}

// BreachedPasswords configures the breached-password service that the
// password policy's breached_password_blocked consults (the k-anonymity
// range protocol: only 5 hex characters of the password's SHA-1 are sent).
type BreachedPasswords struct {
	// Endpoint is the range API (default https://api.pwnedpasswords.com/range).
	Endpoint string   `yaml:"endpoint"`
	Timeout  Duration `yaml:"timeout"` // default 2s
	// FailClosed refuses passwords while the service cannot answer
	// (default: accept them, and log a warning).
	FailClosed bool `yaml:"fail_closed"`
}

// SMTP is the mail server latchkey sends through (the identity journeys:
// password reset, sign-up, activation, notifications). Without a host,
// mails wait in the outbox until one is configured.
type SMTP struct {
	Host     string `yaml:"host"`     // the SMTP server; empty: mails wait in the outbox
	Port     int    `yaml:"port"`     // default: 587 (starttls), 465 (tls), 25 (none)
	From     string `yaml:"from"`     // the sender address (required with host)
	Username string `yaml:"username"` // SMTP authentication, with password
	Password string `yaml:"password"` // SMTP authentication, with username
	TLS      string `yaml:"tls"`      // none | starttls (default) | tls
	// Timeout bounds one mail's SMTP conversation (default 30s).
	Timeout Duration `yaml:"timeout"`
	// RetryAfter is the first wait after a failed send; it doubles up to an
	// hour (default 30s).
	RetryAfter Duration `yaml:"retry_after"`
}

// Import configures the person import API (POST /api/import/persons).
type Import struct {
	// Enabled turns the API on (default true); off, it answers 503 (1001).
	Enabled *bool `yaml:"enabled"`
	// PBKDF2PRF is the PRF of imported hashed_password digests: sha256
	// (default), sha512 or sha1. The key length is the digest's own length.
	PBKDF2PRF string `yaml:"pbkdf2_prf"`
	// MaxPersons is the most persons one request may carry (default 10000);
	// more answers 413.
	MaxPersons int `yaml:"max_persons"`
	// Partitioning makes X-Vendor-Persons-Partition-Id required: each
	// import goes to that partition, and emails are unique per partition.
	Partitioning bool `yaml:"partitioning"`
}

// Introspection configures the custom members of token introspection.
type Introspection struct {
	// UserDetails maps a person attribute (email, first_name, last_name,
	// display_name, id, status, or custom.<name>) to the key it gets in user_details.
	UserDetails map[string]string `yaml:"user_details"`
	// GroupPermissionsAPI is the base URL of the person report API
	// (GET {url}/people/{person_id}/report); "" turns group policies off.
	GroupPermissionsAPI    string `yaml:"group_permissions_api"`
	GroupPermissionsLegacy bool   `yaml:"group_permissions_legacy"` // also answer the deprecated group_permissions string
	// GroupPermissionsTimeout bounds one call of the report API.
	GroupPermissionsTimeout Duration `yaml:"group_permissions_timeout"`
	// GroupPermissionsCache is how long a report is reused (0s: no cache).
	GroupPermissionsCache Duration `yaml:"group_permissions_cache"`
}

// Webhooks configures the two web hooks.
type Webhooks struct {
	AccessToken Webhook `yaml:"access_token"`
	UserDetails Webhook `yaml:"user_details"`
}

// Webhook is one web hook: requests are JSON, signed with an HMAC of Secret.
type Webhook struct {
	URL        string   `yaml:"url"`         // the hook's absolute http(s) URL; empty: no hook
	Secret     string   `yaml:"secret"`      // signs each request (HMAC); at least 16 characters
	Timeout    Duration `yaml:"timeout"`     // bounds one call (default 3s)
	FailClosed bool     `yaml:"fail_closed"` // refuse the flow when the hook fails (default: go on without it)
}

// Defaults of OPERATOR.md.
const (
	DefaultListen               = "127.0.0.1:8080"
	DefaultDatabase             = "sqlite:./latchkey-data/latchkey.db"
	DefaultSecretKeyFile        = "./latchkey-data/secret.key"
	DefaultAccessTokenLifetime  = time.Hour
	DefaultRefreshTokenLifetime = 30 * 24 * time.Hour
	// DefaultDrainDelay outlasts common balancer checks (haproxy's default
	// inter 2s x fall 3 is 6s; a Kubernetes readiness probe's 10s x 3 is
	// not, so set shutdown.drain_delay there).
	DefaultDrainDelay = 7 * time.Second
)

// Load reads the file at path (none when path is ""), applies the LATCHKEY_*
// variables of environ, fills defaults and validates.
func Load(path string, environ []string) (*Config, error) {
	c := &Config{}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if err := decode(b, c); err != nil {
			// "config.yaml line 2: unknown key foo": the file and line first.
			if strings.HasPrefix(err.Error(), "line ") {
				return nil, fmt.Errorf("config %s %w", path, err)
			}
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if err := applyEnv(c, environ); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := c.Complete(); err != nil {
		// "listen: ... is not host:port" when LATCHKEY_LISTEN set it: say so.
		key, _, _ := strings.Cut(err.Error(), ":")
		if name := c.fromEnv[key]; name != "" {
			return nil, fmt.Errorf("config: set by %s: %w", name, err)
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// Origin names where key's value came from when a LATCHKEY_* variable set
// it ("set by LATCHKEY_DATABASE"), for errors about the value; "" else.
func (c *Config) Origin(key string) string {
	if name := c.fromEnv[key]; name != "" {
		return " (set by " + name + ")"
	}
	return ""
}

func decode(b []byte, c *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true) // unknown keys are an error (OPERATOR.md)
	if err := dec.Decode(c); err != nil {
		if errors.Is(err, io.EOF) { // empty file: all defaults
			return nil
		}
		return cleanYAMLError(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return cleanYAMLError(err)
	}
	if c.explicit == nil {
		c.explicit = map[string]bool{}
	}
	setKeys(&root, "", c.explicit)
	return nil
}

// setKeys records the path of every key written in n ("smtp.timeout",
// "clients[0].access_token_lifetime").
func setKeys(n *yaml.Node, path string, into map[string]bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			setKeys(c, path, into)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if path != "" {
				p = path + "." + p
			}
			// "key:" with no value (null) leaves the key unset, as before.
			if v := n.Content[i+1]; v.Kind != yaml.ScalarNode || v.Tag != "!!null" {
				into[p] = true
			}
			setKeys(n.Content[i+1], p, into)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			setKeys(c, fmt.Sprintf("%s[%d]", path, i), into)
		}
	}
}

// unknownFieldRE is yaml.v3's message for an unknown key.
var unknownFieldRE = lazyre.New(`field (\S+) not found in type (\S+)`)

// cleanYAMLError keeps yaml.v3's messages on one line, in the words of the
// config ("line 2: unknown key listn (did you mean listen?)").
func cleanYAMLError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = m
			if sub := unknownFieldRE.FindStringSubmatch(m); sub != nil {
				repl := "unknown key $1"
				if near := closest(sub[1], keysOf(sub[2])); near != "" {
					repl += " (did you mean " + near + "?)"
				}
				msgs[i] = unknownFieldRE.ReplaceAllString(m, repl)
			}
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.ReplaceAll(msg, "\n ", ";")
	msg = strings.ReplaceAll(msg, "\n", ";")
	return errors.New(msg)
}

// Complete fills the defaults of every unset key (also of clients added in
// code, as serve --demo does) and validates the result.
func (c *Config) Complete() error {
	c.fillDefaults()
	return c.Validate()
}

func (c *Config) fillDefaults() {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Issuer == "" {
		c.Issuer = "http://" + c.Listen
	}
	c.Issuer = strings.TrimRight(c.Issuer, "/")
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.SecretKeyFile == "" {
		c.SecretKeyFile = DefaultSecretKeyFile
	}
	if c.Introspection.UserDetails == nil {
		c.Introspection.UserDetails = map[string]string{"email": "email", "first_name": "first_name",
			"last_name": "last_name", "display_name": "display_name"}
	}
	if c.unset("introspection.group_permissions_timeout", c.Introspection.GroupPermissionsTimeout) {
		c.Introspection.GroupPermissionsTimeout = Duration(2 * time.Second)
	}
	if c.unset("introspection.group_permissions_cache", c.Introspection.GroupPermissionsCache) {
		c.Introspection.GroupPermissionsCache = Duration(time.Minute)
	}
	for key, h := range map[string]*Webhook{"webhooks.access_token": &c.Webhooks.AccessToken, "webhooks.user_details": &c.Webhooks.UserDetails} {
		if c.unset(key+".timeout", h.Timeout) {
			h.Timeout = Duration(3 * time.Second)
		}
	}
	if c.PasswordAuthenticationLevel == 0 {
		c.PasswordAuthenticationLevel = 1
	}
	if c.TOTPAuthenticationLevel == 0 {
		c.TOTPAuthenticationLevel = c.PasswordAuthenticationLevel + 1
	}
	if c.BreachedPasswords.Endpoint == "" {
		c.BreachedPasswords.Endpoint = "https://api.pwnedpasswords.com/range"
	}
	if c.unset("breached_passwords.timeout", c.BreachedPasswords.Timeout) {
		c.BreachedPasswords.Timeout = Duration(2 * time.Second)
	}
	if c.unset("device_code_lifetime", c.DeviceCodeLifetime) {
		c.DeviceCodeLifetime = Duration(10 * time.Minute)
	}
	if c.Import.Enabled == nil {
		t := true
		c.Import.Enabled = &t
	}
	if c.Import.PBKDF2PRF == "" {
		c.Import.PBKDF2PRF = "sha256"
	}
	if c.Import.MaxPersons == 0 {
		c.Import.MaxPersons = 10000
	}
	if c.Shutdown.DrainDelay == nil {
		d := Duration(DefaultDrainDelay)
		c.Shutdown.DrainDelay = &d
	}
	if c.unset("shutdown.timeout", c.Shutdown.Timeout) {
		c.Shutdown.Timeout = Duration(20 * time.Second)
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.SMTP.TLS == "" {
		c.SMTP.TLS = "starttls"
	}
	if c.SMTP.Port == 0 {
		c.SMTP.Port = map[string]int{"starttls": 587, "tls": 465, "none": 25}[c.SMTP.TLS]
	}
	if c.unset("smtp.timeout", c.SMTP.Timeout) {
		c.SMTP.Timeout = Duration(30 * time.Second)
	}
	if c.unset("smtp.retry_after", c.SMTP.RetryAfter) {
		c.SMTP.RetryAfter = Duration(30 * time.Second)
	}
	if c.Log.Format == "" {
		c.Log.Format = "text"
	}
	for i := range c.Clients {
		cl := &c.Clients[i]
		if cl.TokenEndpointAuthMethod == "" {
			cl.TokenEndpointAuthMethod = client.DefaultAuthMethod(len(cl.JWKS) > 0 || cl.JWKSURI != "",
				cl.ClientSecret != "" || cl.ClientSecretHash != "")
		}
		if len(cl.GrantTypes) == 0 {
			cl.GrantTypes = client.DefaultGrantTypes()
		}
		if cl.ConsentRequired == nil {
			t := true
			cl.ConsentRequired = &t
		}
		if c.unset(fmt.Sprintf("clients[%d].access_token_lifetime", i), cl.AccessTokenLifetime) {
			cl.AccessTokenLifetime = Duration(DefaultAccessTokenLifetime)
		}
		if c.unset(fmt.Sprintf("clients[%d].refresh_token_lifetime", i), cl.RefreshTokenLifetime) {
			cl.RefreshTokenLifetime = Duration(DefaultRefreshTokenLifetime)
		}
	}
	c.OIDC.fillDefaults(c.Clients, c.unset)
}

// keysOf lists the keys of the config struct that yaml.v3 names typeName
// ("config.OIDC"), found by walking Config.
func keysOf(typeName string) []string {
	var out []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		match := t.String() == typeName
		for i := range t.NumField() {
			f := t.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if key == "" || key == "-" || !f.IsExported() {
				continue
			}
			if match {
				out = append(out, key)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Config]())
	return out
}

func isHostPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && port != ""
}

// Validate checks every value; the first problem is returned, naming its key.
func (c *Config) Validate() error {
	if err := validateIssuer(c.Issuer); err != nil {
		return fmt.Errorf("issuer: %w", err)
	}
	if !isHostPort(c.Listen) {
		return fmt.Errorf("listen: %q is not host:port", c.Listen)
	}
	if c.DebugListen != "" && !isHostPort(c.DebugListen) {
		return fmt.Errorf("debug_listen: %q is not host:port", c.DebugListen)
	}
	if c.AdminListen != "" && !isHostPort(c.AdminListen) {
		return fmt.Errorf("admin_listen: %q is not host:port", c.AdminListen)
	}
	for _, g := range c.AdminAPIs {
		if !slices.Contains(AdminGroups, g) {
			return fmt.Errorf("admin_apis: unknown group %q (want %s)", g, strings.Join(AdminGroups, ", "))
		}
	}
	if len(c.AdminAPIs) > 0 && c.AdminListen == "" {
		return errors.New("admin_apis: set admin_listen too (the address the groups move to)")
	}
	if !strings.HasPrefix(c.Database, "sqlite:") && !strings.HasPrefix(c.Database, "postgres://") &&
		!strings.HasPrefix(c.Database, "postgresql://") {
		return errors.New("database: want sqlite:PATH or a postgres:// URL")
	}
	if d := *c.Shutdown.DrainDelay; d < 0 || d > Duration(10*time.Minute) {
		return fmt.Errorf("shutdown.drain_delay: %v is not between 0s and 10m", time.Duration(d))
	}
	if c.Shutdown.Timeout < 0 || c.Shutdown.Timeout > Duration(10*time.Minute) {
		return fmt.Errorf("shutdown.timeout: %v is not between 0s and 10m", time.Duration(c.Shutdown.Timeout))
	}
	if c.TokenKeys != "" && c.TokenKeys != TokenKeysPlain && c.TokenKeys != TokenKeysStamped {
		return fmt.Errorf("token_keys: %q is not plain or stamped", c.TokenKeys)
	}
	if c.DeviceCodeLifetime < Duration(time.Minute) || c.DeviceCodeLifetime > Duration(24*time.Hour) {
		return fmt.Errorf("device_code_lifetime: %v is not between 1m and 24h", time.Duration(c.DeviceCodeLifetime))
	}
	if c.PasswordAuthenticationLevel < 0 || c.PasswordAuthenticationLevel > 100 {
		return fmt.Errorf("password_authentication_level: %d is not between 1 and 100", c.PasswordAuthenticationLevel)
	}
	switch c.Import.PBKDF2PRF {
	case "sha256", "sha512", "sha1":
	default:
		return fmt.Errorf("import.pbkdf2_prf: %q is not sha256, sha512 or sha1", c.Import.PBKDF2PRF)
	}
	if c.Import.MaxPersons < 1 || c.Import.MaxPersons > 100000 {
		return fmt.Errorf("import.max_persons: %d is not between 1 and 100000", c.Import.MaxPersons)
	}
	if c.TOTPAuthenticationLevel <= c.PasswordAuthenticationLevel || c.TOTPAuthenticationLevel > 100 {
		return fmt.Errorf("totp_authentication_level: %d is not above password_authentication_level (%d) and at most 100",
			c.TOTPAuthenticationLevel, c.PasswordAuthenticationLevel)
	}
	if c.Events.Retention < 0 {
		return errors.New("events.retention: must not be negative")
	}
	for key, list := range map[string][]string{"trusted_proxies": c.TrustedProxies, "events.trusted_proxies": c.Events.TrustedProxies} {
		for _, p := range list {
			if _, _, err := net.ParseCIDR(p); err != nil && net.ParseIP(p) == nil {
				return fmt.Errorf("%s: %q is not an address or CIDR range", key, p)
			}
		}
	}
	if _, _, err := outbound.ParseAllow(c.Outbound.Allow); err != nil {
		return fmt.Errorf("outbound.allow: %w", err)
	}
	if u := c.Introspection.GroupPermissionsAPI; u != "" && !absoluteHTTP(u) {
		return fmt.Errorf("introspection.group_permissions_api: %q is not an absolute http(s) URL", u)
	}
	// A zero timeout would mean none at all (net/http), not the default.
	if t := c.Introspection.GroupPermissionsTimeout; t <= 0 || t > Duration(time.Minute) {
		return fmt.Errorf("introspection.group_permissions_timeout: %v is not between 1ms and 1m", time.Duration(t))
	}
	if c.Introspection.GroupPermissionsCache < 0 {
		return errors.New("introspection.group_permissions_cache: must not be negative (0s: no cache)")
	}
	if t := c.BreachedPasswords.Timeout; t <= 0 || t > Duration(time.Minute) {
		return fmt.Errorf("breached_passwords.timeout: %v is not between 1ms and 1m", time.Duration(t))
	}
	if err := checkUserDetails(c.Introspection.UserDetails); err != nil {
		return err
	}
	for name, h := range map[string]Webhook{"webhooks.access_token": c.Webhooks.AccessToken, "webhooks.user_details": c.Webhooks.UserDetails} {
		if h.URL == "" {
			continue
		}
		if !absoluteHTTP(h.URL) {
			return fmt.Errorf("%s.url: %q is not an absolute http(s) URL", name, h.URL)
		}
		if len(h.Secret) < 16 {
			return fmt.Errorf("%s.secret: at least 16 characters are needed to sign requests", name)
		}
		if h.Timeout <= 0 || time.Duration(h.Timeout) > time.Minute {
			return fmt.Errorf("%s.timeout: must be between 1ms and 1m", name)
		}
	}
	if err := c.OIDC.validate(); err != nil {
		return err
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level: %q is not one of debug, info, warn, error", c.Log.Level)
	}
	if err := c.SMTP.validate(); err != nil {
		return err
	}
	if t := c.DynamicRegistration.InitialAccessToken; t != "" && len(t) < 16 {
		return errors.New("dynamic_registration.initial_access_token: at least 16 characters (a long random value)")
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		return fmt.Errorf("log.format: %q is not one of text, json", c.Log.Format)
	}
	seen := map[string]bool{}
	for i := range c.Clients {
		cl := &c.Clients[i]
		if err := cl.validate(); err != nil {
			return fmt.Errorf("clients[%d]: %w", i, err)
		}
		if seen[cl.ClientID] {
			return fmt.Errorf("clients[%d]: client_id %q is listed twice", i, cl.ClientID)
		}
		seen[cl.ClientID] = true
	}
	users := map[string]bool{}
	for i, u := range c.APIUsers {
		switch {
		case u.Username == "" || strings.ContainsAny(u.Username, ":\r\n"):
			return fmt.Errorf("api_users[%d]: username must be set and must not contain ':'", i)
		case users[u.Username]:
			return fmt.Errorf("api_users[%d]: username %q is listed twice", i, u.Username)
		case (u.Password == "") == (u.PasswordHash == ""):
			return fmt.Errorf("api_users[%d]: set exactly one of password and password_hash", i)
		case u.PasswordHash != "" && !strings.HasPrefix(u.PasswordHash, "$"):
			return fmt.Errorf("api_users[%d]: password_hash must be a PHC string ($argon2id$..., $2b$..., $pbkdf2-sha256$...)", i)
		}
		users[u.Username] = true
	}
	emails := map[string]bool{}
	for i, p := range c.Persons {
		a, err := mail.ParseAddress(p.Email)
		if err != nil || a.Address != p.Email {
			return fmt.Errorf("persons[%d]: email %q is not a valid address", i, p.Email)
		}
		if !norm.NFKC.IsNormalString(p.Email) { // identity.NormalEmail, which config cannot import
			return fmt.Errorf("persons[%d]: email %q is written with fullwidth or other compatibility characters (or decomposed accents), so it would look like another address; type it in plain characters", i, p.Email)
		}
		if emails[strings.ToLower(p.Email)] {
			return fmt.Errorf("persons[%d]: email %q is listed twice", i, p.Email)
		}
		emails[strings.ToLower(p.Email)] = true
		if p.Password == "" {
			return fmt.Errorf("persons[%d]: password must be set", i)
		}
	}
	return nil
}

func validateIssuer(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.Contains(s, "#") {
		return fmt.Errorf("%q must not have a query or fragment (RFC 8414 section 2)", s)
	}
	return nil
}

func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func (s *SMTP) validate() error {
	switch s.TLS {
	case "none", "starttls", "tls":
	default:
		return fmt.Errorf("smtp.tls: %q is not one of none, starttls, tls", s.TLS)
	}
	if s.Port < 1 || s.Port > 65535 {
		return fmt.Errorf("smtp.port: %d is not between 1 and 65535", s.Port)
	}
	if s.Timeout < Duration(time.Second) || s.Timeout > Duration(10*time.Minute) {
		return errors.New("smtp.timeout: must be between 1s and 10m")
	}
	if s.RetryAfter < Duration(time.Millisecond) || s.RetryAfter > Duration(time.Hour) {
		return errors.New("smtp.retry_after: must be between 1ms and 1h")
	}
	if s.Host == "" {
		return nil
	}
	if strings.ContainsAny(s.Host, " /:\r\n") {
		return fmt.Errorf("smtp.host: %q is not a host name or address", s.Host)
	}
	a, err := mail.ParseAddress(s.From)
	if err != nil || a.Address != s.From || strings.ContainsAny(s.From, "\r\n<> ") {
		return fmt.Errorf("smtp.from: %q is not a bare email address", s.From)
	}
	if (s.Username == "") != (s.Password == "") {
		return errors.New("smtp: set both username and password, or neither")
	}
	return nil
}

// The kinds of token values (Config.TokenKeys).
const (
	TokenKeysPlain   = "plain"
	TokenKeysStamped = "stamped"
)

// StampedTokenKeys reports whether this instance mints stamped token
// values on a store of backend ("sqlite" or "postgres").
func (c *Config) StampedTokenKeys(backend string) bool {
	return c.TokenKeys == TokenKeysStamped || c.TokenKeys == "" && backend == "sqlite"
}

// checkUserDetails checks the introspection.user_details mapping (person
// attribute -> key). The keys become claims of UserInfo and the ID token,
// so that a custom attribute can never stand in for the profile or the
// protocol (docs/SECURITY.md): no key is a protocol claim, a custom
// attribute's key is no reserved name (a standard claim, a profile
// attribute's name), and no two attributes share a key (one would win by
// chance).
func checkUserDetails(m map[string]string) error {
	attrs := slices.Sorted(maps.Keys(m))
	byKey := map[string]string{}
	for _, attr := range attrs {
		key := m[attr]
		custom := strings.HasPrefix(attr, "custom.") && len(attr) > len("custom.")
		switch {
		case attr == "email", attr == "first_name", attr == "last_name", attr == "display_name", attr == "id", attr == "status":
		case custom:
		default:
			return fmt.Errorf("introspection.user_details: unknown person attribute %q", attr)
		}
		switch {
		case key == "":
			return fmt.Errorf("introspection.user_details: %s has no key", attr)
		case claim.Protocol(key):
			return fmt.Errorf("introspection.user_details: %s: %q is a protocol claim, which only latchkey sets", attr, key)
		case custom && claim.Reserved(key):
			return fmt.Errorf("introspection.user_details: %s: %q is reserved for the profile; release a custom attribute under a name of its own", attr, key)
		case byKey[key] != "":
			return fmt.Errorf("introspection.user_details: %s and %s both map to %q", byKey[key], attr, key)
		}
		byKey[key] = attr
	}
	return nil
}
