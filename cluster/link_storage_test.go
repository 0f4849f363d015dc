package cluster

import (
	"testing"
	"time"
)

// TestLinkReportsOfflineLogDirs: a broker that is not the active controller reports its failed
// log directory through its Link (BrokerHeartbeat's OfflineLogDirs, over the controller
// listener), and the active controller marks its log directory offline; when the Link reports
// none again, it is marked online. Before, the heartbeat sent no directories and the field was
// ignored on arrival.
func TestLinkReportsOfflineLogDirs(t *testing.T) {
	ctx := testCtx(t)
	tc := newTestCluster(t, clusterTestConfig{tick: 10 * time.Millisecond, session: 3 * time.Second, heartbeat: 30 * time.Millisecond})
	tc.registerAll(ctx)
	f := tc.follower()
	f.link.SetOfflineLogDirs([][16]byte{{0xd1}})
	eventually(t, "the follower's log directory offline on the active controller", func() bool {
		b := tc.leader().ctrl.Image().Brokers[f.id]
		return b != nil && b.LogDirOffline && !b.Fenced
	})
	f.link.SetOfflineLogDirs(nil)
	eventually(t, "the follower's log directory online again", func() bool {
		b := tc.leader().ctrl.Image().Brokers[f.id]
		return b != nil && !b.LogDirOffline
	})
}
