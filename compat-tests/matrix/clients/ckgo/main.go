// Command ckgo-compat runs one scenario of sluice's compatibility matrix with confluent-kafka-go
// (librdkafka, linked from the copy the Go module bundles).
//
// Usage: ckgo-compat SCENARIO BOOTSTRAP TOPIC GROUP TS_BASE CODEC. Exit 0: pass; 3: n/a with the
// reason on the last stdout line; anything else: fail. Conventions: compat-tests/matrix/doc.go.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

var scenario, bootstrap, topic, group, codec string
var tsBase int64

func main() {
	if len(os.Args) < 7 {
		fmt.Fprintln(os.Stderr, "usage: ckgo-compat SCENARIO BOOTSTRAP TOPIC GROUP TS_BASE CODEC")
		os.Exit(2)
	}
	scenario, bootstrap, topic, group, codec = os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[6]
	tsBase, _ = strconv.ParseInt(os.Args[5], 10, 64)
	v, s := kafka.LibraryVersion()
	// stderr: a failure's cause is the last line of the output, and stdout is kept for n/a.
	fmt.Fprintf(os.Stderr, "librdkafka %s (%#x)\n", s, v)
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	step("done")
}

var start = time.Now()

// step logs a step with the time since the start, so a slow step shows in the cell's log.
func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.3fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

func na(reason string) {
	fmt.Println(reason)
	os.Exit(3)
}

func payload(i int) string { return fmt.Sprintf("v%d-%s", i, strings.Repeat("x", 100)) }

func ctx30() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func tp(t string, offset kafka.Offset) kafka.TopicPartition {
	return kafka.TopicPartition{Topic: &t, Partition: 0, Offset: offset}
}

func consumer(extra kafka.ConfigMap) (*kafka.Consumer, error) {
	conf := kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": false, "auto.offset.reset": "earliest"}
	for k, v := range extra {
		conf[k] = v
	}
	return kafka.NewConsumer(&conf)
}

// poll reads n messages within 30 s.
func poll(c *kafka.Consumer, n int) ([]*kafka.Message, error) {
	var out []*kafka.Message
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < n {
		if time.Now().After(deadline) {
			return out, fmt.Errorf("got %d of %d records", len(out), n)
		}
		m, err := c.ReadMessage(500 * time.Millisecond)
		if err != nil {
			if kerr, ok := err.(kafka.Error); ok && kerr.IsTimeout() {
				continue
			}
			return out, err
		}
		out = append(out, m)
	}
	return out, nil
}

func values(ms []*kafka.Message) string {
	var vs []string
	for _, m := range ms {
		vs = append(vs, string(m.Value))
	}
	return strings.Join(vs, ",")
}

func seeded(from, to int) string {
	var vs []string
	for i := from; i < to; i++ {
		vs = append(vs, fmt.Sprintf("v%d", i))
	}
	return strings.Join(vs, ",")
}

// produce sends records to partition 0 with an idempotent producer and waits for every report.
func produce(conf kafka.ConfigMap, msgs []*kafka.Message) error {
	base := kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.idempotence": true, "linger.ms": 50}
	for k, v := range conf {
		base[k] = v
	}
	p, err := kafka.NewProducer(&base)
	if err != nil {
		return err
	}
	defer p.Close()
	reports := make(chan kafka.Event, len(msgs))
	for _, m := range msgs {
		m.TopicPartition = tp(topic, kafka.OffsetInvalid)
		if err := p.Produce(m, reports); err != nil {
			return err
		}
	}
	for range msgs {
		select {
		case ev := <-reports:
			if m := ev.(*kafka.Message); m.TopicPartition.Error != nil {
				return m.TopicPartition.Error
			}
		case <-time.After(30 * time.Second):
			return fmt.Errorf("no delivery report within 30s")
		}
	}
	return nil
}

func check(cond bool, format string, args ...any) error {
	if !cond {
		return fmt.Errorf(format, args...)
	}
	return nil
}

