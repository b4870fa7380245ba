package signing

import (
	"fmt"
	"net/http"

	"github.com/latchkey/latchkey/internal/httpx"
)

// PathJWKS is where the JWKS is served; OpenID discovery's jwks_uri points here.
const PathJWKS = "/.well-known/jwks.json"

// ServeJWKS answers the public keys of every published key (RFC 7517
// section 5). Verifiers may cache the answer for CacheMaxAge, which is
// short beside the publish-ahead time: a cached set always holds a key
// before the key signs.
func (k *Keys) ServeJWKS(w http.ResponseWriter, r *http.Request) error {
	set, err := k.JWKS(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(k.CacheMaxAge().Seconds())))
	httpx.WriteJSON(w, http.StatusOK, set)
	return nil
}
