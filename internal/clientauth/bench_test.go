package clientauth

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// BenchmarkAuthenticate measures each client authentication method without
// HTTP or a store: the keyed fast hash of generated secrets, the argon2id
// hash of operator-chosen secrets, and private_key_jwt signatures.
func BenchmarkAuthenticate(b *testing.B) {
	a, k, _ := setup(b)
	methods := []struct {
		name string
		req  func(i int) url.Values
		user string
		pass string
	}{
		{name: "client_secret_basic", user: "basic", pass: "s3cret:with%special&chars"},
		{name: "client_secret_post", req: func(int) url.Values {
			return url.Values{"client_id": {"post"}, "client_secret": {"post-secret-post-secret"}}
		}},
		{name: "client_secret_basic_argon2id", user: "phc", pass: "phc-secret-phc-secret"},
		{name: "private_key_jwt_ES256", req: assertions(b, k.ec, jose.ES256, "jwt")},
		{name: "private_key_jwt_RS256", req: assertions(b, k.rsa, jose.RS256, "jwt")},
	}
	for _, m := range methods {
		b.Run(m.name, func(b *testing.B) {
			forms := make([]url.Values, b.N)
			for i := range forms {
				forms[i] = url.Values{}
				if m.req != nil {
					forms[i] = m.req(i)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				r := req(forms[i], m.user, m.pass)
				b.StartTimer()
				if _, _, err := a.Authenticate(r, endpoint); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// assertions signs a fresh assertion (its own jti) per iteration, ahead of
// the timed loop: replayed assertions are refused.
func assertions(b *testing.B, key *jose.JSONWebKey, alg jose.SignatureAlgorithm, client string) func(int) url.Values {
	var n int
	return func(i int) url.Values {
		n++
		c := good(client)
		c.ID = fmt.Sprintf("jti-%s-%d-%d", alg, n, i)
		return assertionForm(sign(b, key, alg, c, true))
	}
}
