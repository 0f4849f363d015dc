package controller

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestElectionTraces drives the partition changes of elections.go — fencing, unfencing,
// AlterPartition and ElectLeaders — over one topic "t" with partition 0 on replicas 1,2,3 and
// brokers 1–3 active, from the scripts in testdata/elections. Every command prints the
// partition after it:
//
//	init elr=<bool> min-isr=<n> unclean=<bool>   a fresh image with those static configs
//	fence <id>              the broker is fenced (removeBrokerRecords, then fenced)
//	unfence <id>            the broker is unfenced (unfenceRecords)
//	alter isr=<ids> [recovering]   the leader's AlterPartition
//	elect preferred|unclean        ElectLeaders for t-0
//	config <key>=<value>    a topic config of t
func TestElectionTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/elections", func(t *testing.T, path string) {
		var w *Image
		commit := func(recs []Record) {
			next, errs := applyRecords(w, w.Offset+1, recs)
			for _, err := range errs {
				t.Fatalf("record does not apply: %v", err)
			}
			w = next
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var out strings.Builder
			switch d.Cmd {
			case "init":
				var elr, unclean bool
				var minISR int
				d.ScanArgs(t, "elr", &elr)
				d.ScanArgs(t, "min-isr", &minISR)
				d.ScanArgs(t, "unclean", &unclean)
				w = emptyImage()
				w.defaults = &electionDefaults{elr: elr, minISR: int32(minISR), unclean: unclean}
				id := TopicID{1}
				recs := []Record{&ClusterIDRecord{ClusterID: "c"}}
				for b := int32(1); b <= 3; b++ {
					recs = append(recs, &RegisterBrokerRecord{BrokerID: b, BrokerEpoch: 1})
				}
				recs = append(recs, &TopicRecord{Name: "t", TopicID: id},
					&PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1})
				commit(recs)
			case "fence":
				id := brokerArg(t, d)
				b := w.Brokers[id]
				commit(append(removeBrokerRecords(w, id), &BrokerChangeRecord{BrokerID: id, BrokerEpoch: b.Epoch, Fenced: ptr(true)}))
			case "unfence":
				commit(unfenceRecords(w, brokerArg(t, d)))
			case "alter":
				var isr string
				d.ScanArgs(t, "isr", &isr)
				p := w.Topics["t"].Partitions[0]
				req := AlterPartition{TopicID: TopicID{1}, Partition: 0, LeaderID: p.Leader, BrokerEpoch: -1,
					LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: parseIDs(t, isr),
					LeaderRecovering: d.HasArg("recovering")}
				tp, cur, verr := validateAlterPartition(w, &req)
				if verr != nil {
					fmt.Fprintf(&out, "refused: %s: %s\n", verr.code.Message, verr.msg)
					break
				}
				if rec := alterPartitionChange(w, tp.ID, cur, req.NewISR, !req.LeaderRecovering); rec != nil {
					commit([]Record{rec})
				}
			case "elect":
				kind := ElectPreferred
				if d.CmdArgs[0].Key == "unclean" {
					kind = ElectUnclean
				}
				rec, verr := planElection(w, "t", 0, kind)
				if verr != nil {
					fmt.Fprintf(&out, "%s: %s\n", verr.code.Message, verr.msg)
					break
				}
				commit([]Record{rec})
			case "config":
				arg := d.CmdArgs[0]
				commit([]Record{&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Key: arg.Key, Value: &arg.Vals[0]}})
			default:
				t.Fatalf("unknown command %s", d.Cmd)
			}
			p := w.Topics["t"].Partitions[0]
			fmt.Fprintf(&out, "leader=%d leader-epoch=%d partition-epoch=%d isr=%v elr=%v last-known-elr=%v recovering=%v\n",
				p.Leader, p.LeaderEpoch, p.PartitionEpoch, ids(p.ISR), ids(p.ELR), ids(p.LastKnownELR), p.LeaderRecovering)
			return out.String()
		})
	})
}

func brokerArg(t *testing.T, d *datadriven.TestData) int32 {
	t.Helper()
	n, err := strconv.Atoi(d.CmdArgs[0].Key)
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	return int32(n)
}

func parseIDs(t *testing.T, s string) []int32 {
	t.Helper()
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("replica list %q: %v", s, err)
		}
		out = append(out, int32(n))
	}
	return out
}

