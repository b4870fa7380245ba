package oauth

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/store"
)

const challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"

func confidential() store.Client {
	return store.Client{ID: "web", TokenEndpointAuthMethod: client.AuthClientSecretBasic,
		RedirectURIs: []string{"https://app.example/cb", "https://app.example/cb2?x=1"},
		GrantTypes:   []string{client.GrantAuthorizationCode}, Scopes: []string{"read", "write"}}
}

func public() store.Client {
	return store.Client{ID: "spa", TokenEndpointAuthMethod: client.AuthNone,
		RedirectURIs: []string{"https://spa.example/cb"},
		GrantTypes:   []string{client.GrantAuthorizationCode}, Scopes: []string{"read"}}
}

func TestParseAuthorizeRequestRefusals(t *testing.T) {
	base := "response_type=code&client_id=web&redirect_uri=https://app.example/cb&state=s1"
	tests := []struct {
		name     string
		client   store.Client
		query    string
		code     string
		redirect bool // the error goes back to the client
	}{
		{"unregistered redirect uri shows a page", confidential(), "response_type=code&redirect_uri=https://evil.example/cb", ErrInvalidRequest, false},
		{"redirect uri prefix is not a match", confidential(), "response_type=code&redirect_uri=https://app.example/cb/extra", ErrInvalidRequest, false},
		{"redirect uri required with several registered", confidential(), "response_type=code", ErrInvalidRequest, false},
		{"repeated redirect uri shows a page", confidential(), base + "&redirect_uri=https://app.example/cb", ErrInvalidRequest, false},
		{"missing response type", confidential(), "redirect_uri=https://app.example/cb&state=s1", ErrInvalidRequest, true},
		{"unknown response type", confidential(), "response_type=id_token&redirect_uri=https://app.example/cb", ErrUnsupportedResponseType, true},
		{"implicit refused unless listed", confidential(), "response_type=token&redirect_uri=https://app.example/cb", ErrUnauthorizedClient, true},
		{"repeated state", confidential(), base + "&state=s2", ErrInvalidRequest, true},
		{"scope not allowed", confidential(), base + "&scope=admin", ErrInvalidScope, true},
		{"malformed scope", confidential(), base + "&scope=re%22ad", ErrInvalidScope, true},
		{"public client needs pkce", public(), "response_type=code", ErrInvalidRequest, true},
		{"plain refused", public(), "response_type=code&code_challenge_method=plain&code_challenge=" + challenge, ErrInvalidRequest, true},
		{"absent method means plain, refused", public(), "response_type=code&code_challenge=" + challenge, ErrInvalidRequest, true},
		{"unknown method", public(), "response_type=code&code_challenge_method=S512&code_challenge=" + challenge, ErrInvalidRequest, true},
		{"short challenge", public(), "response_type=code&code_challenge_method=S256&code_challenge=abc", ErrInvalidRequest, true},
		{"method without challenge", confidential(), base + "&code_challenge_method=S256", ErrInvalidRequest, true},
		{"external idp needs the prefix", confidential(), base + "&external_idp=urn:other", ErrInvalidRequest, true},
		{"bad language", confidential(), base + "&language=english", ErrInvalidRequest, true},
		{"bad hook key", confidential(), base + "&hook_context_custom_param.a%20b=1", ErrInvalidRequest, true},
		{"oversized parameter", confidential(), base + "&app_view=" + strings.Repeat("x", 3000), ErrInvalidRequest, true},
		{"client without the code grant", store.Client{ID: "m2m", RedirectURIs: []string{"https://m.example/cb"}, GrantTypes: []string{client.GrantClientCredentials}}, "response_type=code", ErrUnauthorizedClient, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			ar, aerr := ParseAuthorizeRequest(tt.client, q)
			if aerr == nil {
				t.Fatalf("accepted: %+v", ar)
			}
			if aerr.Code != tt.code || aerr.Redirect != tt.redirect {
				t.Errorf("got %s redirect=%v (%s), want %s redirect=%v", aerr.Code, aerr.Redirect, aerr.Description, tt.code, tt.redirect)
			}
			if aerr.Redirect && aerr.RedirectURI == "" {
				t.Error("a redirect error without a redirect URI")
			}
		})
	}
}

