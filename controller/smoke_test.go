package controller

import (
	"context"
	"testing"
)

func TestSmokeStartCreateClose(t *testing.T) {
	dir := t.TempDir()
	c, err := Start(Config{NodeID: 1, Dir: dir, Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}})
	if err != nil {
		t.Fatal(err)
	}
	im := c.Image()
	if im.ClusterID == "" || im.Brokers[1] == nil || im.ControllerID != 1 {
		t.Fatalf("bad image %+v", im)
	}
	res, err := c.CreateTopics(context.Background(), []CreateTopic{{Name: "foo", NumPartitions: 3, ReplicationFactor: 1}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	if c.Image().Topics["foo"] == nil || len(c.Image().Topics["foo"].Partitions) != 3 {
		t.Fatal("no topic")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = Start(Config{NodeID: 1, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Image().Topics["foo"] == nil || c.Image().Brokers[1].Epoch != 2 {
		t.Fatalf("after restart %+v", c.Image())
	}
}
