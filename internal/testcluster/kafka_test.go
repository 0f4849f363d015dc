package testcluster

import (
	"slices"
	"testing"
)

// A later setting of a key replaces the default in place, so callers override KafkaDefaults
// without Java's properties loader seeing the key twice.
func TestPropertiesFileLaterKeyWins(t *testing.T) {
	got := propertiesFile([]string{"a=1", "b=2", "a=3", "c=x=y"})
	if want := "a=3\nb=2\nc=x=y\n"; got != want {
		t.Errorf("propertiesFile = %q, want %q", got, want)
	}
}

func TestKafkaDefaultsReplicateInternalTopicsAtMostThreeWays(t *testing.T) {
	if got := KafkaDefaults(1); !slices.Contains(got, "offsets.topic.replication.factor=1") || !slices.Contains(got, "transaction.state.log.min.isr=1") {
		t.Errorf("one node: %v", got)
	}
	if got := KafkaDefaults(5); !slices.Contains(got, "offsets.topic.replication.factor=3") || !slices.Contains(got, "transaction.state.log.min.isr=2") {
		t.Errorf("five nodes: %v", got)
	}
}

// A node with a Command runs it verbatim: no sluice flags are added.
func TestNodeCommandRunsVerbatim(t *testing.T) {
	n, err := NewNode(NodeConfig{Command: []string{"java", "-cp", "x", "kafka.Kafka", "p"}, ID: 2, Name: "kafka", Dir: "/d"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n.Args(), []string{"java", "-cp", "x", "kafka.Kafka", "p"}; !slices.Equal(got, want) {
		t.Errorf("Args = %v, want %v", got, want)
	}
	if n.ID != 2 {
		t.Errorf("ID = %d", n.ID)
	}
}
