package compattests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKafkaStorageFormatThenSluice: directories prepared by Apache Kafka's own
// `kafka-storage format -t ID` (two log.dirs, each with its meta.properties and directory.id,
// the first with Kafka's bootstrap checkpoint) are started by sluice as the new cluster ID
// names it: `kafka-cluster cluster-id` answers that ID, each directory keeps the directory.id
// Kafka gave it, and a restart finds the same cluster. Before, sluice refused them as a
// cluster whose metadata log was lost.
func TestKafkaStorageFormatThenSluice(t *testing.T) {
	const clusterID = "c2x1aWNlLWtzZi10ZXN0MQ"
	base := t.TempDir()
	d1, d2 := filepath.Join(base, "d1"), filepath.Join(base, "d2")
	props := filepath.Join(base, "server.properties")
	if err := os.WriteFile(props, []byte(strings.Join([]string{
		"process.roles=broker,controller", "node.id=1",
		"controller.quorum.voters=1@127.0.0.1:9093", "controller.listener.names=CONTROLLER",
		"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
		"log.dirs=" + d1 + "," + d2,
	}, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	javaTool(t, "", "kafka.tools.StorageTool", "format", "-t", clusterID, "-c", props)
	dirIDs := map[string]string{}
	for _, d := range []string{d1, d2} {
		dirIDs[d] = metaPropertiesValue(t, d, "directory.id")
	}

	b := StartBrokerWith(t, BrokerOptions{Dir: d1}, "log.dirs="+d1+","+d2)
	for round := range 2 {
		out, _ := javaTool(t, "", "org.apache.kafka.tools.ClusterTool", "cluster-id", "--bootstrap-server", b.Addr)
		if !strings.Contains(out, "Cluster ID: "+clusterID) {
			t.Fatalf("round %d: kafka-cluster cluster-id printed %q, want %s", round, out, clusterID)
		}
		for _, d := range []string{d1, d2} {
			if got := metaPropertiesValue(t, d, "directory.id"); got != dirIDs[d] {
				t.Fatalf("round %d: %s's directory.id is %s, kafka-storage format gave it %s", round, d, got, dirIDs[d])
			}
		}
		if round == 0 {
			b.Stop()
			b.Restart()
		}
	}
}
