package logstore

import (
	"testing"

	"sluice/internal/batch"
)

func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, DefaultConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		b := batch.Build(batch.Header{BaseTimestamp: 1000, MaxTimestamp: 1002, ProducerID: -1, BaseSequence: -1, ProducerEpoch: -1},
			[]batch.Record{{Value: []byte("a")}, {TimestampDelta: 1, Value: []byte("b")}, {TimestampDelta: 2, Value: []byte("c")}})
		res, err := l.AppendAsLeader(b, 3)
		if err != nil {
			t.Fatal(err)
		}
		if res.FirstOffset != int64(i*3) {
			t.Fatalf("got %+v", res)
		}
	}
	rr, err := l.Read(4, 1<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rr)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir, DefaultConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 30 {
		t.Fatal(l.LogEndOffset())
	}
	l.Close()
}
