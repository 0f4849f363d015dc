// Helpers shared by the consumer-group tests (groups_*_test.go): a broker tuned for fast
// rebalances, topic setup, keyed produce and committed-offset reads through kadm.

package compattests

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupsAdminTimeout bounds one admin or produce call made by the group tests.
const groupsAdminTimeout = 15 * time.Second

// groupBrokerSettings make rebalances quick enough for tests: no initial rebalance delay for
// classic groups (Kafka's own integration tests use 0 too), classic members may ask for
// session timeouts down to 1s, and a 500ms heartbeat interval for KIP-848 groups, so joins
// and revocations settle within a few heartbeats.
var groupBrokerSettings = []string{
	"group.initial.rebalance.delay.ms=0",
	"group.min.session.timeout.ms=1000",
	"group.consumer.min.heartbeat.interval.ms=100",
	"group.consumer.heartbeat.interval.ms=500",
	"num.partitions=1",
}

// startGroupBroker starts sluice with groupBrokerSettings plus extra settings and returns it
// with a franz-go client (no group) and its admin client, closed in t.Cleanup.
func startGroupBroker(t *testing.T, extra ...string) (*Broker, *kgo.Client, *kadm.Client) {
	t.Helper()
	b := StartBroker(t, append(append([]string(nil), groupBrokerSettings...), extra...)...)
	cl := groupsAdminClient(t, b)
	return b, cl, kadm.NewClient(cl)
}

// groupsAdminClient returns a groupless franz-go client for b, closed in t.Cleanup.
func groupsAdminClient(t *testing.T, b *Broker) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// groupsCreateTopic creates topic with the given partition count and fails the test on error.
func groupsCreateTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), groupsAdminTimeout)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// groupsProduce synchronously produces n records with values prefix-0000 .. spread round
// robin over the topic's partitions and returns the values in produce order.
func groupsProduce(t *testing.T, cl *kgo.Client, topic, prefix string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), groupsAdminTimeout)
	defer cancel()
	values := make([]string, n)
	recs := make([]*kgo.Record, n)
	for i := range n {
		values[i] = fmt.Sprintf("%s-%04d", prefix, i)
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(values[i])}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing %d records to %s: %v", n, topic, err)
	}
	return values
}

// groupsCommitted returns group's committed offsets for topic by partition (kadm
// FetchOffsets, i.e. OffsetFetch as every client issues it).
func groupsCommitted(t *testing.T, adm *kadm.Client, group, topic string) (map[int32]int64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), groupsAdminTimeout)
	defer cancel()
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := resp.Error(); err != nil {
		return nil, err
	}
	out := make(map[int32]int64)
	for p, o := range resp[topic] {
		if o.Err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, o.Err)
		}
		out[p] = o.At
	}
	return out, nil
}

// groupsEndOffsets returns topic's end offsets by partition.
func groupsEndOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), groupsAdminTimeout)
	defer cancel()
	resp, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("ListEndOffsets %s: %v", topic, err)
	}
	out := make(map[int32]int64)
	resp.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// waitCommittedAtEnd waits until group's committed offset for every partition of topic
// equals the partition's end offset.
func waitCommittedAtEnd(t *testing.T, adm *kadm.Client, group, topic string, timeout time.Duration) {
	t.Helper()
	end := groupsEndOffsets(t, adm, topic)
	waitFor(t, timeout, fmt.Sprintf("group %s committed up to the end of %s", group, topic), func() error {
		got, err := groupsCommitted(t, adm, group, topic)
		if err != nil {
			return err
		}
		if !sameOffsets(got, end) {
			return fmt.Errorf("committed %v, end offsets %v", got, end)
		}
		return nil
	})
}

func sameOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for p, o := range a {
		if bo, ok := b[p]; !ok || bo != o {
			return false
		}
	}
	return true
}

// sortedLines splits out into its non-empty lines, sorted.
func sortedLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

// diffSets reports values missing from got and values in got that want lacks or that got
// holds more than once, each list bounded for failure messages.
func diffSets(got, want []string) (missing, extra []string) {
	count := make(map[string]int, len(got))
	for _, g := range got {
		count[g]++
	}
	wantSet := make(map[string]bool, len(want))
	for _, w := range want {
		wantSet[w] = true
		if count[w] == 0 {
			missing = append(missing, w)
		}
	}
	for g, n := range count {
		if !wantSet[g] || n > 1 {
			extra = append(extra, fmt.Sprintf("%s(x%d)", g, n))
		}
	}
	sort.Strings(extra)
	return bound(missing), bound(extra)
}

func bound(s []string) []string {
	if len(s) > 20 {
		return append(s[:20:20], fmt.Sprintf("... %d more", len(s)-20))
	}
	return s
}
