package wire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/testcerts"
)

func benchProduceRequest(recordBytes int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = 1
	req.TimeoutMillis = 30000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "bench-topic"}}
	for p := int32(0); p < 4; p++ {
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, kmsg.ProduceRequestTopicPartition{
			Partition: p, Records: make([]byte, recordBytes/4),
		})
	}
	return req
}

func benchMetadataRequest() *kmsg.MetadataRequest {
	req := metadataRequest(12)
	for i := 0; i < 10; i++ {
		req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(fmt.Sprintf("topic-%d", i))})
	}
	return req
}

// BenchmarkDecodeRequest measures frame reading plus header and body decoding.
func BenchmarkDecodeRequest(b *testing.B) {
	vt := newVersionTable(testVersions())
	for _, bc := range []struct {
		name string
		req  kmsg.Request
	}{
		{"produce_v9_16KiB", benchProduceRequest(16 << 10)},
		{"metadata_v12_10topics", benchMetadataRequest()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			frame := encodeRequest(bc.req, 1)
			r := bytes.NewReader(frame)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(frame)
				f, err := readFrame(r, DefaultMaxRequestBytes, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := decodeRequest(f, vt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeResponse measures response framing plus body encoding into a reused buffer,
// as the connection writer does.
func BenchmarkEncodeResponse(b *testing.B) {
	produce := kmsg.NewPtrProduceResponse()
	produce.SetVersion(9)
	produce.Topics = []kmsg.ProduceResponseTopic{{Topic: "bench-topic"}}
	for p := int32(0); p < 4; p++ {
		produce.Topics[0].Partitions = append(produce.Topics[0].Partitions, kmsg.ProduceResponseTopicPartition{Partition: p, BaseOffset: 1 << 40})
	}
	metadata := kmsg.NewPtrMetadataResponse()
	metadata.SetVersion(12)
	metadata.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "127.0.0.1", Port: 9092}}
	for i := 0; i < 100; i++ {
		topic := kmsg.MetadataResponseTopic{Topic: kmsg.StringPtr(fmt.Sprintf("topic-%d", i))}
		for p := int32(0); p < 3; p++ {
			topic.Partitions = append(topic.Partitions, kmsg.MetadataResponseTopicPartition{Partition: p, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}})
		}
		metadata.Topics = append(metadata.Topics, topic)
	}
	for _, bc := range []struct {
		name string
		resp kmsg.Response
	}{
		{"produce_v9_4partitions", produce},
		{"metadata_v12_100topics", metadata},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = appendResponse(buf[:0], 1, bc.resp); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

// BenchmarkServerPipelinedProduce measures the whole path over loopback: one connection with
// pipelined acks=1 produce requests of 16 KiB, answered at once by the handler.
func BenchmarkServerPipelinedProduce(b *testing.B) {
	benchPipelinedProduce(b, Config{}, func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) })
}

// BenchmarkServerPipelinedProduceTLS is BenchmarkServerPipelinedProduce over TLS 1.3 (an SSL
// listener; the client's encryption runs in the same process, so this is the cost of both ends).
func BenchmarkServerPipelinedProduceTLS(b *testing.B) {
	ca := testcerts.NewCA()
	server := ca.Server()
	tlsCfg, err := BuildTLSConfig(TLSSettings{
		KeystoreType:             Setting{"ssl.keystore.type", "PEM"},
		KeystoreCertificateChain: Setting{"ssl.keystore.certificate.chain", string(server.CertPEM)},
		KeystoreKey:              Setting{"ssl.keystore.key", string(server.KeyPEM)},
	})
	if err != nil {
		b.Fatal(err)
	}
	benchPipelinedProduce(b, Config{SecurityProtocol: "SSL", TLS: tlsCfg}, func(addr string) (net.Conn, error) {
		return tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool()})
	})
}

func benchPipelinedProduce(b *testing.B, cfg Config, dial func(addr string) (net.Conn, error)) {
	resp := kmsg.NewPtrProduceResponse()
	resp.Topics = []kmsg.ProduceResponseTopic{{Topic: "bench-topic", Partitions: []kmsg.ProduceResponseTopicPartition{{}}}}
	srv := startServer(b, cfg, handlerFunc(func(_ context.Context, _ *Request, respond Respond) {
		respond(resp, nil) // one writer goroutine per connection encodes it, so sharing is safe
	}))
	nc, err := dial(srv.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	frame := encodeRequest(benchProduceRequest(16<<10), 1)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	writeErr := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(nc, 256<<10)
		for i := 0; i < b.N; i++ {
			if _, err := bw.Write(frame); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- bw.Flush()
	}()
	br := bufio.NewReaderSize(nc, 64<<10)
	var size [4]byte
	for i := 0; i < b.N; i++ {
		if _, err := io.ReadFull(br, size[:]); err != nil {
			b.Fatal(err)
		}
		if _, err := br.Discard(int(binary.BigEndian.Uint32(size[:]))); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-writeErr; err != nil {
		b.Fatal(err)
	}
}