func TestParseAuthorizeRequestKeepsEverything(t *testing.T) {
	q, _ := url.ParseQuery("response_type=code&client_id=web&redirect_uri=https://app.example/cb2?x=1&state=xyz" +
		"&scope=read%20write%20read&code_challenge_method=S256&code_challenge=" + challenge +
		"&idp=google&external_idp=urn:com:vendor:saml:idp:acme&external_idp_custom_param.k=a&external_idp_custom_param.k=b" +
		"&app_view=mobile&language=de_DE_1996&hook_context_custom_param.key2=val2&hook_context_custom_param.key2=val3" +
		"&hook_context_custom_param.key1=val1")
	ar, aerr := ParseAuthorizeRequest(confidential(), q)
	if aerr != nil {
		t.Fatal(aerr)
	}
	want := &AuthorizeRequest{
		ClientID: "web", ResponseType: "code", RedirectURI: "https://app.example/cb2?x=1", RedirectURISent: true,
		State: "xyz", Scopes: []string{"read", "write"}, CodeChallenge: challenge, CodeChallengeMethod: "S256",
		IDP: "google", ExternalIDP: "urn:com:vendor:saml:idp:acme", ExternalIDPParams: map[string][]string{"k": {"a", "b"}},
		AppView: "mobile", Language: "de_DE_1996",
		HookParams: map[string][]string{"key2": {"val2", "val3"}, "key1": {"val1"}},
	}
	if d := cmp.Diff(want, ar); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}
}

func TestParseAuthorizeRequestDefaults(t *testing.T) {
	q, _ := url.ParseQuery("response_type=code&code_challenge_method=S256&code_challenge=" + challenge)
	ar, aerr := ParseAuthorizeRequest(public(), q)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if ar.RedirectURI != "https://spa.example/cb" || ar.RedirectURISent {
		t.Errorf("the one registered redirect URI is the default: %+v", ar)
	}
	if !cmp.Equal(ar.Scopes, []string{"read"}) {
		t.Errorf("no scope means every scope of the client: %v", ar.Scopes)
	}
}

func TestCheckVerifier(t *testing.T) {
	const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk" // RFC 7636 appendix B
	s256 := store.AuthCode{CodeChallenge: challenge, CodeChallengeMethod: "S256"}
	tests := []struct {
		name     string
		code     store.AuthCode
		verifier string
		ok       bool
	}{
		{"RFC 7636 appendix B example", s256, verifier, true},
		{"wrong verifier", s256, strings.Replace(verifier, "d", "e", 1), false},
		{"missing verifier", s256, "", false},
		{"short verifier", s256, "abc", false},
		{"verifier without challenge is a downgrade", store.AuthCode{}, verifier, false},
		{"no pkce at all", store.AuthCode{}, "", true},
		{"plain", store.AuthCode{CodeChallenge: verifier, CodeChallengeMethod: "plain"}, verifier, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkVerifier(tt.code, tt.verifier); (got == "") != tt.ok {
				t.Errorf("checkVerifier = %q, want ok=%v", got, tt.ok)
			}
		})
	}
}

func FuzzParseAuthorizeRequest(f *testing.F) {
	for _, s := range []string{"response_type=code&redirect_uri=https://app.example/cb", "response_type=token",
		"hook_context_custom_param.a=1&hook_context_custom_param.a=2", "scope=%00", "code_challenge=" + challenge} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		ar, aerr := ParseAuthorizeRequest(confidential(), q)
		if aerr != nil {
			if aerr.Redirect && aerr.RedirectURI != "https://app.example/cb" && aerr.RedirectURI != "https://app.example/cb2?x=1" {
				t.Fatalf("redirects an error to an unregistered URI %q", aerr.RedirectURI)
			}
			return
		}
		if ar.RedirectURI != "https://app.example/cb" && ar.RedirectURI != "https://app.example/cb2?x=1" {
			t.Fatalf("accepted an unregistered redirect URI %q", ar.RedirectURI)
		}
	})
}
