package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxLineBytes bounds one line (record) sluice produce reads from stdin.
const maxLineBytes = 16 << 20

func runProduce(c *cli, args []string) error {
	fs := c.flags("produce", "table", "json")
	keySep := fs.String("k", "", "split each line at the first SEPARATOR into key and value (no key when empty)")
	partition := fs.Int("p", -1, "produce to this partition (-1: the default partitioner, by key)")
	pos, err := c.parse(fs, args, "table", "json")
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("produce wants one topic name (records are read from stdin, one per line)")
	}
	topic := pos[0]
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(c.timeout)}
	if *partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	if _, err := c.connect(opts...); err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		firstErr error
		acked    int
	)
	promise := func(r *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if err == nil {
			acked++
		}
	}
	sc := bufio.NewScanner(c.in)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	sent := 0
	for sc.Scan() {
		line := bytes.Clone(sc.Bytes())
		r := &kgo.Record{Value: line, Partition: int32(*partition)}
		if *keySep != "" {
			if k, v, ok := bytes.Cut(line, []byte(*keySep)); ok {
				r.Key, r.Value = k, v
			}
		}
		c.client.Produce(c.ctx, r, promise)
		sent++
		mu.Lock()
		failed := firstErr
		mu.Unlock()
		if failed != nil {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	if err := c.client.Flush(ctx); err != nil {
		return fmt.Errorf("waiting for acknowledgements: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return fmt.Errorf("%d of %d records acknowledged: %w", acked, sent, explain(firstErr, topic))
	}
	if c.output == "json" {
		return c.json(map[string]any{"topic": topic, "records": acked})
	}
	fmt.Fprintf(c.errOut, "produced %d records to %s\n", acked, topic)
	return nil
}

// consumedRecord is a record as sluice consume -o json prints it (one JSON object a line).
type consumedRecord struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Timestamp int64             `json:"timestamp_ms"`
	Key       *string           `json:"key"`
	Value     string            `json:"value"`
	Headers   map[string]string `json:"headers,omitempty"`
}

func runConsume(c *cli, args []string) error {
	fs := c.flags("consume", "plain", "json")
	group := fs.String("g", "", "consume as this consumer group, committing what is printed")
	offset := fs.String("offset", "start", "where to start without a committed offset: start, end, an offset N, or @MILLIS (the first record at or after that Unix time in ms)")
	count := fs.Int("n", 0, "exit after this many records (0: until interrupted)")
	keySep := fs.String("k", "", "plain output: print the key, this separator, then the value")
	pos, err := c.parse(fs, args, "plain", "json")
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("consume wants one topic name")
	}
	topic := pos[0]
	var reset kgo.Offset
	switch *offset {
	case "start", "beginning", "earliest":
		reset = kgo.NewOffset().AtStart()
	case "end", "latest":
		reset = kgo.NewOffset().AtEnd()
	default:
		if ms, ok := strings.CutPrefix(*offset, "@"); ok {
			n, err := strconv.ParseInt(ms, 10, 64)
			if err != nil {
				return usagef("--offset %q: @ wants a Unix time in milliseconds", *offset)
			}
			reset = kgo.NewOffset().AfterMilli(n)
			break
		}
		n, err := strconv.ParseInt(*offset, 10, 64)
		if err != nil || n < 0 {
			return usagef("--offset %q: want start, end, a non-negative offset or @MILLIS", *offset)
		}
		reset = kgo.NewOffset().At(n)
	}
	opts := []kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(reset)}
	if *group != "" {
		opts = append(opts, kgo.ConsumerGroup(*group), kgo.DisableAutoCommit())
	}
	adm, err := c.connect(opts...)
	if err != nil {
		return err
	}
	ctx, cancel := c.opCtx()
	topics, err := adm.ListTopics(ctx, topic)
	cancel()
	if err != nil {
		return err
	}
	if t, ok := topics[topic]; !ok || t.Err != nil {
		return explain(t.Err, topic)
	}
	w := bufio.NewWriter(c.out)
	defer w.Flush()
	printed := 0
	for *count == 0 || printed < *count {
		fetches := c.client.PollFetches(c.ctx)
		if c.ctx.Err() != nil {
			break
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = fmt.Errorf("fetching %s partition %d: %w", t, p, explain(err, t))
			}
		})
		if ferr != nil {
			return ferr
		}
		var done []*kgo.Record
		for _, r := range fetches.Records() {
			if *count > 0 && printed == *count {
				break
			}
			if err := c.printRecord(w, r, *keySep); err != nil {
				return err
			}
			done = append(done, r)
			printed++
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if *group != "" && len(done) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			err := c.client.CommitRecords(ctx, done...)
			cancel()
			if err != nil {
				return fmt.Errorf("committing offsets for group %s: %w", *group, err)
			}
		}
	}
	return nil
}

func (c *cli) printRecord(w *bufio.Writer, r *kgo.Record, keySep string) error {
	if c.output == "json" {
		cr := consumedRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Timestamp: r.Timestamp.UnixMilli(), Value: string(r.Value)}
		if r.Key != nil {
			k := string(r.Key)
			cr.Key = &k
		}
		if len(r.Headers) > 0 {
			cr.Headers = map[string]string{}
			for _, h := range r.Headers {
				cr.Headers[h.Key] = string(h.Value)
			}
		}
		return json.NewEncoder(w).Encode(cr) // one object a line
	}
	if keySep != "" {
		w.Write(r.Key)
		w.WriteString(keySep)
	}
	w.Write(r.Value)
	return w.WriteByte('\n')
}