// ids renders a replica list as Kafka's tools do: [1,2].
func ids(s []int32) string {
	parts := make([]string, len(s))
	for i, id := range slices.Clone(s) {
		parts[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestUncleanElectionOnConfigChange: a partition whose only ISR member is fenced stays offline
// while an out-of-sync replica is alive, however many ticks pass; once the topic's
// unclean.leader.election.enable is set, the active controller's next unclean check (ticks of
// the injected clock) elects that replica, in leader recovery.
func TestUncleanElectionOnConfigChange(t *testing.T) {
	q, epochs := electionQuorum(t, 0)
	// t-0 on 1,2,3 led by 1: shrink its ISR to 1 alone, then fence 1.
	if r := q.alter(proposal(q, epochs, 0, 1))[0]; r.Err != nil {
		t.Fatalf("ISR shrink: %v %s", r.Err, r.Message)
	}
	q.call(func(c *Controller) error {
		_, err := c.Heartbeat(testCtx(t), BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], WantFence: true})
		return err
	})
	for i := 0; i < 3*uncleanCheckTicks; i++ {
		q.tick()
	}
	if p := q.partitions("t")[0]; p.Leader != -1 || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("with unclean election off, t-0 after its ISR was fenced: %+v", p)
	}
	on := "true"
	q.call(func(c *Controller) error {
		res, err := c.AlterConfigs(testCtx(t), []AlterConfigs{{ResourceType: ResourceTopic, ResourceName: "t",
			Ops: []ConfigOp{{Key: "unclean.leader.election.enable", Value: &on}}}}, false)
		if err == nil && res[0].Err != nil {
			err = fmt.Errorf("%v: %s", res[0].Err, res[0].Message)
		}
		return err
	})
	lead := q.leader()
	for i := 0; i < 3*uncleanCheckTicks && q.partitions("t")[0].Leader == -1; i++ {
		q.tick()
	}
	q.waitFor(lead.cfg.NodeID, "an unclean election of t-0", func(im *Image) bool {
		p := im.Topics["t"].Partitions[0]
		return p.Leader == 2 && slices.Equal(p.ISR, []int32{2}) && p.LeaderRecovering
	})
}

// TestELRThroughSessionExpiry runs KIP-966 on a three-voter quorum with the injected clock:
// with min.insync.replicas=2, brokers whose heartbeats stop are fenced after the session
// timeout (ticks), the ISR shrinks below min.insync.replicas into the ELR and then to
// nothing, and the first eligible replica to heartbeat again leads cleanly.
func TestELRThroughSessionExpiry(t *testing.T) {
	q := newTestQuorumWith(t, func(cfg *Config) {
		cfg.SessionTimeout, cfg.EligibleLeaderReplicas, cfg.MinInsyncReplicas = time.Second, true, 2
	}, 1, 2, 3)
	q.waitFor(q.leader().cfg.NodeID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		epochs[id] = q.register(id, 1)
		q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id]})
	}
	q.call(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {1, 2, 3}}}}, false)
		if err == nil && res[0].Err != nil {
			err = fmt.Errorf("%v: %s", res[0].Err, res[0].Message)
		}
		return err
	})
	// alive heartbeats every tick until want holds (bounded: a few session timeouts).
	until := func(what string, alive []int32, want func(p PartitionInfo) bool) PartitionInfo {
		t.Helper()
		for i := 0; i < 100; i++ {
			if p := q.partitions("t")[0]; want(p) {
				return p
			}
			for _, id := range alive {
				q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id]})
			}
			q.tick()
		}
		t.Fatalf("%s: never; partition %+v", what, q.partitions("t")[0])
		return PartitionInfo{}
	}
	until("3 fenced", []int32{1, 2}, func(p PartitionInfo) bool { return slices.Equal(p.ISR, []int32{1, 2}) })
	if p := q.partitions("t")[0]; len(p.ELR) != 0 {
		t.Fatalf("an ISR at min.insync.replicas has no ELR: %+v", p)
	}
	until("2 fenced", []int32{1}, func(p PartitionInfo) bool {
		return slices.Equal(p.ISR, []int32{1}) && slices.Equal(p.ELR, []int32{2}) && p.Leader == 1
	})
	until("1 fenced", nil, func(p PartitionInfo) bool {
		return len(p.ISR) == 0 && slices.Equal(p.ELR, []int32{1, 2}) && p.Leader == -1 && slices.Equal(p.LastKnownELR, []int32{1})
	})
	// 3 heartbeats again: unfenced, but out of sync, so no leader.
	until("3 unfenced", []int32{3}, func(p PartitionInfo) bool { return !q.leader().Image().Brokers[3].Fenced })
	if p := q.partitions("t")[0]; p.Leader != -1 {
		t.Fatalf("out-of-sync replica 3 elected with unclean election off: %+v", p)
	}
	// 2 heartbeats again: an eligible leader replica, elected cleanly.
	p := until("2 elected from the ELR", []int32{2, 3}, func(p PartitionInfo) bool { return p.Leader == 2 })
	if !slices.Equal(p.ISR, []int32{2}) || !slices.Equal(p.ELR, []int32{1}) || len(p.LastKnownELR) != 0 || p.LeaderRecovering {
		t.Fatalf("after the ELR election: %+v", p)
	}
}
