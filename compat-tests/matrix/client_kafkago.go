package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

var kafkaGoCodecs = map[string]compress.Compression{
	"none": 0, "gzip": compress.Gzip, "snappy": compress.Snappy, "lz4": compress.Lz4, "zstd": compress.Zstd,
}

func kafkaGoRead(ctx context.Context, e *Env, cfg kafka.ReaderConfig, n int, commit bool) ([]kafka.Message, error) {
	cfg.Brokers, cfg.Topic, cfg.MaxWait = []string{e.Addr}, e.Topic, 200*time.Millisecond
	r := kafka.NewReader(cfg)
	defer r.Close()
	if cfg.GroupID == "" {
		// kafka-go's ReaderConfig.StartOffset applies to group readers only.
		if err := r.SetOffset(cfg.StartOffset); err != nil {
			return nil, err
		}
	}
	var got []kafka.Message
	for len(got) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return got, fmt.Errorf("got %d of %d: %w", len(got), n, err)
		}
		got = append(got, m)
	}
	if commit {
		if err := r.CommitMessages(ctx, got[len(got)-1]); err != nil {
			return got, err
		}
	}
	return got, nil
}

func runKafkaGo(ctx context.Context, e *Env) error {
	s := e.Scenario
	// A transport per cell: kafka-go's shared DefaultTransport caches metadata for seconds and
	// reports a topic created since as unknown.
	transport := &kafka.Transport{MetadataTTL: time.Second}
	defer transport.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(e.Addr), Timeout: 20 * time.Second, Transport: transport}
	switch {
	case s.ID == "admin":
		resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: e.Topic, NumPartitions: 3, ReplicationFactor: 1}}})
		if err != nil {
			return err
		}
		if err := resp.Errors[e.Topic]; err != nil {
			return err
		}
		md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{e.Topic}})
		if err != nil {
			return err
		}
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 3 {
			return fmt.Errorf("metadata: %+v", md.Topics)
		}
		del, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{e.Topic}})
		if err != nil {
			return err
		}
		return del.Errors[e.Topic]
	case s.Codec != "" || s.ID == "keys-headers":
		w := &kafka.Writer{Addr: kafka.TCP(e.Addr), Topic: e.Topic, Balancer: &kafka.Hash{}, BatchSize: seedCount,
			BatchTimeout: 50 * time.Millisecond, RequiredAcks: kafka.RequireAll, Compression: kafkaGoCodecs[s.Codec], Transport: transport}
		defer w.Close()
		var msgs []kafka.Message
		for i := 0; i < seedCount; i++ {
			if s.ID == "keys-headers" {
				if i == 3 {
					break
				}
				msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("ck%d", i)), Value: []byte(fmt.Sprintf("c%d", i)),
					Headers: []kafka.Header{{Key: "h", Value: []byte(fmt.Sprintf("y%d", i))}, {Key: "trace", Value: []byte(fmt.Sprintf("t%d", i))}}})
				continue
			}
			msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(payload(i))})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			return err
		}
		if s.ID == "keys-headers" {
			got, err := kafkaGoRead(ctx, e, kafka.ReaderConfig{Partition: 0, StartOffset: kafka.FirstOffset}, 3, false)
			if err != nil {
				return err
			}
			for i, m := range got {
				if string(m.Key) != fmt.Sprintf("k%d", i) || len(m.Headers) != 2 || string(m.Headers[0].Value) != fmt.Sprintf("x%d", i) {
					return fmt.Errorf("seed %d: key %q headers %v", i, m.Key, m.Headers)
				}
			}
		}
		return e.verifyScenario(ctx)
	case s.ID == "consume-begin", s.ID == "consume-end":
		start, n := kafka.FirstOffset, seedCount
		if s.ID == "consume-end" {
			start, n = kafka.LastOffset, 1
		}
		got, err := kafkaGoRead(ctx, e, kafka.ReaderConfig{Partition: 0, StartOffset: start}, n, false)
		if err != nil {
			return err
		}
		for i, m := range got {
			if s.ID == "consume-end" {
				if !strings.HasPrefix(string(m.Value), "tail-") {
					return fmt.Errorf("first record from end is %q", m.Value)
				}
			} else if string(m.Value) != "v"+strconv.Itoa(i) {
				return fmt.Errorf("record %d is %q", i, m.Value)
			}
		}
		return nil
	case s.ID == "consume-ts":
		conn, err := kafka.DialLeader(ctx, "tcp", e.Addr, e.Topic, 0)
		if err != nil {
			return err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(20 * time.Second))
		off, err := conn.ReadOffset(time.UnixMilli(e.TSBase + 5000))
		if err != nil {
			return err
		}
		if off != 5 {
			return fmt.Errorf("offset for timestamp is %d, want 5", off)
		}
		if _, err := conn.Seek(off, kafka.SeekAbsolute); err != nil {
			return err
		}
		m, err := conn.ReadMessage(1 << 20)
		if err != nil {
			return err
		}
		if string(m.Value) != "v5" {
			return fmt.Errorf("first record %q, want v5", m.Value)
		}
		return nil
	case s.ID == "group":
		cfg := kafka.ReaderConfig{GroupID: e.Group, StartOffset: kafka.FirstOffset, HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second}
		got, err := kafkaGoRead(ctx, e, cfg, 5, true)
		if err != nil {
			return err
		}
		if string(got[0].Value) != "v0" {
			return fmt.Errorf("first record %q", got[0].Value)
		}
		if err := e.VerifyCommitted(ctx, 5); err != nil {
			return err
		}
		got, err = kafkaGoRead(ctx, e, cfg, 1, false)
		if err != nil {
			return err
		}
		if string(got[0].Value) != "v5" {
			return fmt.Errorf("resumed at %q, want v5", got[0].Value)
		}
		return nil
	case s.ID == "configs":
		if _, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: e.Topic}}}); err != nil {
			return err
		}
		resp, err := cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: e.Topic,
			Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "retention.ms", Value: "3600000", ConfigOperation: kafka.ConfigOperationSet}},
		}}})
		if err != nil {
			return err
		}
		for _, r := range resp.Resources {
			if r.Error != nil {
				return r.Error
			}
		}
		return e.VerifyRetention(ctx)
	case s.ID == "delete-records":
		return na("kafka-go v0.4.51 has no DeleteRecords API")
	case s.ID == "transactions", s.ID == "exactly-once":
		return na("kafka-go has no transactional producer")
	}
	return na("not mapped")
}
