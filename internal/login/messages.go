package login

import (
	"slices"
	"strings"
)

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
		"end_session.title":              "Sign out?",
		"end_session.lead":               "An application asks to sign you out.",
		"end_session.confirm":            "Sign out",
		"error.redirect":                 "The application asked to send you to an address that is not allowed.",
		"login.forgot":                   "Forgot your password?",
		"login.signup":                   "Create an account",
		"login.not_activated":            "Activate your account first: follow the link in the mail we sent you.",
		"journey.back":                   "Back to sign in",
		"journey.signin":                 "Sign in",
		"journey.throttled.title":        "Too many requests",
		"journey.throttled":              "Too many requests. Wait a few minutes and try again.",
		"forgot.title":                   "Reset your password",
		"forgot.lead":                    "Enter the email address of your account. We will mail you a link to choose a new password.",
		"forgot.submit":                  "Send the link",
		"forgot.sent.title":              "Check your mail",
		"forgot.sent":                    "If an account uses this address, a link to reset its password is on its way. It is valid for one hour.",
		"reset.title":                    "Choose a new password",
		"reset.lead":                     "Your new password signs you out everywhere else.",
		"reset.password":                 "New password",
		"reset.confirm":                  "Repeat the new password",
		"reset.hint":                     "Use a long password that you use nowhere else.",
		"reset.submit":                   "Save the password",
		"reset.mismatch":                 "The two passwords are not the same.",
		"reset.done.title":               "Password changed",
		"reset.done":                     "Your password was changed and every other session was signed out.",
		"link.expired.title":             "This link has expired",
		"link.expired":                   "The link is too old. Ask for a new one.",
		"link.used.title":                "This link was already used",
		"link.used":                      "Each link works once. Ask for a new one if you still need it.",
		"link.invalid.title":             "This link is not valid",
		"link.invalid":                   "The link is incomplete or not valid. Copy the whole link from the mail, or ask for a new one.",
		"link.new":                       "Ask for a new link",
		"signup.title":                   "Create an account",
		"signup.email_confirm":           "Repeat the email address",
		"signup.first_name":              "First name",
		"signup.last_name":               "Last name",
		"signup.phone":                   "Mobile number",
		"signup.phone_confirm":           "Repeat the mobile number",
		"signup.birth_date":              "Date of birth",
		"signup.optional":                "optional",
		"signup.submit":                  "Create the account",
		"signup.fix":                     "Check the fields marked below.",
		"signup.have_account":            "Have an account?",
		"signup.check_mail.title":        "Check your mail",
		"signup.check_mail":              "We sent a link to your address. Follow it to activate your account, then sign in.",
		"signup.done.title":              "Account created",
		"signup.done":                    "You can now sign in with your email address and password.",
		"activate.title":                 "Activate your account",
		"activate.lead":                  "Confirm to activate your account.",
		"activate.submit":                "Activate",
		"invitation.title":               "Accept the invitation",
		"invitation.lead":                "Choose a password for your account.",
		"invitation.submit":              "Accept and save the password",
		"activate.done.title":            "Account activated",
		"activate.done":                  "Your account is ready. Sign in to continue.",
		"resend.title":                   "Send a new activation link",
		"resend.lead":                    "Enter the email address of your account. We will mail you a new link.",
		"resend.submit":                  "Send a new link",
		"resend.sent.title":              "Check your mail",
		"resend.sent":                    "If this address waits for activation, a new link is on its way.",
		"home.lead":                      "An OAuth 2.0 authorization server. Clients find its endpoints in the discovery documents:",
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
		"end_session.title":              "Uitloggen?",
		"end_session.lead":               "Een applicatie vraagt u uit te loggen.",
		"end_session.confirm":            "Uitloggen",
		"error.redirect":                 "De applicatie wilde u naar een adres sturen dat niet is toegestaan.",
		"login.forgot":                   "Wachtwoord vergeten?",
		"login.signup":                   "Account aanmaken",
		"login.not_activated":            "Activeer eerst uw account: volg de link in de mail die we u stuurden.",
		"journey.back":                   "Terug naar inloggen",
		"journey.signin":                 "Inloggen",
		"journey.throttled.title":        "Te veel verzoeken",
		"journey.throttled":              "Te veel verzoeken. Wacht een paar minuten en probeer het opnieuw.",
		"forgot.title":                   "Wachtwoord opnieuw instellen",
		"forgot.lead":                    "Voer het e-mailadres van uw account in. We mailen u een link om een nieuw wachtwoord te kiezen.",
		"forgot.submit":                  "Link versturen",
		"forgot.sent.title":              "Kijk in uw mail",
		"forgot.sent":                    "Als een account dit adres gebruikt, is er een link onderweg. Die is een uur geldig.",
		"reset.title":                    "Kies een nieuw wachtwoord",
		"reset.lead":                     "Met uw nieuwe wachtwoord wordt u overal elders uitgelogd.",
		"reset.password":                 "Nieuw wachtwoord",
		"reset.confirm":                  "Herhaal het nieuwe wachtwoord",
		"reset.hint":                     "Gebruik een lang wachtwoord dat u nergens anders gebruikt.",
		"reset.submit":                   "Wachtwoord opslaan",
		"reset.mismatch":                 "De twee wachtwoorden zijn niet gelijk.",
		"reset.done.title":               "Wachtwoord gewijzigd",
		"reset.done":                     "Uw wachtwoord is gewijzigd en alle andere sessies zijn uitgelogd.",
		"link.expired.title":             "Deze link is verlopen",
		"link.expired":                   "De link is te oud. Vraag een nieuwe aan.",
		"link.used.title":                "Deze link is al gebruikt",
		"link.used":                      "Elke link werkt één keer. Vraag een nieuwe aan als u die nog nodig heeft.",
		"link.invalid.title":             "Deze link is niet geldig",
		"link.invalid":                   "De link is onvolledig of ongeldig. Kopieer de hele link uit de mail, of vraag een nieuwe aan.",
		"link.new":                       "Nieuwe link aanvragen",
		"signup.title":                   "Account aanmaken",
		"signup.email_confirm":           "Herhaal het e-mailadres",
		"signup.first_name":              "Voornaam",
		"signup.last_name":               "Achternaam",
		"signup.phone":                   "Mobiel nummer",
		"signup.phone_confirm":           "Herhaal het mobiele nummer",
		"signup.birth_date":              "Geboortedatum",
		"signup.optional":                "optioneel",
		"signup.submit":                  "Account aanmaken",
		"signup.fix":                     "Controleer de gemarkeerde velden.",
		"signup.have_account":            "Heeft u een account?",
		"signup.check_mail.title":        "Kijk in uw mail",
		"signup.check_mail":              "We stuurden een link naar uw adres. Volg die om uw account te activeren en log dan in.",
		"signup.done.title":              "Account aangemaakt",
		"signup.done":                    "U kunt nu inloggen met uw e-mailadres en wachtwoord.",
		"activate.title":                 "Activeer uw account",
		"activate.lead":                  "Bevestig om uw account te activeren.",
		"activate.submit":                "Activeren",
		"invitation.title":               "Uitnodiging aannemen",
		"invitation.lead":                "Kies een wachtwoord voor uw account.",
		"invitation.submit":              "Aannemen en wachtwoord opslaan",
		"activate.done.title":            "Account geactiveerd",
		"activate.done":                  "Uw account is klaar. Log in om verder te gaan.",
		"resend.title":                   "Nieuwe activatielink versturen",
		"resend.lead":                    "Voer het e-mailadres van uw account in. We mailen u een nieuwe link.",
		"resend.submit":                  "Nieuwe link versturen",
		"resend.sent.title":              "Kijk in uw mail",
		"resend.sent":                    "Als dit adres op activatie wacht, is er een nieuwe link onderweg.",
		"home.lead":                      "Een OAuth 2.0-autorisatieserver. Clients vinden de endpoints in de discovery-documenten:",
	},
}

// Languages are the language codes the pages have texts in, English first.
func Languages() []string {
	out := []string{"en"}
	for l := range messages {
		if l != "en" && !strings.Contains(l, "_") {
			out = append(out, l)
		}
	}
	slices.Sort(out[1:])
	return out
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