func run() error {
	ctx, cancel := ctx30()
	defer cancel()
	switch {
	case scenario == "admin":
		a, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": bootstrap})
		if err != nil {
			return err
		}
		defer a.Close()
		res, err := a.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 3, ReplicationFactor: 1, Config: map[string]string{"retention.ms": "86400000"}}})
		if err != nil || res[0].Error.Code() != kafka.ErrNoError {
			return fmt.Errorf("create topics: %v %v", err, res)
		}
		md, err := a.GetMetadata(&topic, false, 30000)
		if err != nil {
			return err
		}
		if err := check(len(md.Topics[topic].Partitions) == 3, "metadata shows %d partitions, want 3", len(md.Topics[topic].Partitions)); err != nil {
			return err
		}
		res, err = a.CreatePartitions(ctx, []kafka.PartitionsSpecification{{Topic: topic, IncreaseTo: 5}})
		if err != nil || res[0].Error.Code() != kafka.ErrNoError {
			return fmt.Errorf("create partitions: %v %v", err, res)
		}
		res, err = a.DeleteTopics(ctx, []string{topic})
		if err != nil || res[0].Error.Code() != kafka.ErrNoError {
			return fmt.Errorf("delete topics: %v %v", err, res)
		}
	case strings.HasPrefix(scenario, "produce-"):
		var msgs []*kafka.Message
		for i := 0; i < 10; i++ {
			msgs = append(msgs, &kafka.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(payload(i))})
		}
		return produce(kafka.ConfigMap{"compression.type": codec}, msgs)
	case scenario == "consume-begin", scenario == "consume-end", scenario == "consume-ts":
		c, err := consumer(nil)
		if err != nil {
			return err
		}
		defer c.Close()
		switch scenario {
		case "consume-begin":
			if err := c.Assign([]kafka.TopicPartition{tp(topic, kafka.OffsetBeginning)}); err != nil {
				return err
			}
			ms, err := poll(c, 10)
			if err != nil {
				return err
			}
			return check(values(ms) == seeded(0, 10), "got %s", values(ms))
		case "consume-end":
			if err := c.Assign([]kafka.TopicPartition{tp(topic, kafka.OffsetEnd)}); err != nil {
				return err
			}
			ms, err := poll(c, 1)
			if err != nil {
				return err
			}
			return check(strings.HasPrefix(string(ms[0].Value), "tail-"), "first record from end is %q", ms[0].Value)
		default:
			at, err := c.OffsetsForTimes([]kafka.TopicPartition{tp(topic, kafka.Offset(tsBase+5000))}, 30000)
			if err != nil {
				return err
			}
			if err := check(at[0].Offset == 5, "offset for timestamp %v, want 5", at[0].Offset); err != nil {
				return err
			}
			if err := c.Assign(at); err != nil {
				return err
			}
			ms, err := poll(c, 5)
			if err != nil {
				return err
			}
			return check(values(ms) == seeded(5, 10), "got %s", values(ms))
		}
	case scenario == "keys-headers":
		var msgs []*kafka.Message
		for i := 0; i < 3; i++ {
			msgs = append(msgs, &kafka.Message{Key: []byte(fmt.Sprintf("ck%d", i)), Value: []byte(fmt.Sprintf("c%d", i)),
				Headers: []kafka.Header{{Key: "h", Value: []byte(fmt.Sprintf("y%d", i))}, {Key: "trace", Value: []byte(fmt.Sprintf("t%d", i))}}})
		}
		if err := produce(nil, msgs); err != nil {
			return err
		}
		c, err := consumer(nil)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.Assign([]kafka.TopicPartition{tp(topic, kafka.OffsetBeginning)}); err != nil {
			return err
		}
		ms, err := poll(c, 3)
		if err != nil {
			return err
		}
		for i, m := range ms {
			want := fmt.Sprintf("k%d h=x%d trace=s%d", i, i, i)
			got := string(m.Key)
			for _, h := range m.Headers {
				got += fmt.Sprintf(" %s=%s", h.Key, h.Value)
			}
			if err := check(got == want, "record %d: got %s, want %s", i, got, want); err != nil {
				return err
			}
		}
	case scenario == "group":
		c, err := consumer(nil)
		if err != nil {
			return err
		}
		if err := c.Subscribe(topic, nil); err != nil {
			return err
		}
		ms, err := poll(c, 5)
		if err != nil {
			return err
		}
		if err := check(string(ms[0].Value) == "v0", "first record %q", ms[0].Value); err != nil {
			return err
		}
		if _, err := c.CommitOffsets([]kafka.TopicPartition{tp(topic, 5)}); err != nil {
			return err
		}
		c.Close()
		c, err = consumer(nil)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.Subscribe(topic, nil); err != nil {
			return err
		}
		ms, err = poll(c, 1)
		if err != nil {
			return err
		}
		return check(string(ms[0].Value) == "v5", "resumed at %q, want v5", ms[0].Value)
	case scenario == "configs":
		a, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": bootstrap})
		if err != nil {
			return err
		}
		defer a.Close()
		res := []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}}
		before, err := a.DescribeConfigs(ctx, res)
		if err != nil {
			return err
		}
		if _, ok := before[0].Config["retention.ms"]; !ok {
			return fmt.Errorf("describe configs lacks retention.ms: %v", before[0])
		}
		alter := []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic, Config: []kafka.ConfigEntry{
			{Name: "retention.ms", Value: "3600000", IncrementalOperation: kafka.AlterConfigOpTypeSet}}}}
		out, err := a.IncrementalAlterConfigs(ctx, alter)
		if err != nil || out[0].Error.Code() != kafka.ErrNoError {
			return fmt.Errorf("incremental alter configs: %v %v", err, out)
		}
		after, err := a.DescribeConfigs(ctx, res)
		if err != nil {
			return err
		}
		return check(after[0].Config["retention.ms"].Value == "3600000", "retention.ms after alter: %v", after[0].Config["retention.ms"])
	case scenario == "delete-records":
		a, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": bootstrap})
		if err != nil {
			return err
		}
		defer a.Close()
		res, err := a.DeleteRecords(ctx, []kafka.TopicPartition{tp(topic, 5)})
		if err != nil {
			return err
		}
		r := res.DeleteRecordsResults[0]
		if r.TopicPartition.Error != nil {
			return r.TopicPartition.Error
		}
		return check(r.DeletedRecords.LowWatermark == 5, "low watermark %v, want 5", r.DeletedRecords.LowWatermark)
	case scenario == "transactions":
		return transactions(ctx)
	case scenario == "exactly-once":
		return exactlyOnce(ctx)
	default:
		na("not mapped")
	}
	return nil
}

