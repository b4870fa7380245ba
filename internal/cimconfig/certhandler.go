package cimconfig

import (
	"net/http"
	"slices"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
)

// Bodies of the certificate resources: {key_pair} for one, {key_pairs} for many.
type keyPairBody struct {
	KeyPair *KeyPair `json:"key_pair"`
}

type keyPairsBody struct {
	KeyPairs []KeyPair `json:"key_pairs"`
}

// seal stores a validated key pair under id, its private key sealed.
func (s *Service) seal(id string, k KeyPair, der []byte) storedKeyPair {
	st := storedKeyPair{ID: id, Name: k.Name, KeyType: k.KeyType, PublicKey: k.PublicKey}
	if der != nil {
		st.SealedPrivate = s.Keys.Seal(der, []byte(id))
	}
	return st
}

// sealAll replaces every key pair: a pair keeps the id of a stored pair of
// the same name.
func (s *Service) sealAll(pairs []KeyPair, ders [][]byte, old []storedKeyPair) []storedKeyPair {
	out := make([]storedKeyPair, 0, len(pairs))
	for i, k := range pairs {
		out = append(out, s.seal(idByName(old, k.Name), k, ders[i]))
	}
	return out
}

func idByName(pairs []storedKeyPair, name string) string {
	if i := slices.IndexFunc(pairs, func(p storedKeyPair) bool { return p.Name == name }); i >= 0 {
		return pairs[i].ID
	}
	return newID()
}

func checkUniqueNames(p *problems, pairs []KeyPair) {
	seen := map[string]bool{}
	for i, k := range pairs {
		if seen[k.Name] {
			p.add(keyPairPath(i)+".name", "%q is given twice", k.Name)
		}
		seen[k.Name] = true
	}
}

// PrivateKey opens the private key (PKCS #8 DER) of a key pair, for the
// parts of the service that sign or decrypt with it.
func (s *Service) PrivateKey(snap *Snapshot, id string) ([]byte, error) {
	i := slices.IndexFunc(snap.KeyPairs, func(p storedKeyPair) bool { return p.ID == id })
	if i < 0 || snap.KeyPairs[i].SealedPrivate == nil {
		return nil, ErrNotFound
	}
	return s.Keys.Open(snap.KeyPairs[i].SealedPrivate, []byte(id))
}

func publicPairs(pairs []storedKeyPair) []KeyPair {
	out := make([]KeyPair, 0, len(pairs))
	for _, k := range pairs {
		out = append(out, k.public())
	}
	return out
}

func (h *Handler) ListCertificates(w http.ResponseWriter, r *http.Request) error {
	_, snap, ok, err := h.guard(w, r, v2)
	if !ok {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, keyPairsBody{KeyPairs: publicPairs(snap.KeyPairs)})
	return nil
}

func (h *Handler) GetCertificate(w http.ResponseWriter, r *http.Request) error {
	_, snap, ok, err := h.guard(w, r, v2)
	if !ok {
		return err
	}
	id := r.PathValue("certificateId")
	i := slices.IndexFunc(snap.KeyPairs, func(p storedKeyPair) bool { return p.ID == id })
	if i < 0 {
		return notFound("certificate")
	}
	k := snap.KeyPairs[i].public()
	httpx.WriteJSON(w, http.StatusOK, keyPairBody{KeyPair: &k})
	return nil
}

// decodeOne reads and validates {key_pair}.
func (h *Handler) decodeOne(w http.ResponseWriter, r *http.Request) (KeyPair, []byte, error) {
	var body keyPairBody
	if err := h.decode(w, r, &body); err != nil {
		return KeyPair{}, nil, err
	}
	if body.KeyPair == nil {
		return KeyPair{}, nil, httpx.Errorf(http.StatusBadRequest, "invalid_request", "The body must hold key_pair.")
	}
	var p problems
	der := validateKeyPair(*body.KeyPair, &p, "key_pair")
	return *body.KeyPair, der, badRequest(p.err())
}

