package broker

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/logstore"
)

// TestSplicedFetchEncodingMatchesKmsg checks that the hand-written fetch encoding, with record
// bytes spliced in from a file, is byte for byte kmsg's encoding of the same response, for
// every version sluice serves.
func TestSplicedFetchEncodingMatchesKmsg(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "segment"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	fileBytes := make([]byte, 1<<16)
	for i := range fileBytes {
		fileBytes[i] = byte(rng.IntN(256))
	}
	if _, err := f.Write(fileBytes); err != nil {
		t.Fatal(err)
	}
	rack := "r1"
	for version := int16(4); version <= 18; version++ {
		for trial := 0; trial < 20; trial++ {
			want := kmsg.NewPtrFetchResponse()
			want.Version = version
			want.ThrottleMillis, want.ErrorCode, want.SessionID = rng.Int32(), int16(rng.IntN(3)), rng.Int32()
			if version >= 12 && rng.IntN(2) == 0 {
				want.Brokers = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "h", Port: 9092, Rack: &rack}, {NodeID: 2, Host: "h2", Port: 1}}
			}
			got := &splicedFetchResponse{FetchResponse: kmsg.NewPtrFetchResponse()}
			*got.FetchResponse = *want
			got.Topics = nil
			for ti := 0; ti < rng.IntN(3); ti++ {
				wt := kmsg.NewFetchResponseTopic()
				wt.Topic = "topic-" + string(rune('a'+ti))
				wt.TopicID = [16]byte{byte(ti + 1)}
				gt := wt
				var slices [][]logstore.FileSlice
				for pi := 0; pi < rng.IntN(4); pi++ {
					wp := kmsg.NewFetchResponseTopicPartition()
					wp.Partition, wp.ErrorCode = int32(pi), int16(rng.IntN(2))
					wp.HighWatermark, wp.LastStableOffset, wp.LogStartOffset = rng.Int64(), rng.Int64(), rng.Int64()
					wp.PreferredReadReplica = -1
					if rng.IntN(2) == 0 {
						wp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 9}}
					}
					if version >= 12 && rng.IntN(3) == 0 {
						wp.DivergingEpoch.Epoch, wp.DivergingEpoch.EndOffset = 3, 100
						wp.CurrentLeader.LeaderID, wp.CurrentLeader.LeaderEpoch = 2, 4
					}
					var ps []logstore.FileSlice
					wp.RecordBatches = []byte{}
					for range rng.IntN(3) {
						pos, n := int64(rng.IntN(1<<15)), int64(rng.IntN(1<<14))
						ps = append(ps, logstore.FileSlice{File: f, Position: pos, Length: n})
						wp.RecordBatches = append(wp.RecordBatches, fileBytes[pos:pos+n]...)
					}
					gp := wp
					gp.RecordBatches = nil
					if len(ps) == 0 {
						gp.RecordBatches = []byte{}
					}
					wt.Partitions = append(wt.Partitions, wp)
					gt.Partitions = append(gt.Partitions, gp)
					slices = append(slices, ps)
				}
				want.Topics = append(want.Topics, wt)
				got.Topics = append(got.Topics, gt)
				got.records = append(got.records, slices)
			}
			wantBytes := want.AppendTo([]byte("prefix"))
			gotBytes := got.AppendTo([]byte("prefix"))
			if !bytes.Equal(wantBytes, gotBytes) {
				t.Fatalf("v%d trial %d: encodings differ\nkmsg: %x\nours: %x", version, trial, wantBytes, gotBytes)
			}
			back := kmsg.NewPtrFetchResponse()
			back.Version = version
			if err := back.ReadFrom(gotBytes[len("prefix"):]); err != nil {
				t.Fatalf("v%d: kmsg cannot read our encoding: %v", version, err)
			}
		}
	}
}
