package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAlterGroupConfigs: group configs are ConfigRecords of ResourceGroup; the controller
// stores only the keys sluice honours (a request from the controller listener has not passed
// the broker's checks), a DELETE of the last key drops the group, and they survive a snapshot.
func TestAlterGroupConfigs(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	res, err := c.AlterConfigs(ctx, []AlterConfigs{
		{ResourceType: ResourceGroup, ResourceName: "g", Ops: []ConfigOp{{Key: "share.auto.offset.reset", Value: str("earliest")}, {Key: "share.record.lock.duration.ms", Value: str("20000")}}},
		{ResourceType: ResourceGroup, ResourceName: "h", Ops: []ConfigOp{{Key: "consumer.assignor.offload.enable", Value: str("true")}}},
		{ResourceType: ResourceGroup, ResourceName: "i", Ops: []ConfigOp{{Key: "share.record.lock.duration.ms", Value: str("10")}}},
		{ResourceType: ResourceGroup, ResourceName: "", Ops: []ConfigOp{{Key: "share.auto.offset.reset", Value: str("latest")}}},
		{ResourceType: ResourceGroup, ResourceName: "j", Ops: []ConfigOp{{Key: "share.isolation.level", Value: str("read_committed")}}},
		{ResourceType: ResourceGroup, ResourceName: "k", Ops: []ConfigOp{{Key: "share.isolation.level", Value: str("committed")}}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []*kerr.Error{nil, kerr.InvalidConfig, kerr.InvalidConfig, kerr.InvalidRequest, nil, kerr.InvalidConfig}
	for i, w := range want {
		if res[i].Err != error(w) && !(w == nil && res[i].Err == nil) {
			t.Errorf("%d: got %v (%s), want %v", i, res[i].Err, res[i].Message, w)
		}
	}
	im := c.Image()
	if got := formatConfigs(im.GroupConfigs["g"]); got != "{share.auto.offset.reset=earliest,share.record.lock.duration.ms=20000}" ||
		formatConfigs(im.GroupConfigs["j"]) != "{share.isolation.level=read_committed}" || len(im.GroupConfigs) != 2 {
		t.Fatalf("group configs %v", im.GroupConfigs)
	}
	back, err := decodeImage(encodeImage(im))
	if err != nil || formatConfigs(back.GroupConfigs["g"]) != formatConfigs(im.GroupConfigs["g"]) {
		t.Fatalf("after a snapshot: %v %v", back.GroupConfigs, err)
	}
	if _, err := c.AlterConfigs(ctx, []AlterConfigs{{ResourceType: ResourceGroup, ResourceName: "g", ReplaceAll: true},
		{ResourceType: ResourceGroup, ResourceName: "j", ReplaceAll: true}}, false); err != nil {
		t.Fatal(err)
	}
	if gc := c.Image().GroupConfigs; len(gc) != 0 {
		t.Fatalf("group configs after removing every key: %v", gc)
	}
}
