package main

// The tls mode: both brokers, one node each, with three client listeners side by side —
// PLAINTEXT, SSL (TLS, no client certificate) and SASL_SSL (SCRAM-SHA-512 over TLS) — set with
// the same Kafka keys on both (PEM keystore and truststore files from internal/testcerts, the
// SCRAM user created with AlterUserScramCredentials in the metadata log). The same 1 KiB acks=all
// franz-go produce workloads run over each listener, so the cost of TLS is measured against a
// PLAINTEXT row of the same broker process in the same run.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sluice/internal/testcerts"
	"sluice/internal/testcluster"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Listener names of the tls mode; each is also its security protocol.
const (
	listenerPlain   = "" // the PLAINTEXT listener every broker has
	listenerSSL     = "SSL"
	listenerSASLSSL = "SASL_SSL"
)

// benchSCRAMUser is the SCRAM-SHA-512 user the SASL_SSL producers log in as (a throwaway
// credential of a throwaway broker).
const benchSCRAMUser, benchSCRAMPassword = "bench", "bench-scram-secret"

// tlsMaterial is one broker's test CA and server key pair, written as PEM files.
type tlsMaterial struct {
	ca        testcerts.CA
	caFile    string // the CA certificate (PEM truststore)
	serverPEM string // private key then certificate (Kafka's PEM keystore file)
}

func newTLSMaterial(dir string) (*tlsMaterial, error) {
	dir = filepath.Join(dir, "tls")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ca := testcerts.NewCA()
	_, caFile, _ := ca.WriteFiles(dir, "ca")
	serverPEM, _, _ := ca.Server().WriteFiles(dir, "server")
	return &tlsMaterial{ca: ca, caFile: caFile, serverPEM: serverPEM}, nil
}

// settings are the keys both brokers get for the SSL and SASL_SSL listeners (the listener
// list itself is per broker).
func (m *tlsMaterial) settings() []string {
	return []string{
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + m.serverPEM,
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + m.caFile,
		"ssl.client.auth=none",
		"listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
	}
}

// clientOpts are franz-go's options for listener: TLS trusting the test CA, plus SCRAM for
// SASL_SSL.
func (m *tlsMaterial) clientOpts(listener string) []kgo.Opt {
	if listener == listenerPlain {
		return nil
	}
	opts := []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: m.ca.Pool(), MinVersion: tls.VersionTLS12})}
	if listener == listenerSASLSSL {
		opts = append(opts, kgo.SASL(scram.Auth{User: benchSCRAMUser, Pass: benchSCRAMPassword}.AsSha512Mechanism()))
	}
	return opts
}

// tlsListenerAddrs picks free ports for the SSL and SASL_SSL listeners of one node.
func tlsListenerAddrs() (map[string]string, error) {
	ports, err := testcluster.FreePorts(2)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		listenerSSL:     net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		listenerSASLSSL: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
	}, nil
}

// startKafkaTLS is startKafka with the SSL and SASL_SSL listeners.
func startKafkaTLS(lib, dir string) (*brokerProc, error) {
	m, err := newTLSMaterial(dir)
	if err != nil {
		return nil, err
	}
	extra, err := tlsListenerAddrs()
	if err != nil {
		return nil, err
	}
	logs, paths, err := nodeLogs(dir, "kafka", 1)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	c, err := testcluster.StartKafka(testcluster.KafkaOptions{Nodes: 1, Lib: lib, JVMOpts: kafkaJVMOpts,
		Settings: append(brokerSettings(1, false), m.settings()...), BaseDir: data,
		Output: func(i int) io.Writer { return logs[i] }, Listeners: func(int) map[string]string { return extra }})
	if err != nil {
		closeAll(logs)
		return nil, fmt.Errorf("kafka did not start (logs %s): %w", strings.Join(paths, " "), err)
	}
	b := newBrokerProc("kafka", c, data, logs, paths, "")
	return b, b.secure(m, extra)
}

// startSluiceTLS is startSluice (one node) with the SSL and SASL_SSL listeners. The node is
// built directly so that its listeners line can name the extra listeners next to the
// PLAINTEXT and CONTROLLER ones testcluster would set.
func startSluiceTLS(bin, dir string) (*brokerProc, error) {
	m, err := newTLSMaterial(dir)
	if err != nil {
		return nil, err
	}
	extra, err := tlsListenerAddrs()
	if err != nil {
		return nil, err
	}
	ports, err := testcluster.FreePorts(2)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	caddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	logs, paths, err := nodeLogs(dir, "sluice", 1)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	settings := append([]string{
		"node.id=1",
		"controller.listener.names=CONTROLLER",
		"controller.quorum.voters=1@" + caddr,
		fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s,SSL://%s,SASL_SSL://%s", addr, caddr, extra[listenerSSL], extra[listenerSASLSSL]),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
	}, append(brokerSettings(1, false), m.settings()...)...)
	node, err := testcluster.NewNode(testcluster.NodeConfig{Bin: bin, Addr: addr, ControllerAddr: caddr,
		Dir: filepath.Join(data, "node-1"), Settings: settings, Flags: []string{"--log-level", "warn"}, Output: logs[0]})
	if err != nil {
		closeAll(logs)
		return nil, err
	}
	c := &testcluster.Cluster{Nodes: []*testcluster.Node{node}}
	err = c.StartAll()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), testcluster.StartDeadline)
		err = c.WaitBrokers(ctx, 1)
		cancel()
	}
	if err != nil {
		c.Close()
		closeAll(logs)
		return nil, fmt.Errorf("sluice did not start (logs %s): %w", strings.Join(paths, " "), err)
	}
	b := newBrokerProc("sluice", c, data, logs, paths, "")
	return b, b.secure(m, extra)
}

