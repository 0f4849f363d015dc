package controller

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// formatImage renders an image deterministically for datadriven expectations.
func formatImage(im *Image) string {
	var b strings.Builder
	fmt.Fprintf(&b, "offset=%d cluster=%q next-producer-id=%d\n", im.Offset, im.ClusterID, im.NextProducerID)
	ids := make([]int32, 0, len(im.Brokers))
	for id := range im.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		br := im.Brokers[id]
		var eps []string
		for _, e := range br.Endpoints {
			eps = append(eps, fmt.Sprintf("%s://%s:%d", e.Listener, e.Host, e.Port))
		}
		rack := "-"
		if br.Rack != nil {
			rack = *br.Rack
		}
		fmt.Fprintf(&b, "broker %d epoch=%d fenced=%t rack=%s endpoints=%s\n", id, br.Epoch, br.Fenced, rack, strings.Join(eps, ","))
	}
	names := make([]string, 0, len(im.Topics))
	for n := range im.Topics {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t := im.Topics[n]
		if im.TopicsByID[t.ID] != t {
			fmt.Fprintf(&b, "!! topic %s missing from TopicsByID\n", n)
		}
		fmt.Fprintf(&b, "topic %s id=%s internal=%t configs=%s\n", n, t.ID, t.Internal, formatConfigs(t.Configs))
		for _, p := range t.Partitions {
			fmt.Fprintf(&b, "  p%d replicas=%v isr=%v leader=%d leader-epoch=%d partition-epoch=%d\n",
				p.Partition, p.Replicas, p.ISR, p.Leader, p.LeaderEpoch, p.PartitionEpoch)
		}
	}
	if len(im.TopicsByID) != len(im.Topics) {
		fmt.Fprintf(&b, "!! %d topics by name, %d by ID\n", len(im.Topics), len(im.TopicsByID))
	}
	resources := make([]string, 0, len(im.BrokerConfigs))
	for r := range im.BrokerConfigs {
		resources = append(resources, r)
	}
	slices.Sort(resources)
	for _, r := range resources {
		fmt.Fprintf(&b, "broker-config %q %s\n", r, formatConfigs(im.BrokerConfigs[r]))
	}
	return b.String()
}

func formatConfigs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

var recordNames = map[string]RecordType{
	"cluster-id":      RecordClusterID,
	"register-broker": RecordRegisterBroker,
	"topic":           RecordTopic,
	"partition":       RecordPartition,
	"config":          RecordConfig,
	"remove-topic":    RecordRemoveTopic,
	"producer-ids":    RecordProducerIDs,
}

// parseRecords reads lines "<record-name> <json>".
func parseRecords(t *testing.T, input string) []Record {
	var recs []Record
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, payload, _ := strings.Cut(line, " ")
		typ, ok := recordNames[name]
		if !ok {
			t.Fatalf("unknown record %q", name)
		}
		r := newRecord(typ)
		if err := json.Unmarshal([]byte(payload), r); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestStateMachine drives applyRecords with record sequences from testdata/state_machine.
//
//	apply            records (one batch), prints the image and any skipped records
//	roundtrip        encodes the image as a snapshot, decodes it, prints the result
func TestStateMachine(t *testing.T) {
	datadriven.Walk(t, "testdata/state_machine", func(t *testing.T, path string) {
		img := emptyImage()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "apply":
				recs := parseRecords(t, d.Input)
				// Every record survives its own encoding, as it does through the log.
				_, decoded, err := decodeEntry(encodeEntry(7, recs))
				if err != nil {
					t.Fatal(err)
				}
				before := formatImage(img)
				next, errs := applyRecords(img, img.Offset+1, decoded)
				if after := formatImage(img); after != before {
					t.Fatalf("base image changed by apply:\n%s\n---\n%s", before, after)
				}
				img = next
				var b strings.Builder
				for _, err := range errs {
					fmt.Fprintf(&b, "skipped: %v\n", err)
				}
				b.WriteString(formatImage(img))
				return b.String()
			case "roundtrip":
				back, err := decodeImage(encodeImage(img))
				if err != nil {
					return err.Error()
				}
				if got, want := formatImage(back), formatImage(img); got != want {
					return "MISMATCH\n" + got
				}
				return "ok"
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}
