package compattests

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGroupsConfluentCooperative runs testdata/groups_cooperative.py: two confluent-kafka
// consumers with the cooperative-sticky assignor; the second joining must move only some
// partitions (an incremental rebalance), and with synchronous commits every record is read
// exactly once across both. Afterwards the group's commits reach the end of every partition.
func TestGroupsConfluentCooperative(t *testing.T) {
	python := pythonWith(t, "confluent_kafka")
	b, _, adm := startGroupBroker(t)
	const topic, group, partitions = "groups-coop", "coop-group", 6
	groupsCreateTopic(t, adm, topic, partitions)
	out := runCmd(t, 120*time.Second, "", python, filepath.Join("testdata", "groups_cooperative.py"),
		b.Addr, topic, group, "6", "200")
	if !strings.HasPrefix(lastLine(out), "OK ") {
		t.Fatalf("groups_cooperative.py did not report OK:\n%s", clip(out))
	}
	t.Log(lastLine(out))
	waitCommittedAtEnd(t, adm, group, topic, 10*time.Second)
}