// secure records the extra listeners on b, creates the SCRAM user through the PLAINTEXT
// listener and waits until it logs in over SASL_SSL (Kafka applies the credential once the
// metadata record reaches the broker).
func (b *brokerProc) secure(m *tlsMaterial, extra map[string]string) error {
	b.listeners = map[string][]string{}
	b.security = map[string][]kgo.Opt{}
	for name, addr := range extra {
		b.listeners[name] = []string{addr}
		b.security[name] = m.clientOpts(name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: benchSCRAMUser,
		Mechanism: kadm.ScramSha512, Iterations: 4096, Password: benchSCRAMPassword}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("%s: create SCRAM user: %w", b.Name, err)
	}
	for _, name := range []string{listenerSSL, listenerSASLSSL} {
		var last error
		for {
			if last = probeListener(ctx, b.listeners[name], b.security[name]); last == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: %s listener %v: %w", b.Name, name, b.listeners[name], last)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// probeListener sends one Metadata request through addrs with opts.
func probeListener(ctx context.Context, addrs []string, opts []kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = cl.Request(rctx, kmsg.NewPtrMetadataRequest())
	return err
}

// client is where a workload over listener connects and with which options.
func (b *brokerProc) client(listener string) ([]string, []kgo.Opt, error) {
	if listener == listenerPlain {
		return b.Addrs, nil, nil
	}
	addrs, ok := b.listeners[listener]
	if !ok {
		return nil, nil, errors.New(b.Name + " has no " + listener + " listener")
	}
	return addrs, b.security[listener], nil
}

// tlsPlan is the tls mode's rows: the default mode's 1 KiB acks=all produce rows (with their
// end-to-end consumer over the same listener) with 1 and 4 producers, over each listener.
func tlsPlan() []workload {
	var out []workload
	for _, producers := range []int{1, 4} {
		for _, l := range []struct{ listener, id, title string }{
			{listenerPlain, "plain", "PLAINTEXT"},
			{listenerSSL, "ssl", "SSL (TLS)"},
			{listenerSASLSSL, "sasl-ssl", "SASL_SSL (SCRAM-SHA-512 over TLS)"},
		} {
			out = append(out, workload{ID: fmt.Sprintf("%s-1k-all-p%d", l.id, producers),
				Title: fmt.Sprintf("%s, 1 KiB, acks=all, %d producer%s", l.title, producers, map[bool]string{true: "s"}[producers > 1]),
				Tool:  toolLoadgenProduce, RecordSize: 1024, AcksAll: true, Producers: producers, Listener: l.listener})
		}
	}
	return out
}

// renderTLSCost states, per broker and producer count, what TLS and SASL_SSL cost against the
// same broker's PLAINTEXT row of this run.
func renderTLSCost(b *strings.Builder, rep *report) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("Cost of TLS against the same broker's PLAINTEXT listener in this mode (same process, same run; throughput change, and broker CPU seconds per GiB acknowledged, TLS/PLAINTEXT):\n\n")
	p("| broker | producers | SSL records/s vs PLAINTEXT | SSL CPU s/GiB vs PLAINTEXT | SASL_SSL records/s vs PLAINTEXT | SASL_SSL CPU s/GiB vs PLAINTEXT |\n|---|---|---|---|---|---|\n")
	cpuPerGiB := func(r *result) float64 { return r.CPUSeconds / math.Max(r.MiB, 1e-9) * 1024 }
	for _, broker := range rep.Config.Brokers {
		for _, producers := range []int{1, 4} {
			plain := find(rep.Results, "tls", broker, fmt.Sprintf("plain-1k-all-p%d", producers))
			if plain == nil || plain.Err != "" || plain.RecPerSec == 0 {
				continue
			}
			cells := []string{}
			for _, id := range []string{"ssl", "sasl-ssl"} {
				r := find(rep.Results, "tls", broker, fmt.Sprintf("%s-1k-all-p%d", id, producers))
				if r == nil || r.Err != "" || r.RecPerSec == 0 {
					cells = append(cells, "n/a", "n/a")
					continue
				}
				cells = append(cells, fmt.Sprintf("%+.1f%%", 100*(r.RecPerSec/plain.RecPerSec-1)),
					fmt.Sprintf("%.2fx (%.1f vs %.1f)", cpuPerGiB(r)/cpuPerGiB(plain), cpuPerGiB(r), cpuPerGiB(plain)))
			}
			p("| %s | %d | %s |\n", broker, producers, strings.Join(cells, " | "))
		}
	}
	p("\n")
}
