package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/IBM/sarama"
	kafka "github.com/segmentio/kafka-go"
	kgosasl "github.com/segmentio/kafka-go/sasl"
	kgoplain "github.com/segmentio/kafka-go/sasl/plain"
	kgoscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The security cells of the Go clients (franz-go, sarama, kafka-go), in process.

// tlsConfig is the TLS a Go client uses for the cell's mechanism (nil without TLS).
func (e *Env) tlsConfig() *tls.Config {
	switch e.Scenario.Security {
	case secMTLS:
		return &tls.Config{RootCAs: e.Sec.CA.Pool(), Certificates: []tls.Certificate{e.Sec.Client}}
	case secSCRAM:
		return &tls.Config{RootCAs: e.Sec.CA.Pool()}
	}
	return nil
}

// secGot formats consumed records as "key:value" lines.
func secGot(kv [][2][]byte) string {
	var b strings.Builder
	for _, r := range kv {
		fmt.Fprintf(&b, "%s:%s\n", r[0], r[1])
	}
	return b.String()
}

// --- franz-go ---

func secFranz(ctx context.Context, e *Env) error {
	addr, _ := e.secListener()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.WithLogger(kgo.BasicLogger(e.Log, kgo.LogLevelWarn, nil))}
	if c := e.tlsConfig(); c != nil {
		opts = append(opts, kgo.DialTLSConfig(c))
	}
	switch e.Scenario.Security {
	case secSCRAM:
		opts = append(opts, kgo.SASL(scram.Auth{User: secUser, Pass: secScramPass}.AsSha512Mechanism()))
	case secPLAIN:
		opts = append(opts, kgo.SASL(plain.Auth{User: secUser, Pass: secPlainPass}.AsMechanism()))
	case secOAuth:
		opts = append(opts, kgo.SASL(oauth.Auth{Token: unsecuredJWT(secUser)}.AsMechanism()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range secRecords {
		recs = append(recs, &kgo.Record{Topic: e.Topic, Key: []byte(fmt.Sprintf("ck%d", i)), Value: []byte(fmt.Sprintf("c%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("franz-go produce over %s: %w", addr, err)
	}
	e.Log.Printf("[franz-go] %d records produced over %s", secRecords, addr)
	rd, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{e.Topic: {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		return err
	}
	defer rd.Close()
	var kv [][2][]byte
	for len(kv) < secRecords {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("franz-go consume: %d of %d records: %w", len(kv), secRecords, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return fmt.Errorf("franz-go consume over %s: %w", addr, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) { kv = append(kv, [2][]byte{r.Key, r.Value}) })
	}
	e.Log.Printf("[franz-go] consumed over %s:\n%s", addr, secGot(kv))
	if err := expectSecOutput(secGot(kv)); err != nil {
		return err
	}
	return e.verifySecurity(ctx)
}

// --- sarama ---

// saramaSCRAM adapts kafka-go's SCRAM-SHA-512 state machine (xdg-go/scram underneath) to
// sarama's SCRAMClient interface: sarama ships the exchange but leaves the SCRAM maths to the
// application.
type saramaSCRAM struct {
	sm   kgosasl.StateMachine
	done bool
}

func (s *saramaSCRAM) Begin(user, pass, _ string) error {
	m, err := kgoscram.Mechanism(kgoscram.SHA512, user, pass)
	if err != nil {
		return err
	}
	s.sm, s.done = &scramStart{m: m}, false
	return nil
}

// scramStart yields the client-first message on the first Step, then hands over to the
// mechanism's own state machine.
type scramStart struct {
	m    kgosasl.Mechanism
	next kgosasl.StateMachine
}

func (s *scramStart) Next(ctx context.Context, challenge []byte) (bool, []byte, error) {
	if s.next == nil {
		sm, first, err := s.m.Start(ctx)
		s.next = sm
		return false, first, err
	}
	return s.next.Next(ctx, challenge)
}

func (s *saramaSCRAM) Step(challenge string) (string, error) {
	done, resp, err := s.sm.Next(context.Background(), []byte(challenge))
	s.done = done
	return string(resp), err
}

func (s *saramaSCRAM) Done() bool { return s.done }

// saramaToken is a static unsecured-JWT token provider.
type saramaToken struct{}

func (saramaToken) Token() (*sarama.AccessToken, error) {
	return &sarama.AccessToken{Token: unsecuredJWT(secUser)}, nil
}

func secSarama(ctx context.Context, e *Env) error {
	addr, _ := e.secListener()
	cfg := saramaConfig()
	if c := e.tlsConfig(); c != nil {
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, c
	}
	switch e.Scenario.Security {
	case secSCRAM:
		cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.User, cfg.Net.SASL.Password = secUser, secScramPass
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{} }
	case secPLAIN:
		cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypePlaintext
		cfg.Net.SASL.User, cfg.Net.SASL.Password = secUser, secPlainPass
	case secOAuth:
		cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypeOAuth
		cfg.Net.SASL.TokenProvider = saramaToken{}
	}
	if cfg.Net.SASL.Enable {
		cfg.Net.SASL.Version = sarama.SASLHandshakeV1
	}
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		return fmt.Errorf("sarama producer over %s: %w", addr, err)
	}
	var msgs []*sarama.ProducerMessage
	for i := range secRecords {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: e.Topic, Partition: 0,
			Key: sarama.StringEncoder(fmt.Sprintf("ck%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("c%d", i))})
	}
	err = p.SendMessages(msgs)
	p.Close()
	if err != nil {
		return fmt.Errorf("sarama produce over %s: %w", addr, err)
	}
	e.Log.Printf("[sarama] %d records produced over %s", secRecords, addr)
	c, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		return fmt.Errorf("sarama consumer over %s: %w", addr, err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(e.Topic, 0, sarama.OffsetOldest)
	if err != nil {
		return err
	}
	defer pc.Close()
	var kv [][2][]byte
	for len(kv) < secRecords {
		select {
		case m := <-pc.Messages():
			kv = append(kv, [2][]byte{m.Key, m.Value})
		case err := <-pc.Errors():
			return fmt.Errorf("sarama consume over %s: %w", addr, err)
		case <-ctx.Done():
			return fmt.Errorf("sarama consume: %d of %d records: %w", len(kv), secRecords, ctx.Err())
		}
	}
	e.Log.Printf("[sarama] consumed over %s:\n%s", addr, secGot(kv))
	if err := expectSecOutput(secGot(kv)); err != nil {
		return err
	}
	return e.verifySecurity(ctx)
}

// --- kafka-go ---

func secKafkaGo(ctx context.Context, e *Env) error {
	addr, _ := e.secListener()
	var mech kgosasl.Mechanism
	switch e.Scenario.Security {
	case secSCRAM:
		m, err := kgoscram.Mechanism(kgoscram.SHA512, secUser, secScramPass)
		if err != nil {
			return err
		}
		mech = m
	case secPLAIN:
		mech = kgoplain.Mechanism{Username: secUser, Password: secPlainPass}
	case secOAuth:
		return na("kafka-go ships PLAIN and SCRAM SASL mechanisms only, no OAUTHBEARER")
	}
	transport := &kafka.Transport{MetadataTTL: time.Second, TLS: e.tlsConfig(), SASL: mech}
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: e.Topic, Balancer: &kafka.LeastBytes{}, BatchTimeout: 50 * time.Millisecond,
		RequiredAcks: kafka.RequireAll, Transport: transport}
	var msgs []kafka.Message
	for i := range secRecords {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("ck%d", i)), Value: []byte(fmt.Sprintf("c%d", i))})
	}
	err := w.WriteMessages(ctx, msgs...)
	w.Close()
	if err != nil {
		return fmt.Errorf("kafka-go produce over %s: %w", addr, err)
	}
	e.Log.Printf("[kafka-go] %d records produced over %s", secRecords, addr)
	dialer := &kafka.Dialer{Timeout: 10 * time.Second, TLS: e.tlsConfig(), SASLMechanism: mech}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: e.Topic, Partition: 0, Dialer: dialer, MaxWait: 500 * time.Millisecond})
	defer r.Close()
	var kv [][2][]byte
	for len(kv) < secRecords {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return fmt.Errorf("kafka-go consume over %s: %d of %d records: %w", addr, len(kv), secRecords, err)
		}
		kv = append(kv, [2][]byte{m.Key, m.Value})
	}
	e.Log.Printf("[kafka-go] consumed over %s:\n%s", addr, secGot(kv))
	if err := expectSecOutput(secGot(kv)); err != nil {
		return err
	}
	return e.verifySecurity(ctx)
}
