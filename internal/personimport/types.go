// Package personimport is the person import API (POST /api/import/persons):
// bulk creation and update of person accounts, each person atomic on its
// own, with PBKDF2 password hashes that log in and are upgraded to argon2id.
package personimport

import (
	"bytes"
	"encoding/json"
)

// Request is the spec's ImportPersonsRequest; Persons is decoded one element
// at a time (see decode.go) so that a large request is never held twice.
type Request struct {
	Persons []Person `json:"persons"`
}

// Person is the spec's ImportPerson.
type Person struct {
	Profile        *Profile        `json:"profile"`
	Status         string          `json:"status"`
	HashedPassword *HashedPassword `json:"hashed_password,omitempty"`
	StepUp         *StepUp         `json:"step_up,omitempty"`
	Identities     Identities      `json:"identities,omitempty"`
}

// Profile is the import Profile.
type Profile struct {
	ReferenceID      string      `json:"reference_id"`
	EmailAddresses   []Contact   `json:"email_addresses"`
	Gender           string      `json:"gender,omitempty"`
	Name             *Name       `json:"name,omitempty"`
	DateOfBirth      string      `json:"date_of_birth,omitempty"`
	PhoneNumbers     []Contact   `json:"phone_numbers"`
	Addresses        []Address   `json:"addresses"`
	CustomAttributes []Attribute `json:"custom_attributes"`
	PreferredLocale  string      `json:"preferred_locale,omitempty"`
}

// Name is a person's name.
type Name struct {
	FirstName   string `json:"first_name,omitempty"`
	LastName    string `json:"last_name,omitempty"`
	Initials    string `json:"initials,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
}

// Contact is an email_addresses or phone_numbers item.
type Contact struct {
	Value    string `json:"value"`
	Primary  bool   `json:"primary"`
	Verified *bool  `json:"verified,omitempty"`
}

// Address is an addresses item ("attentation" is the spec's spelling).
type Address struct {
	HouseNumber         *int   `json:"house_number,omitempty"`
	HouseNumberAddition string `json:"house_number_addition,omitempty"`
	StreetName          string `json:"street_name,omitempty"`
	City                string `json:"city,omitempty"`
	PostalCode          string `json:"postal_code,omitempty"`
	Region              string `json:"region,omitempty"`
	CountryCode         string `json:"country_code,omitempty"`
	CompanyName         string `json:"company_name,omitempty"`
	Attentation         string `json:"attentation,omitempty"`
	Primary             bool   `json:"primary,omitempty"`
}

// Attribute is a custom_attributes item.
type Attribute struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HashedPassword is a PBKDF2 hash: digest and salt in base64.
type HashedPassword struct {
	Digest         string `json:"digest"`
	Salt           string `json:"salt"`
	NrOfIterations int    `json:"nr_of_iterations"`
}

// StepUp holds the step-up credentials.
type StepUp struct {
	TOTP *TOTP `json:"totp"`
}

// TOTP is a TOTP secret in base32.
type TOTP struct {
	SecretKey string `json:"secret_key"`
}

// Identity is the spec's ExternalPersonId.
type Identity struct {
	IdPID            string `json:"idp_id"`
	ExternalPersonID string `json:"external_person_id"`
}

// Identities is "identities": the spec shows one ExternalPersonId; a list of
// them is accepted too, since a person may be linked to several providers.
type Identities []Identity

// UnmarshalJSON reads an object or an array of objects, strictly.
func (ids *Identities) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*ids = nil
		return nil
	}
	strict := func(dst any) error {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		return dec.Decode(dst)
	}
	if len(b) > 0 && b[0] == '[' {
		var list []Identity
		if err := strict(&list); err != nil {
			return err
		}
		*ids = list
		return nil
	}
	var one Identity
	if err := strict(&one); err != nil {
		return err
	}
	*ids = Identities{one}
	return nil
}

// Result is the spec's PersonsImportResult.
type Result struct {
	SuccessfulReferenceIDs []string  `json:"successful_reference_ids"`
	Failures               []Failure `json:"failures"`
}

// Failure is one person that was not imported.
type Failure struct {
	ErrorCode    int    `json:"error_code"`
	ErrorMessage string `json:"error_message"`
}

// ErrorResponse is the spec's ErrorResponse.
type ErrorResponse struct {
	ErrorCode    int    `json:"error_code"`
	ErrorMessage string `json:"error_message"`
}

// Error codes of the spec (Errors, Import API) and latchkey's own for
// request-level refusals, documented in api/openapi.yaml.
const (
	CodeFeatureDisabled  = 1001
	CodeInvalidEmail     = 1018
	CodeUnknownIdP       = 1020
	CodeNoPrimaryEmail   = 1027
	CodeIdentityCoupled  = 1052
	CodeInvitedPassword  = 8102
	CodeInactive         = 8103
	CodeUnknown          = 8104
	CodeReferenced       = 8105
	CodePersonIDRequired = 8106
	CodeBadRequest       = 4000 // latchkey: the request is not an ImportPersonsRequest, or a header is bad
	CodeRequestTooLarge  = 4013 // latchkey: more persons or bytes than allowed
)
