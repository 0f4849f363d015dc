package share

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestPartitionDataDriven runs the scripts in testdata/partition against one
// share partition on an injected clock. Every command prints its result and
// then the whole partition: SPSO, SPEO, next fetch offset, in-flight count and
// each run of offsets with its state, delivery count, holder and lock
// deadline (relative to the clock). Commands:
//
//	new [start=N] [max-in-flight=N] [delivery-limit=N] [lock=30s]
//	acquire member=M [from=N (default: next fetch offset)] to=N [max=N]
//	ack member=M          input: one batch a line, "first-last type[,type...]"
//	release-member member=M
//	advance d=10s         moves the clock, then expires due locks
//	log-start offset=N
//	archive-available from=N to=N
//	acquire-committed member=M to=N [max=N] aborted=F-L[,F-L...]
//	                      acquire, then archive what falls in the aborted ranges
//	show
func TestPartitionDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/partition", func(t *testing.T, path string) {
		var p *Partition
		now := time.Unix(1_000_000, 0)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			arg := func(key, def string) string {
				for _, a := range d.CmdArgs {
					if a.Key == key {
						return strings.Join(a.Vals, ",")
					}
				}
				return def
			}
			num := func(key string, def int64) int64 {
				n, err := strconv.ParseInt(arg(key, strconv.FormatInt(def, 10)), 10, 64)
				if err != nil {
					d.Fatalf(t, "%s: %v", key, err)
				}
				return n
			}
			var out strings.Builder
			if d.Cmd != "new" && p == nil {
				d.Fatalf(t, "no partition: start with new")
			}
			switch d.Cmd {
			case "new":
				lock, err := time.ParseDuration(arg("lock", "30s"))
				if err != nil {
					d.Fatalf(t, "lock: %v", err)
				}
				p, err = NewPartition(Config{
					MaxInFlight:      int(num("max-in-flight", 200)),
					MaxDeliveryCount: int(num("delivery-limit", 5)),
					LockDuration:     lock,
				}, num("start", 0))
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
			case "acquire":
				from := num("from", p.NextFetchOffset())
				ranges := p.Acquire(arg("member", ""), now, from, num("to", -1), int(num("max", 500)))
				if len(ranges) == 0 {
					out.WriteString("acquired: none\n")
				}
				for _, r := range ranges {
					fmt.Fprintf(&out, "acquired: %d-%d delivery=%d\n", r.FirstOffset, r.LastOffset, r.DeliveryCount)
				}
			case "ack":
				var batches []AckBatch
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					if line == "" {
						continue
					}
					batches = append(batches, parseAckBatch(t, d, line))
				}
				code := p.Acknowledge(arg("member", ""), now, batches)
				fmt.Fprintf(&out, "ack: %s\n", codeName(code))
			case "acquire-committed":
				ranges := p.Acquire(arg("member", ""), now, p.NextFetchOffset(), num("to", -1), int(num("max", 500)))
				var aborted []OffsetRange
				for _, a := range d.CmdArgs {
					if a.Key != "aborted" {
						continue
					}
					for _, v := range a.Vals {
						first, last, ok := strings.Cut(v, "-")
						f, err1 := strconv.ParseInt(first, 10, 64)
						l, err2 := strconv.ParseInt(last, 10, 64)
						if !ok || err1 != nil || err2 != nil {
							d.Fatalf(t, "aborted: want first-last, got %q", v)
						}
						aborted = append(aborted, OffsetRange{FirstOffset: f, LastOffset: l})
					}
				}
				ranges = p.ArchiveAcquired(arg("member", ""), ranges, aborted)
				if len(ranges) == 0 {
					out.WriteString("acquired: none\n")
				}
				for _, r := range ranges {
					fmt.Fprintf(&out, "acquired: %d-%d delivery=%d\n", r.FirstOffset, r.LastOffset, r.DeliveryCount)
				}
			case "release-member":
				fmt.Fprintf(&out, "released: %v\n", p.ReleaseMember(arg("member", "")))
			case "advance":
				dur, err := time.ParseDuration(arg("d", "0s"))
				if err != nil {
					d.Fatalf(t, "d: %v", err)
				}
				now = now.Add(dur)
				fmt.Fprintf(&out, "expired: %v\n", p.Expire(now))
			case "log-start":
				p.AdvanceLogStart(num("offset", 0))
			case "archive-available":
				fmt.Fprintf(&out, "archived: %v\n", p.ArchiveAvailable(num("from", 0), num("to", -1)))
			case "show":
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			writePartition(&out, p, now)
			return out.String()
		})
	})
}

