package compattests

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pythonTimeout bounds one Python script run.
const pythonTimeout = 120 * time.Second

// pythonWith returns a python3 interpreter that can import module. Debian's packages
// (python3-confluent-kafka, python3-kafka) install into /usr/bin/python3's path, which is not
// the first python3 on PATH when a version manager such as pyenv is active.
func pythonWith(t *testing.T, module string) string {
	t.Helper()
	var tried []string
	for _, candidate := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(candidate)
		if err != nil {
			tried = append(tried, candidate+": "+err.Error())
			continue
		}
		if _, stderr, err := runCmdErr(30*time.Second, "", path, "-c", "import "+module); err != nil {
			tried = append(tried, path+": "+strings.TrimSpace(lastLine(stderr)))
			continue
		}
		return path
	}
	t.Fatalf("no python3 can import %s (run scripts/install-test-deps.sh): %s", module, strings.Join(tried, "; "))
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestPython runs the scripts in testdata/ with the two Python clients: each produces keyed
// records with headers and reads them back with an assigned (groupless) consumer.
func TestPython(t *testing.T) {
	b := StartBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	for _, tc := range []struct {
		name, module, script, topic string
		codec                       int16 // compression codec the script's producer asks for
		idempotent                  bool  // whether its batches carry a producer ID
	}{
		{"ConfluentKafka", "confluent_kafka", "confluent_roundtrip.py", "py-confluent", 3 /* lz4 */, true},
		{"KafkaPython", "kafka", "kafkapython_roundtrip.py", "py-kafka-python", 1 /* gzip */, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			python := pythonWith(t, tc.module)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, tc.topic); err != nil {
				t.Fatalf("creating %s: %v", tc.topic, err)
			}
			out := runCmd(t, pythonTimeout, "", python, filepath.Join("testdata", tc.script), b.Addr, tc.topic, "300")
			if !strings.HasPrefix(lastLine(out), "OK ") {
				t.Fatalf("%s did not report OK:\n%s", tc.script, out)
			}
			t.Log(lastLine(out))
			attrs, producerID := firstBatchHeader(t, b.Addr, tc.topic)
			if tc.idempotent != (producerID >= 0) {
				t.Errorf("first stored batch has producer ID %d; idempotent producer: %v", producerID, tc.idempotent)
			}
			if attrs&0x07 != tc.codec {
				minV, maxV := advertisedVersions(t, b.Addr, 0)
				t.Errorf("first stored batch has attributes %#x, want codec %d; ApiVersions advertises Produce v%d-v%d (see TestKcat/Compression_*)",
					attrs, tc.codec, minV, maxV)
			}
		})
	}
}
