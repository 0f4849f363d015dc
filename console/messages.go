package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds of one message browser page.
const (
	defaultMessages = 50
	maxMessages     = 500
	// maxScanned bounds the records read for a key search that matches few.
	maxScanned = 20000
)

// messageQuery is the browser's form: where to start and what to show.
type messageQuery struct {
	Partition int32  // -1: every partition
	From      string // start, end, offset, timestamp
	Offset    int64  // From == offset
	Timestamp string // From == timestamp: RFC 3339 or Unix milliseconds
	Limit     int
	Key       string // only records whose key contains this
}

// message is one record as the browser shows it.
type message struct {
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       string
	KeyNull   bool
	Value     string
	ValueNull bool
	JSON      bool // Value is pretty-printed JSON
	Binary    bool // Value (or Key) was not UTF-8: shown as hex
	Headers   []header
}

type header struct{ Key, Value string }

type messagesData struct {
	Topic      string
	Partitions []int32
	Query      messageQuery
	Messages   []message
	Scanned    int
	Note       string
}

func parseMessageQuery(r *http.Request) (messageQuery, error) {
	q := r.URL.Query()
	mq := messageQuery{Partition: -1, From: q.Get("from"), Timestamp: q.Get("timestamp"), Key: q.Get("key"), Limit: defaultMessages}
	if mq.From == "" {
		mq.From = "end"
	}
	if p := q.Get("partition"); p != "" && p != "all" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return mq, badRequest("partition %q: want a partition number", p)
		}
		mq.Partition = int32(n)
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return mq, badRequest("limit %q: want a positive number", l)
		}
		mq.Limit = min(n, maxMessages)
	}
	switch mq.From {
	case "start", "end":
	case "offset":
		n, err := strconv.ParseInt(q.Get("offset"), 10, 64)
		if err != nil || n < 0 {
			return mq, badRequest("offset %q: want a non-negative offset", q.Get("offset"))
		}
		mq.Offset = n
	case "timestamp":
		if _, err := parseTimestamp(mq.Timestamp); err != nil {
			return mq, err
		}
	default:
		return mq, badRequest("from %q: want start, end, offset or timestamp", mq.From)
	}
	return mq, nil
}

// parseTimestamp reads RFC 3339 or Unix milliseconds.
func parseTimestamp(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, badRequest("timestamp %q: want RFC 3339 (2026-12-01T10:00:00Z) or Unix milliseconds", s)
	}
	return t.UnixMilli(), nil
}

