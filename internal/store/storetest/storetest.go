// Package storetest is the conformance suite every store backend runs (in the
// style of Dex's storage/conformance): each backend's test calls RunTests and
// RunConcurrencyTests with a function that opens a fresh, empty store.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// NewStore opens a fresh, migrated, empty store and closes it when t ends.
type NewStore func(t *testing.T) store.Store

// RunTests runs the behavioural conformance tests.
func RunTests(t *testing.T, newStore NewStore) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, store.Store)
	}{
		{"ClientRoundTrip", testClientRoundTrip},
		{"ClientUpsertKeepsCreatedAt", testClientUpsert},
		{"ClientNotFound", testClientNotFound},
		{"ClientList", testClientList},
		{"AssertionIDs", testAssertionIDs},
		{"PersonRoundTripAndEmailCase", testPersons},
		{"PersonConflicts", testPersonConflicts},
		{"PersonIdentities", testIdentities},
		{"GrantAndTokens", testGrantAndTokens},
		{"RefreshReadFindsTokenGrantAndPerson", testRefreshReadFindsTokenGrantAndPerson},
		{"RevokeGrantRevokesTokens", testRevokeGrant},
		{"TokenGrantReadsSeeWrites", testTokenGrantReadsSeeWrites},
		{"RefreshTokenSingleUse", testRefreshSingleUse},
		{"UsageLimit", testUsageLimit},
		{"UseAndItsEventCommitTogether", testUseAndItsEventCommitTogether},
		{"AuthCodeSingleUse", testAuthCodeSingleUse},
		{"AuthRequestsAndSessions", testAuthRequestsAndSessions},
		{"Consents", testConsents},
		{"Throttle", testThrottle},
		{"Events", testEvents},
		{"EventCountFollowsDeletions", testEventCountFollowsDeletions},
		{"EventPageAgrees", testEventPageAgrees},
		{"SeedFingerprint", testSeedFingerprint},
		{"DeleteExpired", testDeleteExpired},
		{"Scopes", testScopes},
		{"ScopeReadsSeeWrites", testScopeReadsSeeWrites},
		{"DeviceCodes", testDeviceCodes},
		{"SetDevicePoll", testSetDevicePoll},
		{"ConfigUnits", testConfigUnits},
		{"ServerKeys", testServerKeys},
		{"SigningKeys", testSigningKeys},
		{"RetireSigningKey", testRetireSigningKey},
		{"TxCommit", testTxCommit},
		{"TxRollbackOnError", testTxRollback},
		{"TxRollbackOnPanic", testTxPanic},
		{"SavepointKeepsTheRest", testSavepoint},
		{"TxInsertsOnly", testTxInsertsOnly},
		{"RevokePerson", testRevokePerson},
		{"RevokeAccessToken", testRevokeAccessToken},
		{"RevokeRefreshToken", testRevokeRefreshToken},
		{"DeletePerson", testDeletePerson},
		{"Outbox", testOutbox},
		{"PersonTokens", testPersonTokens},
		{"BlockEndsPersonTokens", testBlockEndsPersonTokens},
		{"ClientWrites", testClientWrites},
		{"DeleteClientRevokes", testDeleteClientRevokes},
		{"PersonLists", testPersonLists},
		{"ErasePerson", testErasePerson},
		{"FederationStates", testFederationStates},
		{"FindIdentity", testFindIdentity},
		{"IdentityAttributes", testIdentityAttributes},
		{"SessionUpstream", testSessionUpstream},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

// RunConcurrencyTests runs the races that single-use and counting rely on.
func RunConcurrencyTests(t *testing.T, newStore NewStore) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, store.Store)
	}{
		{"AssertionIDRace", testAssertionIDRace},
		{"ConfigUnitRace", testConfigUnitRace},
		{"AuthCodeRace", testAuthCodeRace},
		{"CodeExchangeUsesOnceWithItsPerson", testCodeExchangeUsesOnceWithItsPerson},
		{"RefreshTokenRace", testRefreshRace},
		{"UsageLimitRace", testUsageLimitRace},
		{"UsesWithEventsKeepTheLimit", testUsesWithEventsKeepTheLimit},
		{"ThrottleRace", testThrottleRace},
		{"UpsertClientRace", testUpsertClientRace},
		{"CreatePersonRace", testCreatePersonRace},
		{"LinkIdentityRace", testLinkIdentityRace},
		{"TxIsolationRace", testTxIsolationRace},
		{"CreateScopeRace", testCreateScopeRace},
		{"DeviceCodeRace", testDeviceCodeRace},
		{"RevocationRace", testRevocationRace},
		{"RevokeAccessTokenRace", testRevokeAccessTokenRace},
		{"RevokeRefreshTokenRace", testRevokeRefreshTokenRace},
		{"ServerKeyRace", testServerKeyRace},
		{"SigningKeyRace", testSigningKeyRace},
		{"RevokePersonRace", testRevokePersonRace},
		{"OutboxClaimRace", testOutboxClaimRace},
		{"PersonTokenRace", testPersonTokenRace},
		{"BlockVsLinkRace", testBlockVsLinkRace},
		{"UpdateClientRace", testUpdateClientRace},
		{"DeleteClientDuringIssuance", testDeleteClientDuringIssuance},
		{"FederationStateRace", testFederationStateRace},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

// t0 has microsecond precision, as stores keep; non-UTC zones must come back UTC.
var t0 = time.Now().Truncate(time.Microsecond).In(time.FixedZone("CET", 3600))

func ctx() context.Context { return context.Background() }
