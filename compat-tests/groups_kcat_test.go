package compattests

import (
	"strconv"
	"testing"
	"time"
)

// TestGroupsKcat: kcat's balanced consumer (-G, librdkafka's KafkaConsumer with the classic
// protocol) consumes every record of a 3-partition topic, commits on close, and a second run
// of the same group resumes from the committed offsets and sees only the newer records.
func TestGroupsKcat(t *testing.T) {
	bin := lookPath(t, "kcat")
	b, cl, adm := startGroupBroker(t)
	const topic, group = "groups-kcat", "kcat-group"
	groupsCreateTopic(t, adm, topic, 3)

	consume := func(n int) []string {
		t.Helper()
		// -c n: exit after n records; closing the consumer commits the stored offsets
		// (enable.auto.commit defaults to true). A fresh group starts at the earliest offset.
		out := runCmd(t, 60*time.Second, "", bin, "-b", b.Addr, "-q",
			"-X", "auto.offset.reset=earliest", "-X", "socket.timeout.ms=20000",
			"-G", group, "-c", strconv.Itoa(n), "-f", `%s\n`, topic)
		return sortedLines(out)
	}

	first := groupsProduce(t, cl, topic, "first", 30)
	got := consume(len(first))
	if missing, extra := diffSets(got, first); len(missing)+len(extra) > 0 {
		t.Fatalf("first run: %d records, missing %v, unexpected or repeated %v", len(got), missing, extra)
	}
	waitCommittedAtEnd(t, adm, group, topic, 10*time.Second)

	second := groupsProduce(t, cl, topic, "second", 12)
	got = consume(len(second))
	if missing, extra := diffSets(got, second); len(missing)+len(extra) > 0 {
		t.Fatalf("second run did not resume from the committed offsets: %d records, missing %v, unexpected or repeated %v",
			len(got), missing, extra)
	}
	waitCommittedAtEnd(t, adm, group, topic, 10*time.Second)
}
