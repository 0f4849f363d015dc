package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"sluice/internal/config"
	"sluice/wire"
)

// OAUTHBEARER's login module and Kafka's two server callback handlers for it.
const (
	oauthBearerLoginModule      = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	oauthUnsecuredValidator     = "org.apache.kafka.common.security.oauthbearer.OAuthBearerUnsecuredValidatorCallbackHandler"
	oauthValidator              = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	oauthValidatorInternalAlias = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
)

// oauthKey returns the effective value of an OAUTHBEARER setting for listener l, as Kafka
// resolves a SASL mechanism's keys: listener.name.<l>.oauthbearer.<key>, then
// listener.name.<l>.<key>, then the broker-wide key.
func oauthKey(cfg *config.Broker, l config.Listener, key string) wire.Setting {
	mech := "listener.name." + strings.ToLower(l.Name) + ".oauthbearer." + key
	if cfg.IsSet(mech) {
		return wire.Setting{Key: mech, Value: cfg.String(mech)}
	}
	return listenerKey(cfg, l, key)
}

// oauthBearerFor reads how listener l validates OAUTHBEARER tokens. With
// sasl.oauthbearer.jwks.endpoint.url the tokens must be signed by a key of that JWKS, with
// Kafka's sasl.oauthbearer.* claim settings (OAuthBearerValidatorCallbackHandler); without
// it they are Kafka's unsecured tokens, checked with the JAAS options of
// OAuthBearerUnsecuredValidatorCallbackHandler (unsecuredValidatorPrincipalClaimName,
// unsecuredValidatorScopeClaimName, unsecuredValidatorRequiredScope,
// unsecuredValidatorAllowableClockSkewMs). sasl.server.callback.handler.class may name either
// handler; naming the signed one without a JWKS URL, or the unsecured one with it, is refused.
func oauthBearerFor(cfg *config.Broker, l config.Listener, jaasKey string, module wire.JAASModule) (*wire.OAuthBearerConfig, error) {
	handler := oauthKey(cfg, l, "sasl.server.callback.handler.class")
	jwksURL := oauthKey(cfg, l, "sasl.oauthbearer.jwks.endpoint.url")
	switch strings.TrimSpace(handler.Value) {
	case "":
	case oauthUnsecuredValidator:
		if jwksURL.Value != "" {
			return nil, fmt.Errorf("%s=%s validates unsecured tokens, but %s is set: remove one", handler.Key, handler.Value, jwksURL.Key)
		}
	case oauthValidator, oauthValidatorInternalAlias:
		if jwksURL.Value == "" {
			return nil, fmt.Errorf("%s=%s needs %s (sluice validates tokens against a JWKS; it does not call a token introspection endpoint)",
				handler.Key, handler.Value, jwksURL.Key)
		}
	default:
		return nil, fmt.Errorf("%s=%s: sluice cannot load Java classes; it has %s and %s built in",
			handler.Key, handler.Value, oauthUnsecuredValidator, oauthValidator)
	}
	if jwksURL.Value == "" {
		return unsecuredOAuthFor(jaasKey, module)
	}
	millis := func(key string, unit time.Duration) (time.Duration, error) {
		s := oauthKey(cfg, l, key)
		n, err := strconv.ParseInt(strings.TrimSpace(s.Value), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%s: want a non-negative number", s.Key, s.Value)
		}
		return time.Duration(n) * unit, nil
	}
	refresh, err := millis("sasl.oauthbearer.jwks.endpoint.refresh.ms", time.Millisecond)
	if err != nil {
		return nil, err
	}
	backoff, err := millis("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", time.Millisecond)
	if err != nil {
		return nil, err
	}
	skew, err := millis("sasl.oauthbearer.clock.skew.seconds", time.Second)
	if err != nil {
		return nil, err
	}
	jwks, err := wire.NewJWKS(wire.JWKSConfig{URL: jwksURL.Value, Refresh: refresh, RetryBackoff: backoff})
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", jwksURL.Key, jwksURL.Value, err)
	}
	var audience []string
	audienceKey := oauthKey(cfg, l, "sasl.oauthbearer.expected.audience")
	for _, a := range config.ParseList(audienceKey.Value) {
		if a = strings.TrimSpace(a); a != "" {
			audience = append(audience, a)
		}
	}
	issuerKey := oauthKey(cfg, l, "sasl.oauthbearer.expected.issuer")
	issuer := strings.TrimSpace(issuerKey.Value)
	// As Kafka 4.4's BrokerJwtValidator: the issuer and audience must be expected, unless the
	// operator opts out of checking them.
	allowAudience := oauthKey(cfg, l, "sasl.oauthbearer.allow.unverified.audience")
	allowIssuer := oauthKey(cfg, l, "sasl.oauthbearer.allow.unverified.issuer")
	if b, _ := config.ParseBool(allowIssuer.Value); issuer == "" && !b {
		return nil, fmt.Errorf("%s must be set with %s, or %s=true to accept tokens from any issuer", issuerKey.Key, jwksURL.Key, allowIssuer.Key)
	}
	allowAny, _ := config.ParseBool(allowAudience.Value)
	if len(audience) == 0 && !allowAny {
		return nil, fmt.Errorf("%s must be set with %s, or %s=true to accept tokens for any audience", audienceKey.Key, jwksURL.Key, allowAudience.Key)
	}
	return &wire.OAuthBearerConfig{
		JWKS:                    jwks,
		PrincipalClaim:          strings.TrimSpace(oauthKey(cfg, l, "sasl.oauthbearer.sub.claim.name").Value),
		ScopeClaim:              strings.TrimSpace(oauthKey(cfg, l, "sasl.oauthbearer.scope.claim.name").Value),
		ClockSkew:               skew,
		ExpectedAudience:        audience,
		ExpectedIssuer:          issuer,
		AllowUnverifiedAudience: allowAny,
	}, nil
}

// unsecuredOAuthFor reads the unsecured validator's JAAS options, as Kafka's
// OAuthBearerUnsecuredValidatorCallbackHandler does (the required scope is space-delimited).
func unsecuredOAuthFor(jaasKey string, module wire.JAASModule) (*wire.OAuthBearerConfig, error) {
	out := &wire.OAuthBearerConfig{
		PrincipalClaim: strings.TrimSpace(module.Options["unsecuredValidatorPrincipalClaimName"]),
		ScopeClaim:     strings.TrimSpace(module.Options["unsecuredValidatorScopeClaimName"]),
		RequiredScope:  strings.Fields(module.Options["unsecuredValidatorRequiredScope"]),
	}
	if v, ok := module.Options["unsecuredValidatorAllowableClockSkewMs"]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s: unsecuredValidatorAllowableClockSkewMs=%q: want a non-negative number of milliseconds", jaasKey, v)
		}
		out.ClockSkew = time.Duration(n) * time.Millisecond
	}
	return out, nil
}
