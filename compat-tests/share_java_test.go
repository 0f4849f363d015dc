//go:build sharejava

// The Java share consumer tests take 80-100 s on this machine (javac, three JVM runs, the
// lock timeout), over make test's budget for one test: they run under their own target,
// make share-java (go test -tags sharejava -run TestShareGroupsJava ./compat-tests/).

package compattests

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareBrokerSettings make share group timeouts short enough for a test: a 3 s acquisition
// lock (group.share.record.lock.duration.ms; Kafka's minimum is 1 s) so a dead consumer's
// records come back quickly, and a delivery limit of 3.
var shareBrokerSettings = []string{
	"num.partitions=1",
	"group.share.record.lock.duration.ms=3000",
	"group.share.delivery.count.limit=3",
	"group.share.heartbeat.interval.ms=1000",
}

// shareCheck compiles testdata/share_java/ShareCheck.java against Kafka 4.4's jars and returns
// the java binary and the classpath.
func shareCheck(t *testing.T) (java, classpath string) {
	t.Helper()
	java = lookPath(t, "java")
	javac := lookPath(t, "javac")
	jars := filepath.Join(streamsJars(t), "*")
	classes := t.TempDir()
	runCmd(t, javaTimeout, "", javac, "-nowarn", "-cp", jars, "-d", classes, filepath.Join("testdata", "share_java", "ShareCheck.java"))
	return java, classes + string(filepath.ListSeparator) + jars
}

var shareJVMFlags = []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m"}

// TestShareGroupsJava runs Kafka 4.4's KafkaShareConsumer (KIP-932) against sluice: three
// consumers in one share group on a one-partition topic each get their own records, every
// record exactly once; a record released share.delivery.count.limit times is archived (never
// delivered again) and a rejected one is delivered once; a consumer killed with records
// acquired, without acknowledging them, has them redelivered to another consumer once their
// acquisition locks time out, with a delivery count of 2; a share group with
// share.isolation.level=read_committed receives the committed records of a Java transactional
// producer and none of its aborted ones.
func TestShareGroupsJava(t *testing.T) {
	java, cp := shareCheck(t)
	b, cl, adm := startGroupBroker(t, shareBrokerSettings...)
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		out := runCmd(t, 2*javaTimeout, "", java, append(append(append([]string(nil), shareJVMFlags...), "-cp", cp, "ShareCheck"), args...)...)
		if !strings.HasPrefix(lastLine(out), "OK ") {
			t.Fatalf("ShareCheck %s did not report OK:\n%s", args[0], clip(out))
		}
		t.Log(lastLine(out))
		return out
	}

	t.Run("three_consumers", func(t *testing.T) {
		groupsCreateTopic(t, adm, "share-three", 1)
		run(t, "share", b.Addr, "share-three", "share-three-group", "300")
	})

	t.Run("release_reject_archive", func(t *testing.T) {
		groupsCreateTopic(t, adm, "share-release", 1)
		run(t, "release", b.Addr, "share-release", "share-release-group", "10", "3")
	})

	t.Run("read_committed", func(t *testing.T) {
		groupsCreateTopic(t, adm, "share-txn", 1)
		ctx, cancel := context.WithTimeout(context.Background(), javaTimeout)
		defer cancel()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "share-txn-group"
		for _, kv := range [][2]string{{"share.auto.offset.reset", "earliest"}, {"share.isolation.level", "read_committed"}} {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = kv[0], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kv[1])
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("group configs: %v", err)
		}
		run(t, "txn", b.Addr, "share-txn", "share-txn-group", "20")
	})

	t.Run("killed_consumer_redelivery", func(t *testing.T) {
		groupsCreateTopic(t, adm, "share-kill", 1)
		holder := exec.Command(java, append(append(append([]string(nil), shareJVMFlags...), "-cp", cp, "ShareCheck"), "hold", b.Addr, "share-kill", "share-kill-group", "5")...)
		stdout, err := holder.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
		held := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if line := sc.Text(); strings.HasPrefix(line, "HELD ") {
					held <- strings.TrimPrefix(line, "HELD ")
					break
				}
			}
			_, _ = io.Copy(io.Discard, stdout)
			close(held)
		}()
		var offsets string
		select {
		case offsets = <-held:
		case <-time.After(2 * javaTimeout):
		}
		if offsets == "" {
			t.Fatal("the holding consumer never reported acquired records")
		}
		// kill -9: no leave, no acknowledgement; only the lock timeout releases the records.
		if err := holder.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = holder.Wait()
		run(t, "take", b.Addr, "share-kill", "share-kill-group", offsets)
	})
}
