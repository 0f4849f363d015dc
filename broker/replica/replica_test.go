package replica

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestDeleteRecordsTarget(t *testing.T) {
	tests := []struct {
		offset, hw int64
		want       int64
		err        error
	}{
		{-1, 10, 10, nil},
		{0, 10, 0, nil},
		{10, 10, 10, nil},
		{11, 10, 0, kerr.OffsetOutOfRange},
		{-2, 10, 0, kerr.OffsetOutOfRange},
	}
	for _, tt := range tests {
		got, err := deleteRecordsTarget(tt.offset, tt.hw)
		if got != tt.want || err != tt.err {
			t.Errorf("deleteRecordsTarget(%d, %d) = %d, %v; want %d, %v", tt.offset, tt.hw, got, err, tt.want, tt.err)
		}
	}
}
