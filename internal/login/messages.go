package login

import "strings"

// messages are the built-in page texts per language; the identity-management
// configuration's custom_messages will override them.
var messages = map[string]map[string]string{
	"en": {
		"login.title":                    "Sign in",
		"login.lead":                     "to continue to",
		"login.email":                    "Email address",
		"login.password":                 "Password",
		"login.submit":                   "Sign in",
		"login.step_up":                  "This application needs you to sign in again.",
		"totp.title":                     "Enter your code",
		"totp.lead":                      "Open your authenticator app and enter the 6-digit code for",
		"totp.code":                      "Code",
		"totp.submit":                    "Verify",
		"totp.wrong":                     "That code is wrong or was already used. Enter the current code.",
		"consent.title":                  "Allow access?",
		"consent.lead":                   "asks for permission to:",
		"consent.signed_in_as":           "Signed in as",
		"consent.allow":                  "Allow",
		"consent.deny":                   "Deny",
		"error.title":                    "Something went wrong",
		"error.hint":                     "Go back to the application and start again.",
		"error.expired":                  "This sign-in request has expired or was already used. Go back to the application and start again.",
		"error.csrf":                     "The form has expired. Reload the page and try again.",
		"device.title":                   "Connect a device",
		"device.lead":                    "Enter the code shown on your device.",
		"device.code":                    "Code",
		"device.submit":                  "Continue",
		"device.confirm":                 "Confirm",
		"device.throttled":               "Too many wrong codes. Wait a few minutes and try again.",
		"device.consent_lead":            "on the device showing code",
		"device.status.approved.title":   "Device connected",
		"device.status.approved":         "You can return to your device.",
		"device.status.denied.title":     "Access denied",
		"device.status.denied":           "The device was not given access.",
		"device.status.expired.title":    "Code expired",
		"device.status.expired":          "This code has expired. Start again on your device.",
		"device.status.invalid.title":    "Unknown code",
		"device.status.invalid":          "This code is not valid. Check the code on your device.",
		"device.status.authorized.title": "Already connected",
		"device.status.authorized":       "This device was already authorized.",
		"logout.title":                   "You are signed out",
		"logout.done":                    "You can close this window.",
		"error.redirect":                 "The application asked to send you to an address that is not allowed.",
	},
	"nl": {
		"login.title":                    "Inloggen",
		"login.lead":                     "om verder te gaan naar",
		"login.email":                    "E-mailadres",
		"login.password":                 "Wachtwoord",
		"login.submit":                   "Inloggen",
		"login.step_up":                  "Deze applicatie vraagt u opnieuw in te loggen.",
		"totp.title":                     "Voer uw code in",
		"totp.lead":                      "Open uw authenticator-app en voer de 6-cijferige code in voor",
		"totp.code":                      "Code",
		"totp.submit":                    "Controleren",
		"totp.wrong":                     "Die code is onjuist of al gebruikt. Voer de huidige code in.",
		"consent.title":                  "Toegang geven?",
		"consent.lead":                   "vraagt toestemming om:",
		"consent.signed_in_as":           "Ingelogd als",
		"consent.allow":                  "Toestaan",
		"consent.deny":                   "Weigeren",
		"error.title":                    "Er ging iets mis",
		"error.hint":                     "Ga terug naar de applicatie en begin opnieuw.",
		"error.expired":                  "Dit inlogverzoek is verlopen of al gebruikt. Ga terug naar de applicatie en begin opnieuw.",
		"error.csrf":                     "Het formulier is verlopen. Laad de pagina opnieuw.",
		"device.title":                   "Apparaat koppelen",
		"device.lead":                    "Voer de code in die uw apparaat toont.",
		"device.code":                    "Code",
		"device.submit":                  "Doorgaan",
		"device.confirm":                 "Bevestigen",
		"device.throttled":               "Te veel verkeerde codes. Wacht een paar minuten en probeer het opnieuw.",
		"device.consent_lead":            "op het apparaat met code",
		"device.status.approved.title":   "Apparaat gekoppeld",
		"device.status.approved":         "U kunt terug naar uw apparaat.",
		"device.status.denied.title":     "Toegang geweigerd",
		"device.status.denied":           "Het apparaat heeft geen toegang gekregen.",
		"device.status.expired.title":    "Code verlopen",
		"device.status.expired":          "Deze code is verlopen. Begin opnieuw op uw apparaat.",
		"device.status.invalid.title":    "Onbekende code",
		"device.status.invalid":          "Deze code is niet geldig. Controleer de code op uw apparaat.",
		"device.status.authorized.title": "Al gekoppeld",
		"device.status.authorized":       "Dit apparaat was al gekoppeld.",
		"logout.title":                   "U bent uitgelogd",
		"logout.done":                    "U kunt dit venster sluiten.",
		"error.redirect":                 "De applicatie wilde u naar een adres sturen dat niet is toegestaan.",
	},
}

// Messages returns the texts for language (languageCode[_countryCode[_variant]]),
// falling back to the language code and then to English key by key.
func Messages(language string) (map[string]string, string) {
	base := messages["en"]
	lang := "en"
	for cand := language; cand != ""; {
		if m, ok := messages[cand]; ok {
			lang = strings.SplitN(cand, "_", 2)[0]
			out := make(map[string]string, len(base))
			for k, v := range base {
				out[k] = v
			}
			for k, v := range m {
				out[k] = v
			}
			return out, lang
		}
		i := strings.LastIndex(cand, "_")
		if i < 0 {
			break
		}
		cand = cand[:i]
	}
	return base, lang
}
