package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sluice/internal/config"
)

// oauthListener parses a broker with one SASL_PLAINTEXT listener OAUTH, more settings added,
// and returns what securityFor makes of that listener.
func oauthListener(t *testing.T, settings map[string]string) (listenerSecurity, error) {
	t.Helper()
	props := map[string]string{
		"node.id":                        "1",
		"process.roles":                  "broker,controller",
		"controller.quorum.voters":       "1@127.0.0.1:19093",
		"controller.listener.names":      "CONTROLLER",
		"listeners":                      "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093,OAUTH://127.0.0.1:19094",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,OAUTH:SASL_PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
		"log.dirs":                       t.TempDir(),
		"listener.name.oauth.sasl.enabled.mechanisms":      "OAUTHBEARER",
		"listener.name.oauth.oauthbearer.sasl.jaas.config": oauthBearerLoginModule + " required;",
	}
	for k, v := range settings {
		props[k] = v
	}
	cfg, err := config.ParseBroker(props)
	if err != nil {
		return listenerSecurity{}, err
	}
	for _, l := range cfg.Listeners {
		if l.Name == "OAUTH" {
			return securityFor(cfg, l)
		}
	}
	t.Fatal("no OAUTH listener")
	return listenerSecurity{}, nil
}

func TestOAuthBearerListenerSettings(t *testing.T) {
	sec, err := oauthListener(t, map[string]string{
		"listener.name.oauth.oauthbearer.sasl.jaas.config": oauthBearerLoginModule +
			` required unsecuredValidatorPrincipalClaimName="principal" unsecuredValidatorRequiredScope="read write" unsecuredValidatorAllowableClockSkewMs="1500";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	o := sec.sasl.OAuthBearer
	if o == nil || o.JWKS != nil || o.PrincipalClaim != "principal" || strings.Join(o.RequiredScope, ",") != "read,write" || o.ClockSkew != 1500*time.Millisecond {
		t.Fatalf("unsecured: %+v", o)
	}

	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, []byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sec, err = oauthListener(t, map[string]string{
		"listener.name.oauth.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": "file://" + jwks,
		"sasl.oauthbearer.expected.audience":                                 "kafka, other",
		"listener.name.oauth.sasl.oauthbearer.expected.issuer":               "https://idp",
		"sasl.oauthbearer.sub.claim.name":                                    "client_id",
		"sasl.oauthbearer.clock.skew.seconds":                                "5",
	})
	if err != nil {
		t.Fatal(err)
	}
	o = sec.sasl.OAuthBearer
	if o == nil || o.JWKS == nil || strings.Join(o.ExpectedAudience, ",") != "kafka,other" || o.ExpectedIssuer != "https://idp" ||
		o.PrincipalClaim != "client_id" || o.ClockSkew != 5*time.Second {
		t.Fatalf("signed: %+v", o)
	}

	// Kafka 4.4: a JWKS validator without an expected issuer or audience starts only when the
	// operator opts out of checking it; then a token may name any audience.
	sec, err = oauthListener(t, map[string]string{
		"sasl.oauthbearer.jwks.endpoint.url":                                       "file://" + jwks,
		"listener.name.oauth.sasl.oauthbearer.allow.unverified.audience":           "true",
		"listener.name.oauth.oauthbearer.sasl.oauthbearer.allow.unverified.issuer": "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	if o = sec.sasl.OAuthBearer; o == nil || o.JWKS == nil || !o.AllowUnverifiedAudience || o.ExpectedIssuer != "" || len(o.ExpectedAudience) != 0 {
		t.Fatalf("unverified: %+v", o)
	}
	for name, tc := range map[string]struct {
		settings map[string]string
		want     string
	}{
		"no expected issuer": {map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "file://" + jwks, "sasl.oauthbearer.expected.audience": "kafka"},
			"sasl.oauthbearer.expected.issuer must be set with sasl.oauthbearer.jwks.endpoint.url, or sasl.oauthbearer.allow.unverified.issuer=true"},
		"no expected audience": {map[string]string{"sasl.oauthbearer.jwks.endpoint.url": "file://" + jwks, "sasl.oauthbearer.expected.issuer": "https://idp"},
			"sasl.oauthbearer.expected.audience must be set with sasl.oauthbearer.jwks.endpoint.url, or sasl.oauthbearer.allow.unverified.audience=true"},
	} {
		if _, err := oauthListener(t, tc.settings); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}

	for name, settings := range map[string]map[string]string{
		"signed handler without JWKS": {
			"listener.name.oauth.oauthbearer.sasl.server.callback.handler.class": oauthValidator},
		"unsecured handler with JWKS": {
			"listener.name.oauth.oauthbearer.sasl.server.callback.handler.class": oauthUnsecuredValidator,
			"sasl.oauthbearer.jwks.endpoint.url":                                 "file://" + jwks},
		"JWKS missing": {"sasl.oauthbearer.jwks.endpoint.url": "file://" + jwks + ".missing"},
		"a Java class": {"listener.name.oauth.oauthbearer.sasl.server.callback.handler.class": "com.example.Validator"},
		"bad skew": {"listener.name.oauth.oauthbearer.sasl.jaas.config": oauthBearerLoginModule +
			` required unsecuredValidatorAllowableClockSkewMs="soon";`},
		"wrong module": {"listener.name.oauth.oauthbearer.sasl.jaas.config": plainLoginModule + ` required user_a="b";`},
	} {
		if _, err := oauthListener(t, settings); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
