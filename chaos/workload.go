package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// recorder appends to a History from many goroutines, timing everything from one start.
type recorder struct {
	start time.Time
	mu    struct {
		sync.Mutex
		h History
	}
}

func (r *recorder) now() time.Duration { return time.Since(r.start) }

func (r *recorder) send(s Send) {
	r.mu.Lock()
	r.mu.h.Sends = append(r.mu.h.Sends, s)
	r.mu.Unlock()
}

func (r *recorder) polls(ps []Poll) {
	r.mu.Lock()
	r.mu.h.Polls = append(r.mu.h.Polls, ps...)
	r.mu.Unlock()
}

func (r *recorder) commits(cs []CommitObservation) {
	r.mu.Lock()
	r.mu.h.Commits = append(r.mu.h.Commits, cs...)
	r.mu.Unlock()
}

func (r *recorder) nemesis(e NemesisEvent) {
	r.mu.Lock()
	r.mu.h.Nemesis = append(r.mu.h.Nemesis, e)
	r.mu.Unlock()
}

func (r *recorder) acked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.mu.h.Sends {
		if s.OK {
			n++
		}
	}
	return n
}

// sendWindow bounds a producer's in-flight sends per partition, so batches pipeline (as
// idempotent sequences do in real use) while memory stays bounded.
const sendWindow = 8

// sendInterval paces each producer's sends per partition (about 100 a second).
const sendInterval = 10 * time.Millisecond

// produce runs one idempotent acks=all producer (acks=1, not idempotent, with leaderAcks) writing unique values to every partition
// until ctx ends, then waits (up to drain) for its in-flight sends; it returns once every
// issued send is recorded or the drain ran out (those are recorded as failed).
func produce(ctx context.Context, rec *recorder, bootstrap []string, topic string, partitions int32, producer int, leaderAcks bool, metadataMinAge time.Duration, drain time.Duration) error {
	acks := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
	if leaderAcks {
		acks = []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}
	}
	if metadataMinAge > 0 {
		acks = append(acks, kgo.MetadataMinAge(metadataMinAge))
	}
	cl, err := kgo.NewClient(append(acks, kgo.SeedBrokers(bootstrap...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.DialTimeout(2*time.Second),
		kgo.ClientID(fmt.Sprintf("chaos-producer-%d", producer)))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var wg sync.WaitGroup
	for p := range partitions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := make(chan struct{}, sendWindow)
			tick := time.NewTicker(sendInterval)
			defer tick.Stop()
			var seq int64
			for ctx.Err() == nil {
				select {
				case <-ctx.Done():
					continue
				case <-tick.C:
				}
				select {
				case <-ctx.Done():
					continue
				case sem <- struct{}{}:
				}
				s := Send{Producer: producer, Seq: seq, Partition: p, Value: fmt.Sprintf("p%d-%d-%d", producer, p, seq), Invoke: rec.now()}
				seq++
				// Not ctx: a send once issued runs to its own end (ack, error or timeout).
				cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: p, Value: []byte(s.Value)}, func(r *kgo.Record, err error) {
					s.Complete = rec.now()
					if err == nil {
						s.OK, s.Offset = true, r.Offset
					} else {
						s.Err = err.Error()
					}
					rec.send(s)
					<-sem
				})
			}
		}()
	}
	wg.Wait()
	flushCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	_ = cl.Flush(flushCtx)
	return nil
}

// groupConsumer runs one member of the group until ctx ends, recording every record polled
// with its session (bumped whenever the member is assigned a partition again or loses it).
func groupConsumer(ctx context.Context, rec *recorder, bootstrap []string, topic, group, name string) error {
	var mu sync.Mutex
	session := map[int32]int{}
	bump := func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range parts[topic] {
			session[p]++
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.BlockRebalanceOnPoll(),
		kgo.AutoCommitInterval(time.Second),
		kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.DialTimeout(2*time.Second),
		kgo.OnPartitionsAssigned(bump), kgo.OnPartitionsRevoked(bump), kgo.OnPartitionsLost(bump),
		kgo.ClientID("chaos-"+name))
	if err != nil {
		return err
	}
	defer cl.Close()
	return pollLoop(ctx, rec, cl, name, func(p int32) int {
		mu.Lock()
		defer mu.Unlock()
		return session[p]
	}, cl.AllowRebalance)
}

// reader runs an assign-mode consumer of every partition from its start until ctx ends.
func reader(ctx context.Context, rec *recorder, bootstrap []string, topic string, partitions int32, name string) error {
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.DialTimeout(2*time.Second),
		kgo.ClientID("chaos-"+name))
	if err != nil {
		return err
	}
	defer cl.Close()
	return pollLoop(ctx, rec, cl, name, func(int32) int { return 0 }, func() {})
}

func pollLoop(ctx context.Context, rec *recorder, cl *kgo.Client, name string, session func(int32) int, after func()) error {
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		var ps []Poll
		now := rec.now()
		fs.EachRecord(func(r *kgo.Record) {
			ps = append(ps, Poll{Consumer: name, Session: session(r.Partition), Time: now, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		})
		rec.polls(ps)
		after()
	}
	return nil
}

// observeCommits records the group's committed offsets every interval until ctx ends.
func observeCommits(ctx context.Context, rec *recorder, bootstrap []string, group string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.DialTimeout(2*time.Second), kgo.RequestRetries(1))
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		offsets, err := adm.FetchOffsets(rctx, group)
		cancel()
		if err != nil {
			continue
		}
		now := rec.now()
		var cs []CommitObservation
		offsets.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && o.At >= 0 {
				cs = append(cs, CommitObservation{Time: now, Partition: o.Partition, Offset: o.At})
			}
		})
		rec.commits(cs)
	}
}