func (s *Server) messages(ctx context.Context, r *http.Request) (string, any, error) {
	name := r.PathValue("topic")
	mq, err := parseMessageQuery(r)
	if err != nil {
		return "", nil, err
	}
	td, err := s.adm.ListTopicsWithInternal(ctx, name)
	if err != nil {
		return "", nil, fmt.Errorf("describing topic %s: %w", name, err)
	}
	t, ok := td[name]
	if !ok || errors.Is(t.Err, kerr.UnknownTopicOrPartition) {
		return "", nil, notFound("topic %s does not exist", name)
	}
	d := messagesData{Topic: name, Query: mq}
	for _, p := range t.Partitions.Sorted() {
		d.Partitions = append(d.Partitions, p.Partition)
	}
	if mq.Partition >= 0 && int(mq.Partition) >= len(d.Partitions) {
		return "", nil, notFound("topic %s has no partition %d", name, mq.Partition)
	}
	starts, err := s.adm.ListStartOffsets(ctx, name)
	if err != nil {
		return "", nil, err
	}
	ends, err := s.adm.ListEndOffsets(ctx, name)
	if err != nil {
		return "", nil, err
	}
	var atTime kadm.ListedOffsets
	if mq.From == "timestamp" {
		ms, _ := parseTimestamp(mq.Timestamp)
		if atTime, err = s.adm.ListOffsetsAfterMilli(ctx, ms, name); err != nil {
			return "", nil, err
		}
	}
	// Where each partition is read from, and where it ends now.
	from, until := map[int32]kgo.Offset{}, map[int32]int64{}
	for _, p := range d.Partitions {
		if mq.Partition >= 0 && p != mq.Partition {
			continue
		}
		so, _ := starts.Lookup(name, p)
		eo, _ := ends.Lookup(name, p)
		if so.Err != nil || eo.Err != nil || eo.Offset <= so.Offset {
			continue // nothing to read (or not readable now)
		}
		at := so.Offset
		switch mq.From {
		case "end":
			at = max(eo.Offset-int64(mq.Limit), so.Offset)
			if mq.Key != "" {
				at = max(eo.Offset-maxScanned, so.Offset)
			}
		case "offset":
			at = min(max(mq.Offset, so.Offset), eo.Offset)
		case "timestamp":
			if o, ok := atTime.Lookup(name, p); ok && o.Err == nil && o.Offset >= 0 {
				at = o.Offset
			} else {
				at = eo.Offset
			}
		}
		if at < eo.Offset {
			from[p], until[p] = kgo.NewOffset().At(at), eo.Offset
		}
	}
	if len(from) == 0 {
		d.Note = "No records in that range."
		return "Messages of " + name, d, nil
	}
	d.Messages, d.Scanned, err = s.read(ctx, name, from, until, mq)
	if err != nil {
		return "", nil, err
	}
	return "Messages of " + name, d, nil
}

// read consumes the partitions from their offsets until each reaches its end offset (as it was
// when the page was asked for), the limit is filled, maxScanned records were read, or ctx ends.
func (s *Server) read(ctx context.Context, topic string, from map[int32]kgo.Offset, until map[int32]int64, mq messageQuery) ([]message, int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Brokers...), kgo.ClientID("sluice-console-browser"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	var out []message
	scanned := 0
	pending := len(until)
	for pending > 0 && scanned < maxScanned && ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		var ferr error
		fetches.EachError(func(_ string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("reading partition %d: %w", p, err)
			}
		})
		if ferr != nil {
			return nil, scanned, ferr
		}
		fetches.EachRecord(func(r *kgo.Record) {
			end, open := until[r.Partition]
			if !open || r.Offset >= end {
				return
			}
			scanned++
			if r.Offset == end-1 {
				delete(until, r.Partition)
				pending--
			}
			if mq.Key != "" && !strings.Contains(string(r.Key), mq.Key) {
				return
			}
			out = append(out, toMessage(r))
		})
		// Keep only the newest Limit when reading toward the end, the first Limit otherwise.
		if mq.From != "end" && len(out) >= mq.Limit {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Timestamp.Equal(out[j].Timestamp) {
			return out[i].Timestamp.Before(out[j].Timestamp)
		}
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	if len(out) > mq.Limit {
		if mq.From == "end" {
			out = out[len(out)-mq.Limit:]
		} else {
			out = out[:mq.Limit]
		}
	}
	return out, scanned, nil
}

func toMessage(r *kgo.Record) message {
	m := message{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp, KeyNull: r.Key == nil, ValueNull: r.Value == nil}
	m.Key, _ = printable(r.Key)
	var binary bool
	m.Value, binary = printable(r.Value)
	m.Binary = binary
	if !binary && len(r.Value) > 0 && (r.Value[0] == '{' || r.Value[0] == '[') && json.Valid(r.Value) {
		var buf bytes.Buffer
		if json.Indent(&buf, r.Value, "", "  ") == nil {
			m.Value, m.JSON = buf.String(), true
		}
	}
	for _, h := range r.Headers {
		v, _ := printable(h.Value)
		m.Headers = append(m.Headers, header{h.Key, v})
	}
	return m
}

// printable is b as text, or as hex when it is not UTF-8 (binary true).
func printable(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return fmt.Sprintf("%x", b), true
}
