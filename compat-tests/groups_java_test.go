package compattests

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	consoleConsumerClass = "org.apache.kafka.tools.consumer.ConsoleConsumer"
	groupCommandClass    = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
)

// TestGroupsJava drives consumer groups with Apache Kafka's Java consumer (ConsoleConsumer
// with --group, once with group.protocol=classic and once with group.protocol=consumer, i.e.
// KIP-848) and manages them with kafka-consumer-groups (ConsumerGroupCommand): --list,
// --describe, --reset-offsets --to-earliest --execute followed by a re-read from the start,
// and --delete.
func TestGroupsJava(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	b, cl, adm := startGroupBroker(t)
	const topic, partitions = "groups-java", 3
	const classicGroup, consumerGroup = "java-classic", "java-consumer"
	groupsCreateTopic(t, adm, topic, partitions)
	values := groupsProduce(t, cl, topic, "java", 30)

	// consoleConsume reads exactly n records with the group and protocol; the tool commits on
	// close (enable.auto.commit defaults to true).
	consoleConsume := func(t *testing.T, group, protocol string, n int) []string {
		t.Helper()
		start := time.Now()
		out, stderr := javaTool(t, "", consoleConsumerClass, "--bootstrap-server", b.Addr, "--topic", topic,
			"--group", group, "--from-beginning", "--max-messages", strconv.Itoa(n), "--timeout-ms", "45000",
			"--command-property", "group.protocol="+protocol)
		// A JVM run takes 2-5s; far longer is worth a look at what the client and broker said.
		if d := time.Since(start); d > 15*time.Second {
			t.Logf("ConsoleConsumer (%s, group %s) took %v; its stderr:\n%s\nbroker log lines naming the group:\n%s",
				protocol, group, d, clip(stderr), grepLines(b.Log(), group))
		}
		if !strings.Contains(stderr, fmt.Sprintf("Processed a total of %d messages", n)) {
			t.Errorf("ConsoleConsumer (%s) stderr lacks the message count %d:\n%s", protocol, n, clip(stderr))
		}
		return sortedLines(out)
	}
	groupCommand := func(t *testing.T, args ...string) string {
		t.Helper()
		out, _ := javaTool(t, "", groupCommandClass, append([]string{"--bootstrap-server", b.Addr}, args...)...)
		return out
	}

	for _, tc := range []struct{ group, protocol string }{
		{classicGroup, "classic"},
		{consumerGroup, "consumer"},
	} {
		t.Run("ConsoleConsumer_"+tc.protocol, func(t *testing.T) {
			got := consoleConsume(t, tc.group, tc.protocol, len(values))
			if missing, extra := diffSets(got, values); len(missing)+len(extra) > 0 {
				t.Fatalf("read %d records; missing %v, unexpected or repeated %v", len(got), missing, extra)
			}
			waitCommittedAtEnd(t, adm, tc.group, topic, 10*time.Second)
		})
	}
	if t.Failed() {
		return
	}

	t.Run("List", func(t *testing.T) {
		out := groupCommand(t, "--list")
		for _, g := range []string{classicGroup, consumerGroup} {
			if !containsLine(out, g) {
				t.Errorf("--list does not show %s:\n%s", g, out)
			}
		}
		// --list --type shows which protocol each group uses (Kafka 4.x: Classic / Consumer).
		out = groupCommand(t, "--list", "--type")
		for g, typ := range map[string]string{classicGroup: "Classic", consumerGroup: "Consumer"} {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(g) + `\s+` + typ + `\s*$`).MatchString(out) {
				t.Errorf("--list --type does not show %s as %s:\n%s", g, typ, out)
			}
		}
	})

	t.Run("Describe", func(t *testing.T) {
		end := groupsEndOffsets(t, adm, topic)
		for _, g := range []string{classicGroup, consumerGroup} {
			out := groupCommand(t, "--describe", "--group", g)
			rows := describeOffsetRows(out, g, topic)
			if len(rows) != partitions {
				t.Errorf("--describe --group %s shows %d partition rows of %s, want %d:\n%s", g, len(rows), topic, partitions, out)
				continue
			}
			for p, r := range rows {
				if r.current != end[p] || r.logEnd != end[p] || r.lag != 0 {
					t.Errorf("--describe --group %s partition %d: current %d log-end %d lag %d, want %d %d 0:\n%s",
						g, p, r.current, r.logEnd, r.lag, end[p], end[p], out)
				}
			}
		}
	})

	t.Run("ResetOffsetsToEarliest", func(t *testing.T) {
		out := groupCommand(t, "--reset-offsets", "--group", classicGroup, "--topic", topic, "--to-earliest", "--execute")
		// The result table: GROUP TOPIC PARTITION NEW-OFFSET.
		newOffsets := regexp.MustCompile(`(?m)^`+classicGroup+`\s+`+topic+`\s+(\d+)\s+(\d+)\s*$`).FindAllStringSubmatch(out, -1)
		if len(newOffsets) != partitions {
			t.Errorf("--reset-offsets printed %d partition rows, want %d:\n%s", len(newOffsets), partitions, out)
		}
		for _, m := range newOffsets {
			if m[2] != "0" {
				t.Errorf("--reset-offsets partition %s: new offset %s, want 0:\n%s", m[1], m[2], out)
			}
		}
		committed, err := groupsCommitted(t, adm, classicGroup, topic)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int32]int64{0: 0, 1: 0, 2: 0}; !sameOffsets(committed, want) {
			t.Fatalf("after --reset-offsets --to-earliest the committed offsets are %v, want %v", committed, want)
		}
		// The group's next consumer starts over from the reset offsets.
		got := consoleConsume(t, classicGroup, "classic", len(values))
		if missing, extra := diffSets(got, values); len(missing)+len(extra) > 0 {
			t.Fatalf("re-read after the reset: %d records; missing %v, unexpected or repeated %v", len(got), missing, extra)
		}
		waitCommittedAtEnd(t, adm, classicGroup, topic, 10*time.Second)
	})

	t.Run("ResetOffsetsDryRunAndToDatetime", func(t *testing.T) {
		// --dry-run prints the plan and changes nothing.
		before, err := groupsCommitted(t, adm, consumerGroup, topic)
		if err != nil {
			t.Fatal(err)
		}
		out := groupCommand(t, "--reset-offsets", "--group", consumerGroup, "--topic", topic, "--to-earliest", "--dry-run")
		if n := len(regexp.MustCompile(`(?m)^`+consumerGroup+`\s+`+topic+`\s+\d+\s+0\s*$`).FindAllString(out, -1)); n != partitions {
			t.Errorf("--dry-run --to-earliest shows %d partitions planned at 0, want %d:\n%s", n, partitions, out)
		}
		after, err := groupsCommitted(t, adm, consumerGroup, topic)
		if err != nil {
			t.Fatal(err)
		}
		if !sameOffsets(before, after) {
			t.Errorf("--dry-run changed the committed offsets from %v to %v", before, after)
		}
		// --to-datetime far in the future: no record is that new, so every partition goes to
		// its end (ListOffsets by timestamp answers -1, which the tool maps to the end).
		future := time.Now().Add(24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000")
		groupCommand(t, "--reset-offsets", "--group", consumerGroup, "--topic", topic, "--to-datetime", future, "--execute")
		waitCommittedAtEnd(t, adm, consumerGroup, topic, 10*time.Second)
		// --to-datetime in the past: every partition goes back to its first record.
		groupCommand(t, "--reset-offsets", "--group", consumerGroup, "--topic", topic, "--to-datetime", "2000-01-01T00:00:00.000", "--execute")
		got, err := groupsCommitted(t, adm, consumerGroup, topic)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int32]int64{0: 0, 1: 0, 2: 0}; !sameOffsets(got, want) {
			t.Errorf("after --to-datetime 2000-01-01 the committed offsets are %v, want %v", got, want)
		}
	})

	t.Run("DeleteOffsets", func(t *testing.T) {
		// OffsetDelete on an empty group removes the topic's committed offsets.
		out := groupCommand(t, "--delete-offsets", "--group", consumerGroup, "--topic", topic)
		if n := len(regexp.MustCompile(`(?m)^`+topic+`\s+\d+\s+Successful\s*$`).FindAllString(out, -1)); n != partitions {
			t.Errorf("--delete-offsets shows %d partitions Successful, want %d:\n%s", n, partitions, out)
		}
		got, err := groupsCommitted(t, adm, consumerGroup, topic)
		if err != nil || len(got) != 0 {
			t.Errorf("after --delete-offsets: committed offsets %v (err %v), want none", got, err)
		}
	})

	t.Run("ActiveGroups", func(t *testing.T) {
		// Two franz-go members in a classic group and two in a KIP-848 group, live while the
		// tool looks at them.
		const activeTopic = "groups-java-active"
		groupsCreateTopic(t, adm, activeTopic, partitions)
		groupsProduce(t, cl, activeTopic, "active", 30)
		type active struct{ group, strategy string }
		groups := []active{{"java-active-classic", "cooperative-sticky"}, {"java-active-consumer", "uniform"}}
		for _, g := range groups {
			cfg := churnConfig{b: b, group: g.group, topic: activeTopic, balancer: kgo.CooperativeStickyBalancer()}
			if g.strategy == "uniform" {
				cfg.balancer, cfg.serverSide = kgo.StickyBalancer(), true
			}
			own, sink := newOwnership(), newConsumedSink()
			for _, name := range []string{g.group + "-a", g.group + "-b"} {
				startChurnMember(t, cfg, name, own, sink)
			}
			waitFor(t, churnSettle, g.group+" settles on two members", func() error {
				return own.settledOn([]string{g.group + "-a", g.group + "-b"}, partitions)
			})
		}

		out := groupCommand(t, "--describe", "--members", "--group", groups[0].group, "--group", groups[1].group)
		for _, g := range groups {
			// GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS
			rows := regexp.MustCompile(`(?m)^`+g.group+`\s+\S+\s+\S+\s+(`+g.group+`-[ab])\s+(\d+)\s*$`).FindAllStringSubmatch(out, -1)
			total := 0
			for _, r := range rows {
				n, _ := strconv.Atoi(r[2])
				total += n
			}
			if len(rows) != 2 || total != partitions {
				t.Errorf("--describe --members: %s shows %d members with %d partitions, want 2 with %d:\n%s", g.group, len(rows), total, partitions, out)
			}
		}

		out = groupCommand(t, "--describe", "--state", "--group", groups[0].group, "--group", groups[1].group)
		for _, g := range groups {
			// GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
			if !regexp.MustCompile(`(?m)^` + g.group + `\s+\S+\s+\(\d+\)\s+` + g.strategy + `\s+Stable\s+2\s*$`).MatchString(out) {
				t.Errorf("--describe --state does not show %s Stable with strategy %s and 2 members:\n%s", g.group, g.strategy, out)
			}
		}

		// Deleting a group with members is refused (GROUP_NOT_EMPTY) and leaves it in place.
		stdout, stderr, _ := runCmdErr(javaTimeout, "", lookPath(t, "java"), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
			"-cp", filepath.Join(kafkaJars(t), "*"), groupCommandClass, "--bootstrap-server", b.Addr, "--delete",
			"--group", groups[0].group, "--group", groups[1].group)
		for _, g := range groups {
			if !strings.Contains(stdout+stderr, "Group '"+g.group+"' could not be deleted due to: ") ||
				!strings.Contains(stdout+stderr, "GroupNotEmptyException") {
				t.Errorf("--delete of the active group %s did not report GroupNotEmpty:\nstdout:\n%s\nstderr:\n%s", g.group, clip(stdout), clip(stderr))
			}
			if _, err := groupsCommitted(t, adm, g.group, activeTopic); err != nil {
				t.Errorf("%s after the refused --delete: %v", g.group, err)
			}
		}
	})

	t.Run("Delete", func(t *testing.T) {
		for _, g := range []string{classicGroup, consumerGroup} {
			out := groupCommand(t, "--delete", "--group", g)
			if !strings.Contains(out, "Deletion of requested consumer groups ('"+g+"') was successful.") {
				t.Errorf("--delete --group %s printed:\n%s", g, out)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), groupsAdminTimeout)
		defer cancel()
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range []string{classicGroup, consumerGroup} {
			if _, ok := listed[g]; ok {
				t.Errorf("group %s still listed after --delete: %v", g, listed.Groups())
			}
			committed, err := groupsCommitted(t, adm, g, topic)
			if err != nil || len(committed) != 0 {
				t.Errorf("group %s after --delete: committed offsets %v (err %v), want none", g, committed, err)
			}
		}
	})
}

