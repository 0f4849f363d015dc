package main

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

var saramaCodecs = map[string]sarama.CompressionCodec{
	"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
	"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
}

// saramaVersion is the protocol version the sarama row configures; the old-sarama row sets
// sarama.V0_10_2_0 instead, as many long-lived deployments still do. Cells run one at a time.
var saramaVersion = sarama.V3_0_0_0

func saramaConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = saramaVersion
	c.ClientID = "sluice-matrix"
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Metadata.Retry.Max = 5
	c.Net.DialTimeout = 10 * time.Second
	return c
}

// saramaConsume reads n records of partition 0 starting at offset.
func saramaConsume(ctx context.Context, e *Env, offset int64, n int) ([]*sarama.ConsumerMessage, error) {
	c, err := sarama.NewConsumer([]string{e.Addr}, saramaConfig())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	pc, err := c.ConsumePartition(e.Topic, 0, offset)
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	var got []*sarama.ConsumerMessage
	for len(got) < n {
		select {
		case m := <-pc.Messages():
			got = append(got, m)
		case err := <-pc.Errors():
			return got, err
		case <-ctx.Done():
			return got, fmt.Errorf("got %d of %d records: %w", len(got), n, ctx.Err())
		}
	}
	return got, nil
}

// saramaGroupHandler consumes until n messages and marks offsets as it goes.
type saramaGroupHandler struct {
	n    int
	got  []*sarama.ConsumerMessage
	done chan struct{}
}

func (h *saramaGroupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaGroupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaGroupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		if len(h.got) >= h.n {
			break
		}
		h.got = append(h.got, m)
		s.MarkMessage(m, "")
		if len(h.got) == h.n {
			s.Commit()
			close(h.done)
			return nil
		}
	}
	return nil
}

func saramaGroupRead(ctx context.Context, e *Env, n int) ([]*sarama.ConsumerMessage, error) {
	cfg := saramaConfig()
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	g, err := sarama.NewConsumerGroup([]string{e.Addr}, e.Group, cfg)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	h := &saramaGroupHandler{n: n, done: make(chan struct{})}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- g.Consume(cctx, []string{e.Topic}, h) }()
	select {
	case <-h.done:
		cancel()
		<-errc
		return h.got, nil
	case err := <-errc:
		return h.got, fmt.Errorf("consume: %v", err)
	case <-ctx.Done():
		return h.got, ctx.Err()
	}
}

// runSaramaOld runs a scenario with sarama configured for Kafka 0.10.2, which makes it send
// Produce v2, Fetch v3 and other versions that Kafka 4 no longer serves (KIP-896).
func runSaramaOld(ctx context.Context, e *Env) error {
	saramaVersion = sarama.V0_10_2_0
	defer func() { saramaVersion = sarama.V3_0_0_0 }()
	switch e.Scenario.ID {
	case "keys-headers":
		return na("record headers need sarama.Version >= V0_11_0_0")
	case "produce-zstd":
		return na("zstd needs sarama.Version >= V2_1_0_0")
	case "transactions", "exactly-once":
		return na("transactions need sarama.Version >= V0_11_0_0")
	case "delete-records":
		return na("DeleteRecords needs sarama.Version >= V0_11_0_0")
	case "configs":
		return na("IncrementalAlterConfigs needs sarama.Version >= V2_3_0_0")
	}
	return runSarama(ctx, e)
}

// runSaramaV08 runs a scenario with sarama configured for Kafka 0.8.2, the oldest protocol it
// speaks: Produce v0 and Fetch v0 with magic 0 messages (no timestamps), ListOffsets v0,
// Metadata v0. Consumer groups, admin requests and lz4 need newer versions than 0.8's.
func runSaramaV08(ctx context.Context, e *Env) error {
	saramaVersion = sarama.V0_8_2_0
	defer func() { saramaVersion = sarama.V3_0_0_0 }()
	switch e.Scenario.ID {
	case "admin", "configs", "delete-records":
		return na("admin requests need sarama.Version >= V0_10_0_0")
	case "keys-headers":
		return na("record headers need sarama.Version >= V0_11_0_0")
	case "produce-lz4":
		return na("lz4 needs sarama.Version >= V0_10_0_0")
	case "produce-zstd":
		return na("zstd needs sarama.Version >= V2_1_0_0")
	case "consume-ts":
		return na("timestamps need sarama.Version >= V0_10_0_0 (magic 1)")
	case "group":
		return na("consumer groups need sarama.Version >= V0_9_0_0")
	case "transactions", "exactly-once":
		return na("transactions need sarama.Version >= V0_11_0_0")
	}
	return runSarama(ctx, e)
}

