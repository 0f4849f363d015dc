package controller

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// syncBuffer is a log destination shared by the quorum's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// TestRefusedRegistrationsAndHeartbeatsLoggedOnce: a registration with another cluster's ID,
// a heartbeat from a broker that never registered and one with a stale broker epoch are each
// refused with Kafka's error, every time, and each kind is logged once however often it
// repeats; the quorum keeps working.
func TestRefusedRegistrationsAndHeartbeatsLoggedOnce(t *testing.T) {
	logs := &syncBuffer{}
	q := newTestQuorumWith(t, func(cfg *Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}, 1, 2, 3)
	lead := q.leader()
	q.waitFor(lead.cfg.NodeID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	q.register(1, 1)
	old := q.register(2, 1)
	if now := q.register(2, 2); now <= old {
		t.Fatalf("new incarnation's epoch %d, not above %d", now, old)
	}
	for range 3 {
		q.call(func(c *Controller) error {
			_, err := c.RegisterBroker(testCtx(t), BrokerRegistration{BrokerID: 5, ClusterID: "another-cluster-id", IncarnationID: [16]byte{5}})
			if errors.Is(err, kerr.NotController) {
				return err
			}
			if !errors.Is(err, kerr.InconsistentClusterID) {
				t.Fatalf("registration with another cluster ID: %v, want INCONSISTENT_CLUSTER_ID", err)
			}
			return nil
		})
		q.call(func(c *Controller) error {
			_, err := c.Heartbeat(testCtx(t), BrokerHeartbeat{BrokerID: 2, BrokerEpoch: old, MetadataOffset: c.Image().Offset})
			if errors.Is(err, kerr.NotController) {
				return err
			}
			if !errors.Is(err, kerr.StaleBrokerEpoch) {
				t.Fatalf("heartbeat with the old epoch: %v, want STALE_BROKER_EPOCH", err)
			}
			return nil
		})
		q.call(func(c *Controller) error {
			_, err := c.Heartbeat(testCtx(t), BrokerHeartbeat{BrokerID: 9, BrokerEpoch: 1})
			if errors.Is(err, kerr.NotController) {
				return err
			}
			if !errors.Is(err, kerr.BrokerIDNotRegistered) {
				t.Fatalf("heartbeat from an unregistered broker: %v, want BROKER_ID_NOT_REGISTERED", err)
			}
			return nil
		})
	}
	if im := q.leader().Image(); im.Brokers[5] != nil || im.Brokers[9] != nil {
		t.Fatalf("a refused broker was registered: %v", im.Brokers)
	}
	for _, msg := range []string{
		"refused broker registration: wrong cluster ID",
		"refused broker heartbeat: stale broker epoch",
		"refused broker heartbeat: broker not registered",
	} {
		if n := logs.count(msg); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", msg, n, logs.buf.String())
		}
	}
	q.register(3, 1)
}