func txnProducer(ctx context.Context) (*kafka.Producer, error) {
	// No delivery reports: nothing reads Events(), and Flush waits for that channel to drain.
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "transactional.id": topic + "-txn",
		"transaction.timeout.ms": 20000, "go.delivery.reports": false})
	if err != nil {
		return nil, err
	}
	if err := p.InitTransactions(ctx); err != nil {
		p.Close()
		return nil, err
	}
	step("InitTransactions done")
	return p, nil
}

// transactions commits c0..c2, aborts a0..a2 and commits c3..c5 (VerifyTxn in scenarios.go).
func transactions(ctx context.Context) error {
	p, err := txnProducer(ctx)
	if err != nil {
		return err
	}
	defer p.Close()
	for _, st := range []struct {
		prefix string
		from   int
		commit bool
	}{{"c", 0, true}, {"a", 0, false}, {"c", 3, true}} {

		if err := p.BeginTransaction(); err != nil {
			return err
		}
		for i := st.from; i < st.from+3; i++ {
			m := &kafka.Message{TopicPartition: tp(topic, kafka.OffsetInvalid), Key: []byte(fmt.Sprintf("%sk%d", st.prefix, i)), Value: []byte(fmt.Sprintf("%s%d", st.prefix, i))}
			if err := p.Produce(m, nil); err != nil {
				return err
			}
		}
		if st.commit {
			err = p.CommitTransaction(ctx)
		} else {
			p.Flush(20000) // AbortTransaction purges what was not sent yet
			err = p.AbortTransaction(ctx)
		}
		if err != nil {
			return err
		}
		step("transaction %s%d..: commit=%v", st.prefix, st.from, st.commit)
	}
	return nil
}

// exactlyOnce aborts a transaction holding an "aborted" record and the group's offset 3, then
// reads the input in the group from its committed offset and writes out-v<i> with the offsets.
func exactlyOnce(ctx context.Context) error {
	p, err := txnProducer(ctx)
	if err != nil {
		return err
	}
	defer p.Close()
	c, err := consumer(kafka.ConfigMap{"isolation.level": "read_committed"})
	if err != nil {
		return err
	}
	defer c.Close()
	out := topic + "-out"
	meta, err := c.GetConsumerGroupMetadata()
	if err != nil {
		return err
	}
	if err := p.BeginTransaction(); err != nil {
		return err
	}
	if err := p.Produce(&kafka.Message{TopicPartition: tp(out, kafka.OffsetInvalid), Key: []byte("k"), Value: []byte("aborted")}, nil); err != nil {
		return err
	}
	if err := p.SendOffsetsToTransaction(ctx, []kafka.TopicPartition{tp(topic, 3)}, meta); err != nil {
		return err
	}
	p.Flush(20000)
	if err := p.AbortTransaction(ctx); err != nil {
		return err
	}
	if err := c.Subscribe(topic, nil); err != nil {
		return err
	}
	done, deadline := 0, time.Now().Add(30*time.Second)
	for done < 10 {
		if time.Now().After(deadline) {
			return fmt.Errorf("transformed %d of 10", done)
		}
		ev := c.Poll(500)
		m, ok := ev.(*kafka.Message)
		if !ok {
			if e, isErr := ev.(kafka.Error); isErr {
				return e
			}
			continue
		}
		if err := p.BeginTransaction(); err != nil {
			return err
		}
		if err := p.Produce(&kafka.Message{TopicPartition: tp(out, kafka.OffsetInvalid), Key: m.Key, Value: append([]byte("out-"), m.Value...)}, nil); err != nil {
			return err
		}
		done++
		assignment, err := c.Assignment()
		if err != nil {
			return err
		}
		positions, err := c.Position(assignment)
		if err != nil {
			return err
		}
		if meta, err = c.GetConsumerGroupMetadata(); err != nil {
			return err
		}
		if err := p.SendOffsetsToTransaction(ctx, positions, meta); err != nil {
			return err
		}
		if err := p.CommitTransaction(ctx); err != nil {
			return err
		}
	}
	return nil
}
