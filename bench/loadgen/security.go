package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// securityOpts are the franz-go options for -tls-ca and -scram-sha-512.
func securityOpts(caFile, scram512 string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-tls-ca %s: no PEM certificate", caFile)
		}
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: pool}))
	}
	if scram512 != "" {
		user, pass, ok := strings.Cut(scram512, ":")
		if !ok {
			return nil, errors.New("-scram-sha-512 wants USER:PASSWORD")
		}
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	}
	return opts, nil
}