func runSarama(ctx context.Context, e *Env) error {
	sarama.Logger = log.New(e.Log, "[sarama] ", log.Ltime) // cells run one at a time
	s := e.Scenario
	switch {
	case s.ID == "admin":
		adm, err := sarama.NewClusterAdmin([]string{e.Addr}, saramaConfig())
		if err != nil {
			return err
		}
		defer adm.Close()
		if err := adm.CreateTopic(e.Topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false); err != nil {
			return err
		}
		md, err := adm.DescribeTopics([]string{e.Topic})
		if err != nil {
			return err
		}
		if len(md) != 1 || len(md[0].Partitions) != 3 {
			return fmt.Errorf("describe: %+v", md)
		}
		if saramaVersion.IsAtLeast(sarama.V1_0_0_0) { // CreatePartitions needs Kafka 1.0's API
			if err := adm.CreatePartitions(e.Topic, 5, nil, false); err != nil {
				return err
			}
		}
		return adm.DeleteTopic(e.Topic)
	case s.ID == "transactions":
		return saramaTransactions(ctx, e)
	case s.Codec != "" || s.ID == "keys-headers":
		cfg := saramaConfig()
		// Idempotence needs Version >= V0_11_0_0; the old-protocol row produces without it.
		cfg.Producer.Idempotent = saramaVersion.IsAtLeast(sarama.V0_11_0_0)
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Flush.Messages = seedCount
		cfg.Producer.Flush.Frequency = 50 * time.Millisecond
		if s.Codec != "" {
			cfg.Producer.Compression = saramaCodecs[s.Codec]
		}
		p, err := sarama.NewSyncProducer([]string{e.Addr}, cfg)
		if err != nil {
			return err
		}
		defer p.Close()
		var msgs []*sarama.ProducerMessage
		for i := 0; i < seedCount; i++ {
			m := &sarama.ProducerMessage{Topic: e.Topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(payload(i))}
			if s.ID != "keys-headers" && s.Codec == "" {
				m.Key, m.Value = sarama.StringEncoder(fmt.Sprintf("ck%d", i)), sarama.StringEncoder(fmt.Sprintf("c%d", i))
			}
			if s.ID == "keys-headers" {
				if i == 3 {
					break
				}
				m.Key, m.Value = sarama.StringEncoder(fmt.Sprintf("ck%d", i)), sarama.StringEncoder(fmt.Sprintf("c%d", i))
				m.Headers = []sarama.RecordHeader{{Key: []byte("h"), Value: []byte(fmt.Sprintf("y%d", i))}, {Key: []byte("trace"), Value: []byte(fmt.Sprintf("t%d", i))}}
			}
			msgs = append(msgs, m)
		}
		if err := p.SendMessages(msgs); err != nil {
			if perrs, ok := err.(sarama.ProducerErrors); ok && len(perrs) > 0 {
				return fmt.Errorf("%d records failed, first: %w", len(perrs), perrs[0].Err)
			}
			return err
		}
		if s.ID == "keys-headers" {
			got, err := saramaConsume(ctx, e, sarama.OffsetOldest, 3)
			if err != nil {
				return err
			}
			for i, m := range got {
				if string(m.Key) != fmt.Sprintf("k%d", i) || len(m.Headers) != 2 || string(m.Headers[0].Value) != fmt.Sprintf("x%d", i) {
					return fmt.Errorf("seed %d: key %q headers %d", i, m.Key, len(m.Headers))
				}
			}
		}
		return e.verifyScenario(ctx)
	case s.ID == "consume-begin", s.ID == "consume-end", s.ID == "consume-ts":
		offset, from, n := sarama.OffsetOldest, 0, seedCount
		if s.ID == "consume-end" {
			offset, n = sarama.OffsetNewest, 1
		}
		if s.ID == "consume-ts" {
			cl, err := sarama.NewClient([]string{e.Addr}, saramaConfig())
			if err != nil {
				return err
			}
			offset, err = cl.GetOffset(e.Topic, 0, e.TSBase+5000)
			cl.Close()
			if err != nil {
				return err
			}
			if offset != 5 {
				return fmt.Errorf("offset for timestamp is %d, want 5", offset)
			}
			from, n = 5, 5
		}
		got, err := saramaConsume(ctx, e, offset, n)
		if err != nil {
			return err
		}
		for i, m := range got {
			v := string(m.Value)
			if s.ID == "consume-end" && !strings.HasPrefix(v, "tail-") {
				return fmt.Errorf("first record from end is %q", v)
			}
			if s.ID != "consume-end" && v != fmt.Sprintf("v%d", from+i) {
				return fmt.Errorf("record %d is %q", i, v)
			}
		}
		return nil
	case s.ID == "group":
		got, err := saramaGroupRead(ctx, e, 5)
		if err != nil {
			return err
		}
		if string(got[0].Value) != "v0" {
			return fmt.Errorf("first record %q", got[0].Value)
		}
		if err := e.VerifyCommitted(ctx, 5); err != nil {
			return err
		}
		got, err = saramaGroupRead(ctx, e, 1)
		if err != nil {
			return err
		}
		if string(got[0].Value) != "v5" {
			return fmt.Errorf("resumed at %q, want v5", got[0].Value)
		}
		return nil
	case s.ID == "configs":
		adm, err := sarama.NewClusterAdmin([]string{e.Addr}, saramaConfig())
		if err != nil {
			return err
		}
		defer adm.Close()
		if _, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: e.Topic}); err != nil {
			return err
		}
		v := "3600000"
		if err := adm.IncrementalAlterConfig(sarama.TopicResource, e.Topic, map[string]sarama.IncrementalAlterConfigsEntry{"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}}, false); err != nil {
			return err
		}
		return e.VerifyRetention(ctx)
	case s.ID == "delete-records":
		adm, err := sarama.NewClusterAdmin([]string{e.Addr}, saramaConfig())
		if err != nil {
			return err
		}
		defer adm.Close()
		if err := adm.DeleteRecords(e.Topic, map[int32]int64{0: 5}); err != nil {
			return err
		}
		return e.VerifyStartOffset(ctx, 5)
	case s.ID == "exactly-once":
		return saramaExactlyOnce(ctx, e)
	}
	return na("not mapped")
}