// describeRow is one partition row of kafka-consumer-groups --describe.
type describeRow struct{ current, logEnd, lag int64 }

// describeOffsetRows parses --describe's table (GROUP TOPIC PARTITION CURRENT-OFFSET
// LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID) for group and topic, by partition.
func describeOffsetRows(out, group, topic string) map[int32]describeRow {
	row := regexp.MustCompile(`^` + regexp.QuoteMeta(group) + `\s+` + regexp.QuoteMeta(topic) + `\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)`)
	rows := make(map[int32]describeRow)
	for _, line := range strings.Split(out, "\n") {
		m := row.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[1])
		num := func(s string) int64 {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return -1 // "-" (no committed offset) or anything else unexpected
			}
			return n
		}
		rows[int32(p)] = describeRow{num(m[2]), num(m[3]), num(m[4])}
	}
	return rows
}

// TestGroupsJavaMembers runs testdata/groups_java/GroupCheck.java: two Java KafkaConsumers in
// one group, with group.protocol=classic (CooperativeStickyAssignor) and with
// group.protocol=consumer (KIP-848). A second member joining takes over some partitions, the
// first leaving hands all of them to the second (or, as static members with a
// group.instance.id, the first restarting under its instance id gets its own partitions back
// while the second keeps its own), no partition is ever owned by two members, and with
// commitSync after every poll each record is read exactly once.
func TestGroupsJavaMembers(t *testing.T) {
	java := lookPath(t, "java")
	javac := lookPath(t, "javac")
	jars := filepath.Join(kafkaJars(t), "*")
	classes := t.TempDir()
	runCmd(t, javaTimeout, "", javac, "-nowarn", "-cp", jars, "-d", classes, filepath.Join("testdata", "groups_java", "GroupCheck.java"))
	b, _, adm := startGroupBroker(t)
	for _, tc := range []struct{ protocol, mode string }{
		{"classic", "dynamic"}, {"consumer", "dynamic"}, {"classic", "static"}, {"consumer", "static"},
	} {
		t.Run(tc.protocol+"_"+tc.mode, func(t *testing.T) {
			topic, group := "groups-java-members-"+tc.protocol+"-"+tc.mode, "java-members-"+tc.protocol+"-"+tc.mode
			groupsCreateTopic(t, adm, topic, 4)
			out := runCmd(t, 2*javaTimeout, "", java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
				"-cp", classes+string(filepath.ListSeparator)+jars, "GroupCheck", b.Addr, topic, group, tc.protocol, "4", "200", tc.mode)
			if !strings.HasPrefix(lastLine(out), "OK ") {
				t.Fatalf("GroupCheck did not report OK:\n%s", clip(out))
			}
			t.Log(lastLine(out))
			waitCommittedAtEnd(t, adm, group, topic, 10*time.Second)
		})
	}
}

// grepLines returns the lines of s containing sub, bounded for a test log.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return clip(strings.Join(out, "\n"))
}
