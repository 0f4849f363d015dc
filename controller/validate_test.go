package controller

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestValidateTopicName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"Az09._-", true},
		{strings.Repeat("n", 249), true},
		{strings.Repeat("n", 250), false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"a b", false},
		{"a/b", false},
		{"a\x00", false},
		{"\u00e9", false},
	} {
		err := ValidateTopicName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.name, err)
		}
		if err != nil && !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("%q: %v does not unwrap to INVALID_TOPIC_EXCEPTION", tc.name, err)
		}
	}
}

func TestPlaceReplicas(t *testing.T) {
	brokers := []int32{1, 2, 3}
	rng := rand.New(rand.NewPCG(1, 2))
	assignments := placeReplicas(brokers, 0, 6, 2, rng)
	leaders := map[int32]int{}
	for p, replicas := range assignments {
		if len(replicas) != 2 || replicas[0] == replicas[1] {
			t.Fatalf("partition %d: %v", p, replicas)
		}
		leaders[replicas[0]]++
	}
	for _, b := range brokers {
		if leaders[b] != 2 {
			t.Errorf("broker %d leads %d partitions, want 2 (round-robin): %v", b, leaders[b], assignments)
		}
	}
	// Continuing from partition 6 keeps rotating.
	more := placeReplicas(brokers, 6, 3, 3, rng)
	for p, replicas := range more {
		seen := map[int32]bool{}
		for _, r := range replicas {
			seen[r] = true
		}
		if len(seen) != 3 {
			t.Errorf("partition %d: %v", 6+p, replicas)
		}
	}
}

func TestTopicCollision(t *testing.T) {
	im, _ := applyRecords(emptyImage(), 1, []Record{
		&TopicRecord{Name: "a.b", TopicID: TopicID{1}},
		&TopicRecord{Name: "plain", TopicID: TopicID{2}},
	})
	for name, want := range map[string]string{"a_b": "a.b", "a.b": "", "a-b": "", "plain": "", "x.y": ""} {
		if got := topicCollision(im, name); got != want {
			t.Errorf("collision(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestTopicIDs(t *testing.T) {
	seen := map[TopicID]bool{}
	for range 1000 {
		id := newTopicID()
		if id.IsZero() || seen[id] || strings.HasPrefix(id.String(), "-") {
			t.Fatalf("bad or repeated topic ID %s", id)
		}
		seen[id] = true
		back, err := ParseTopicID(id.String())
		if err != nil || back != id {
			t.Fatalf("round trip %s: %v", id, err)
		}
	}
	if _, err := ParseTopicID("short"); err == nil {
		t.Error("parsed a short ID")
	}
	if cid := newClusterID(); len(cid) != 22 {
		t.Errorf("cluster ID %q", cid)
	}
}