// saramaTxnProducer is a transactional sync producer with transactional id <topic>-txn.
func saramaTxnProducer(e *Env) (sarama.SyncProducer, error) {
	cfg := saramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = e.Topic + "-txn"
	cfg.Producer.Transaction.Timeout = 20 * time.Second
	return sarama.NewSyncProducer([]string{e.Addr}, cfg)
}

// saramaTransactions commits c0..c2, aborts a0..a2 and commits c3..c5 (see VerifyTxn).
func saramaTransactions(ctx context.Context, e *Env) error {
	p, err := saramaTxnProducer(e)
	if err != nil {
		return err
	}
	defer p.Close()
	txn := func(prefix string, from, to int, commit bool) error {
		if err := p.BeginTxn(); err != nil {
			return err
		}
		var msgs []*sarama.ProducerMessage
		for i := from; i < to; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: e.Topic, Partition: 0,
				Key: sarama.StringEncoder(fmt.Sprintf("%sk%d", prefix, i)), Value: sarama.StringEncoder(fmt.Sprintf("%s%d", prefix, i))})
		}
		if err := p.SendMessages(msgs); err != nil {
			if perrs, ok := err.(sarama.ProducerErrors); ok && len(perrs) > 0 {
				return fmt.Errorf("%d records failed, first: %w", len(perrs), perrs[0].Err)
			}
			return err
		}
		if commit {
			return p.CommitTxn()
		}
		return p.AbortTxn()
	}
	if err := txn("c", 0, 3, true); err != nil {
		return err
	}
	if err := txn("a", 0, 3, false); err != nil {
		return err
	}
	if err := txn("c", 3, 6, true); err != nil {
		return err
	}
	return e.verifyScenario(ctx)
}

// saramaExactlyOnce aborts a transaction holding an "aborted" record and the group's offset 3
// (AddOffsetsToTxn, which sends TxnOffsetCommit), then reads the input from the group's
// committed offset, writes out-v<i> and commits the offset in one transaction.
func saramaExactlyOnce(ctx context.Context, e *Env) error {
	p, err := saramaTxnProducer(e)
	if err != nil {
		return err
	}
	defer p.Close()
	offsetsAt := func(o int64) map[string][]*sarama.PartitionOffsetMetadata {
		return map[string][]*sarama.PartitionOffsetMetadata{e.Topic: {{Partition: 0, Offset: o}}}
	}
	if err := p.BeginTxn(); err != nil {
		return err
	}
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: e.Topic + "-out", Partition: 0, Key: sarama.StringEncoder("k"), Value: sarama.StringEncoder("aborted")}); err != nil {
		return err
	}
	if err := p.AddOffsetsToTxn(offsetsAt(3), e.Group); err != nil {
		return err
	}
	if err := p.AbortTxn(); err != nil {
		return err
	}
	adm, err := sarama.NewClusterAdmin([]string{e.Addr}, saramaConfig())
	if err != nil {
		return err
	}
	defer adm.Close()
	committed, err := adm.ListConsumerGroupOffsets(e.Group, map[string][]int32{e.Topic: {0}})
	if err != nil {
		return err
	}
	start := sarama.OffsetOldest
	from := int64(0)
	if b := committed.GetBlock(e.Topic, 0); b != nil && b.Offset >= 0 {
		start, from = b.Offset, b.Offset
	}
	e.Log.Printf("[sarama] group %s resumes at %d after the aborted transaction", e.Group, from)
	got, err := saramaConsume(ctx, e, start, seedCount-int(from))
	if err != nil {
		return err
	}
	if err := p.BeginTxn(); err != nil {
		return err
	}
	for _, m := range got {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: e.Topic + "-out", Partition: 0, Key: sarama.ByteEncoder(m.Key), Value: sarama.ByteEncoder(append([]byte("out-"), m.Value...))}); err != nil {
			return err
		}
	}
	if err := p.AddOffsetsToTxn(offsetsAt(int64(seedCount)), e.Group); err != nil {
		return err
	}
	if err := p.CommitTxn(); err != nil {
		return err
	}
	return e.verifyScenario(ctx)
}
