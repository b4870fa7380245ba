package mail

import (
	"maps"
	"strings"

	"github.com/latchkey/latchkey/web"
)

// texts are the built-in mail texts per language; custom_messages override
// them key by key (the default map, then the language's).
var texts = map[string]map[string]string{
	"en": {
		"mail.greeting":                 "Hello",
		"mail.minutes":                  "minutes.",
		"mail.link_expires":             "This expires in",
		"mail.ignore":                   "If you did not ask for this, you can ignore this mail.",
		"mail.password_reset.subject":   "Reset your password",
		"mail.password_reset.body":      "Someone asked to reset the password of your account. Follow this link to choose a new one:",
		"mail.password_reset.action":    "Choose a new password",
		"mail.activation.subject":       "Activate your account",
		"mail.activation.body":          "Welcome! Follow this link to activate your account:",
		"mail.activation.action":        "Activate my account",
		"mail.invitation.subject":       "You are invited",
		"mail.invitation.body":          "An account was made for you. Follow this link to accept the invitation and choose your password:",
		"mail.invitation.action":        "Accept the invitation",
		"mail.password_changed.subject": "Your password was changed",
		"mail.password_changed.body":    "The password of your account was just changed, and you were signed out everywhere. If this was not you, reset your password at once.",
		"mail.welcome.subject":          "Welcome",
		"mail.welcome.body":             "Your account is ready. You can sign in with your email address.",
		"mail.account_removed.subject":  "Your account was removed",
		"mail.account_removed.body":     "Your account and everything it held were removed.",
		"mail.email_code.subject":       "Your sign-in code",
		"mail.email_code.body":          "Enter this code to confirm that it is you:",
		"mail.step_up.subject":          "You confirmed a sign-in",
		"mail.step_up.body":             "Your account was just used with an extra verification step.",
	},
	"nl": {
		"mail.greeting":                 "Hallo",
		"mail.minutes":                  "minuten.",
		"mail.link_expires":             "Dit verloopt over",
		"mail.ignore":                   "Heeft u hier niet om gevraagd, dan kunt u deze mail negeren.",
		"mail.password_reset.subject":   "Stel uw wachtwoord opnieuw in",
		"mail.password_reset.body":      "Iemand vroeg om het wachtwoord van uw account opnieuw in te stellen. Volg deze link om een nieuw wachtwoord te kiezen:",
		"mail.password_reset.action":    "Nieuw wachtwoord kiezen",
		"mail.activation.subject":       "Activeer uw account",
		"mail.activation.body":          "Welkom! Volg deze link om uw account te activeren:",
		"mail.activation.action":        "Account activeren",
		"mail.invitation.subject":       "U bent uitgenodigd",
		"mail.invitation.body":          "Er is een account voor u gemaakt. Volg deze link om de uitnodiging aan te nemen en uw wachtwoord te kiezen:",
		"mail.invitation.action":        "Uitnodiging aannemen",
		"mail.password_changed.subject": "Uw wachtwoord is gewijzigd",
		"mail.password_changed.body":    "Het wachtwoord van uw account is zojuist gewijzigd en u bent overal uitgelogd. Was u dit niet, stel dan direct een nieuw wachtwoord in.",
		"mail.welcome.subject":          "Welkom",
		"mail.welcome.body":             "Uw account is klaar. U kunt inloggen met uw e-mailadres.",
		"mail.account_removed.subject":  "Uw account is verwijderd",
		"mail.account_removed.body":     "Uw account en alles wat erbij hoorde is verwijderd.",
		"mail.email_code.subject":       "Uw inlogcode",
		"mail.email_code.body":          "Voer deze code in om te bevestigen dat u het bent:",
		"mail.step_up.subject":          "U heeft een inlog bevestigd",
		"mail.step_up.body":             "Uw account is zojuist gebruikt met een extra controlestap.",
	},
}

// Composer builds mails from the templates and the texts.
type Composer struct {
	Templates *web.MailTemplates
	// Custom returns the configured texts of a language (custom_messages);
	// nil: none.
	Custom func(lang string) map[string]string
}

// Data is what a mail template sees.
type Data struct {
	Lang    string
	T       map[string]string
	Name    string // the person's name, or their address
	Link    string
	Code    string
	Minutes int
}

// Texts returns the texts of lang ("nl_NL" falls back to "nl", then to
// English key by key), with the configured ones over them.
func (c *Composer) Texts(lang string) (map[string]string, string) {
	l := strings.ToLower(lang)
	if i := strings.IndexAny(l, "_-"); i > 0 {
		l = l[:i]
	}
	t := maps.Clone(texts["en"])
	if _, ok := texts[l]; ok {
		maps.Copy(t, texts[l])
	} else {
		l = "en"
	}
	if c.Custom != nil {
		maps.Copy(t, c.Custom(lang))
	}
	return t, l
}

// Compose renders the mail of kind to an address.
func (c *Composer) Compose(kind, lang, to, name string, d Data) (Message, error) {
	d.T, d.Lang = c.Texts(lang)
	if strings.TrimSpace(name) == "" {
		name = to
	}
	d.Name = name
	text, html, err := c.Templates.Render(kind, d)
	if err != nil {
		return Message{}, err
	}
	return Message{To: to, ToName: name, Subject: d.T["mail."+kind+".subject"], Text: text, HTML: html}, nil
}