func parseAckBatch(t *testing.T, d *datadriven.TestData, line string) AckBatch {
	fields := strings.Fields(line)
	if len(fields) != 2 {
		d.Fatalf(t, "ack line %q: want \"first-last types\"", line)
	}
	first, last, ok := strings.Cut(fields[0], "-")
	if !ok {
		d.Fatalf(t, "ack line %q: want first-last", line)
	}
	var b AckBatch
	var err error
	if b.FirstOffset, err = strconv.ParseInt(first, 10, 64); err != nil {
		d.Fatalf(t, "ack line %q: %v", line, err)
	}
	if b.LastOffset, err = strconv.ParseInt(last, 10, 64); err != nil {
		d.Fatalf(t, "ack line %q: %v", line, err)
	}
	for _, name := range strings.Split(fields[1], ",") {
		typ := AckType(-1)
		for candidate := AckGap; candidate <= AckRenew; candidate++ {
			if candidate.String() == name {
				typ = candidate
			}
		}
		if typ < 0 {
			n, err := strconv.Atoi(name)
			if err != nil {
				d.Fatalf(t, "ack line %q: unknown type %q", line, name)
			}
			typ = AckType(n)
		}
		b.Types = append(b.Types, typ)
	}
	return b
}

func codeName(code int16) string {
	if code == 0 {
		return "ok"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

func writePartition(out *strings.Builder, p *Partition, now time.Time) {
	if p == nil {
		return
	}
	fmt.Fprintf(out, "spso=%d speo=%d next=%d in-flight=%d\n", p.StartOffset(), p.EndOffset(), p.NextFetchOffset(), p.InFlight())
	for _, h := range p.Holders() {
		fmt.Fprintf(out, "  %d-%d %s x%d", h.FirstOffset, h.LastOffset, h.State, h.DeliveryCount)
		if h.State == Acquired {
			fmt.Fprintf(out, " %s lock=+%s", h.Member, h.LockDeadline.Sub(now))
		}
		out.WriteString("\n")
	}
}

// TestValidateAckBatches covers the request-shape rules on their own.
func TestValidateAckBatches(t *testing.T) {
	for _, tc := range []struct {
		name       string
		batches    []AckBatch
		allowRenew bool
		want       int16
	}{
		{"empty", nil, false, 0},
		{"one type for a range", []AckBatch{{0, 9, []AckType{AckAccept}}}, false, 0},
		{"one type per offset", []AckBatch{{0, 2, []AckType{AckAccept, AckRelease, AckGap}}}, false, 0},
		{"sorted, apart", []AckBatch{{0, 1, []AckType{AckAccept}}, {2, 3, []AckType{AckReject}}}, false, 0},
		{"first after last", []AckBatch{{5, 4, []AckType{AckAccept}}}, false, kerr.InvalidRequest.Code},
		{"negative offset", []AckBatch{{-1, 4, []AckType{AckAccept}}}, false, kerr.InvalidRequest.Code},
		{"overlapping", []AckBatch{{0, 5, []AckType{AckAccept}}, {5, 6, []AckType{AckAccept}}}, false, kerr.InvalidRequest.Code},
		{"unsorted", []AckBatch{{5, 6, []AckType{AckAccept}}, {0, 1, []AckType{AckAccept}}}, false, kerr.InvalidRequest.Code},
		{"wrong type count", []AckBatch{{0, 3, []AckType{AckAccept, AckAccept}}}, false, kerr.InvalidRequest.Code},
		{"no types", []AckBatch{{0, 0, nil}}, false, kerr.InvalidRequest.Code},
		{"unknown type", []AckBatch{{0, 0, []AckType{9}}}, false, kerr.InvalidRequest.Code},
		{"renew refused", []AckBatch{{0, 0, []AckType{AckRenew}}}, false, kerr.InvalidRequest.Code},
		{"renew allowed", []AckBatch{{0, 0, []AckType{AckRenew}}}, true, 0},
	} {
		if got := ValidateAckBatches(tc.batches, tc.allowRenew); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}
