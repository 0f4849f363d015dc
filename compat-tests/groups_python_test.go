package compattests

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGroupsConfluentCooperative runs testdata/groups_cooperative.py: two confluent-kafka
// consumers in one group. With the cooperative-sticky assignor the second joining must move
// only some partitions (an incremental rebalance); with the eager range assignor the first
// gives up everything and they split the partitions. Either way, with synchronous commits
// every record is read exactly once across both, and afterwards the group's commits reach the
// end of every partition.
func TestGroupsConfluentCooperative(t *testing.T) {
	python := pythonWith(t, "confluent_kafka")
	b, _, adm := startGroupBroker(t)
	for _, strategy := range []string{"cooperative-sticky", "range"} {
		t.Run(strategy, func(t *testing.T) {
			topic, group := "groups-py-"+strategy, "py-group-"+strategy
			groupsCreateTopic(t, adm, topic, 6)
			out, stderr, err := runCmdErr(120*time.Second, "", python, filepath.Join("testdata", "groups_cooperative.py"),
				b.Addr, topic, group, "6", "200", strategy)
			if err != nil || !strings.HasPrefix(lastLine(out), "OK ") {
				// stderr holds librdkafka's consumer-group debug log, newest last.
				if len(stderr) > 24<<10 {
					stderr = "[...]\n" + stderr[len(stderr)-24<<10:]
				}
				t.Fatalf("groups_cooperative.py did not report OK (%v):\n%s\nstderr (tail):\n%s", err, clip(out), stderr)
			}
			t.Log(lastLine(out))
			waitCommittedAtEnd(t, adm, group, topic, 10*time.Second)
		})
	}
}
