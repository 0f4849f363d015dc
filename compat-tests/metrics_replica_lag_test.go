package compattests

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMetricsReplicaLag: on three real processes, the leader of an RF3 partition reports each
// follower's lag (sluice_partition_replica_lag_records, _replica_caught_up) and each follower
// its fetcher's lag (sluice_replica_fetcher_lag_records): zero and caught up while both follow;
// with one follower killed the leader counts the records it misses and, after
// replica.lag.time.max.ms, reports it not caught up; restarted, it is caught up again.
func TestMetricsReplicaLag(t *testing.T) {
	c, bases := startClusterWithHTTP(t, 3, "replica.lag.time.max.ms=2000")
	for i, base := range bases {
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d ready", i+1), func() error { return readyz(base) })
	}
	const topic = "lag-metrics"
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	produce := func(n int) {
		t.Helper()
		for i := range n {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(strconv.Itoa(i))).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}
	produce(30)
	var leader int32
	var followers []int32
	waitFor(t, 30*time.Second, "the partition fully in sync", func() error {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		p := td[topic].Partitions[0]
		if p.Leader < 1 || len(p.ISR) != 3 {
			return fmt.Errorf("leader %d ISR %v", p.Leader, p.ISR)
		}
		leader, followers = p.Leader, nil
		for _, r := range p.Replicas {
			if r != p.Leader {
				followers = append(followers, r)
			}
		}
		return nil
	})
	onLeader := func(name string, replica int32) (float64, error) {
		v, n := series(scrape(t, bases[leader-1]), name, map[string]string{"topic": topic, "partition": "0", "replica": strconv.Itoa(int(replica))})
		if n != 1 {
			return 0, fmt.Errorf("%s for replica %d: %d series on the leader", name, replica, n)
		}
		return v, nil
	}
	inSync := func(what string) {
		t.Helper()
		waitFor(t, 60*time.Second, what, func() error {
			for _, f := range followers {
				lag, err := onLeader("sluice_partition_replica_lag_records", f)
				if err != nil {
					return err
				}
				caughtUp, err := onLeader("sluice_partition_replica_caught_up", f)
				if err != nil {
					return err
				}
				if lag != 0 || caughtUp != 1 {
					return fmt.Errorf("replica %d: lag %v, caught up %v", f, lag, caughtUp)
				}
				v, n := series(scrape(t, bases[f-1]), "sluice_replica_fetcher_lag_records", map[string]string{"topic": topic, "partition": "0", "leader": strconv.Itoa(int(leader))})
				if n != 1 || v != 0 {
					return fmt.Errorf("replica %d's fetcher reports lag %v (%d series)", f, v, n)
				}
			}
			return nil
		})
	}
	inSync("both followers at lag 0 and caught up")

	gone := followers[0]
	c.Nodes[gone-1].Kill()
	produce(20)
	waitFor(t, 60*time.Second, "the leader to report the dead follower behind and not caught up", func() error {
		lag, err := onLeader("sluice_partition_replica_lag_records", gone)
		if err != nil {
			return err
		}
		caughtUp, err := onLeader("sluice_partition_replica_caught_up", gone)
		if err != nil {
			return err
		}
		if lag < 20 || caughtUp != 0 {
			return fmt.Errorf("replica %d: lag %v, caught up %v", gone, lag, caughtUp)
		}
		return nil
	})
	c.Nodes[gone-1].Restart()
	inSync("the restarted follower back at lag 0 and caught up")
}