// AddCertificate adds a key pair; a name already in use is a conflict.
func (h *Handler) AddCertificate(w http.ResponseWriter, r *http.Request) error {
	agent, _, ok, err := h.guard(w, r, v2)
	if !ok {
		return err
	}
	k, der, err := h.decodeOne(w, r)
	if err != nil {
		return err
	}
	var added storedKeyPair
	err = h.Service.Update(r.Context(), []string{UnitKeyPairs}, func(snap *Snapshot) error {
		if slices.ContainsFunc(snap.KeyPairs, func(p storedKeyPair) bool { return p.Name == k.Name }) {
			return httpx.Errorf(http.StatusConflict, "conflict", "A key pair named %q exists.", k.Name)
		}
		added = h.Service.seal(newID(), k, der)
		snap.KeyPairs = append(snap.KeyPairs, added)
		return nil
	})
	if err != nil {
		return err
	}
	h.Service.record(r.Context(), r, events.AdminConfigUpdated, agent)
	pub := added.public()
	httpx.WriteJSON(w, http.StatusOK, keyPairBody{KeyPair: &pub})
	return nil
}

func (h *Handler) UpdateCertificate(w http.ResponseWriter, r *http.Request) error {
	agent, _, ok, err := h.guard(w, r, v2)
	if !ok {
		return err
	}
	id := r.PathValue("certificateId")
	k, der, err := h.decodeOne(w, r)
	if err != nil {
		return err
	}
	var updated storedKeyPair
	err = h.Service.Update(r.Context(), []string{UnitKeyPairs}, func(snap *Snapshot) error {
		i := slices.IndexFunc(snap.KeyPairs, func(p storedKeyPair) bool { return p.ID == id })
		if i < 0 {
			return notFound("certificate")
		}
		if slices.ContainsFunc(snap.KeyPairs, func(p storedKeyPair) bool { return p.Name == k.Name && p.ID != id }) {
			return httpx.Errorf(http.StatusConflict, "conflict", "A key pair named %q exists.", k.Name)
		}
		updated = h.Service.seal(id, k, der)
		snap.KeyPairs[i] = updated
		return nil
	})
	if err != nil {
		return err
	}
	h.Service.record(r.Context(), r, events.AdminConfigUpdated, agent)
	pub := updated.public()
	httpx.WriteJSON(w, http.StatusOK, keyPairBody{KeyPair: &pub})
	return nil
}

// BatchCertificates adds or updates (by name) many key pairs, all or none.
func (h *Handler) BatchCertificates(w http.ResponseWriter, r *http.Request) error {
	agent, _, ok, err := h.guard(w, r, v2)
	if !ok {
		return err
	}
	var body keyPairsBody
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	var p problems
	ders := make([][]byte, len(body.KeyPairs))
	for i, k := range body.KeyPairs {
		ders[i] = validateKeyPair(k, &p, keyPairPath(i))
	}
	checkUniqueNames(&p, body.KeyPairs)
	if len(body.KeyPairs) == 0 {
		p.add("key_pairs", "must hold at least one key pair")
	}
	if len(body.KeyPairs) > defaultKeyPairsPerSet {
		p.add("key_pairs", "at most %d key pairs", defaultKeyPairsPerSet)
	}
	if err := p.err(); err != nil {
		return badRequest(err)
	}
	var out []KeyPair
	err = h.Service.Update(r.Context(), []string{UnitKeyPairs}, func(snap *Snapshot) error {
		for i, k := range body.KeyPairs {
			st := h.Service.seal(idByName(snap.KeyPairs, k.Name), k, ders[i])
			if j := slices.IndexFunc(snap.KeyPairs, func(p storedKeyPair) bool { return p.ID == st.ID }); j >= 0 {
				snap.KeyPairs[j] = st
			} else {
				snap.KeyPairs = append(snap.KeyPairs, st)
			}
			out = append(out, st.public())
		}
		return nil
	})
	if err != nil {
		return err
	}
	h.Service.record(r.Context(), r, events.AdminConfigUpdated, agent)
	httpx.WriteJSON(w, http.StatusOK, keyPairsBody{KeyPairs: out})
	return nil
}

func (h *Handler) DeleteCertificate(w http.ResponseWriter, r *http.Request) error {
	agent, _, ok, err := h.guard(w, r, v2)
	if !ok {
		return err
	}
	id := r.PathValue("certificateId")
	err = h.Service.Update(r.Context(), []string{UnitKeyPairs}, func(snap *Snapshot) error {
		i := slices.IndexFunc(snap.KeyPairs, func(p storedKeyPair) bool { return p.ID == id })
		if i < 0 {
			return notFound("certificate")
		}
		snap.KeyPairs = slices.Delete(snap.KeyPairs, i, i+1)
		return nil
	})
	if err != nil {
		return err
	}
	h.Service.record(r.Context(), r, events.AdminConfigUpdated, agent)
	w.WriteHeader(http.StatusOK)
	return nil
}
