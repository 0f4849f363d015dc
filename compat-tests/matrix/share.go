package main

// The share scenario (KIP-932 share groups, issue 17). The harness seeds k0..k9=v0..v9 and sets
// share.auto.offset.reset=earliest as a GROUP config of the cell's group (IncrementalAlterConfigs;
// a share group starts at the latest offset otherwise). The client runs two share consumers of
// the group and acknowledges every delivery by one rule (shareAck): v3 is RELEASEd on its first
// delivery and ACCEPTed when it comes back, v7 is REJECTed, every other record ACCEPTed. Each
// delivery is reported as one stdout line (or, for franz-go, one ledger entry)
//
//	SHARE <consumer> <offset> <value> <delivery count> <accept|release|reject>
//
// and the harness checks the ledger (verifyShareLedger): every record except v7 accepted exactly
// once across the two consumers; v3 delivered twice, counts 1 then 2 (a released record comes
// back, KIP-932); v7 delivered once and rejected; no other record delivered twice. Then it asks
// the broker (DescribeShareGroupOffsets) that the group's share-partition start offset is 10:
// every record is in a terminal state, so the rejected v7 can never be delivered again.

import (
	"bufio"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareScenario is the share scenario's id.
const shareScenario = "share"

// The records the share scenario's clients release once and reject.
const shareReleased, shareRejected = "v3", "v7"

// shareAck is the acknowledgement a share scenario client gives value on its delivery'th delivery.
func shareAck(value string, delivery int) string {
	switch {
	case value == shareReleased && delivery <= 1:
		return "release"
	case value == shareRejected:
		return "reject"
	}
	return "accept"
}

// shareDelivery is one line of a share scenario ledger.
type shareDelivery struct {
	Consumer string
	Offset   int64
	Value    string
	Count    int
	Ack      string
}

func (d shareDelivery) String() string {
	return fmt.Sprintf("SHARE %s %d %s %d %s", d.Consumer, d.Offset, d.Value, d.Count, d.Ack)
}

// parseShareLedger reads the SHARE lines of a client's stdout.
func parseShareLedger(out string) ([]shareDelivery, error) {
	var ds []shareDelivery
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "SHARE" {
			continue
		}
		if len(f) != 6 {
			return nil, fmt.Errorf("bad ledger line %q", sc.Text())
		}
		off, err1 := strconv.ParseInt(f[2], 10, 64)
		n, err2 := strconv.Atoi(f[4])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad ledger line %q", sc.Text())
		}
		ds = append(ds, shareDelivery{Consumer: f[1], Offset: off, Value: f[3], Count: n, Ack: f[5]})
	}
	return ds, nil
}

// shareLedgerComplete reports whether every seeded record reached its final acknowledgement.
func shareLedgerComplete(ds []shareDelivery) bool {
	final := map[string]bool{}
	for _, d := range ds {
		if d.Ack != "release" {
			final[d.Value] = true
		}
	}
	return len(final) >= seedCount
}

// verifyShareLedger checks a share scenario ledger (see the top of this file).
func verifyShareLedger(ds []shareDelivery) error {
	by := map[string][]shareDelivery{}
	consumers := map[string]int{}
	for _, d := range ds {
		by[d.Value] = append(by[d.Value], d)
		consumers[d.Consumer]++
	}
	var problems []string
	for i := 0; i < seedCount; i++ {
		v := fmt.Sprintf("v%d", i)
		got := by[v]
		var desc []string
		for _, d := range got {
			desc = append(desc, fmt.Sprintf("%s#%d %s", d.Consumer, d.Count, d.Ack))
		}
		want := []string{"1 accept"}
		switch v {
		case shareReleased:
			want = []string{"1 release", "2 accept"}
		case shareRejected:
			want = []string{"1 reject"}
		}
		ok := len(got) == len(want)
		for j := 0; ok && j < len(got); j++ {
			ok = fmt.Sprintf("%d %s", got[j].Count, got[j].Ack) == want[j] && got[j].Offset == int64(i)
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("%s delivered [%s], want [%s]", v, strings.Join(desc, ", "), strings.Join(want, ", ")))
		}
		delete(by, v)
	}
	for v := range by {
		problems = append(problems, fmt.Sprintf("unexpected record %q delivered", v))
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("verify share: %s", strings.Join(problems, "; "))
	}
	return nil
}

// setupShare sets share.auto.offset.reset=earliest on the cell's group.
func (e *Env) setupShare(ctx context.Context, cl *kgo.Client) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, e.Group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = "share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("earliest")
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && len(resp.Resources) != 1 {
		err = fmt.Errorf("%d resources in the response", len(resp.Resources))
	}
	if err == nil {
		if err = kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
			err = fmt.Errorf("%w (%s)", err, strPtr(resp.Resources[0].ErrorMessage))
		}
	}
	if err != nil {
		return fmt.Errorf("setup: group config share.auto.offset.reset=earliest on %s: %w", e.Group, err)
	}
	e.Log.Printf("[harness] group %s: share.auto.offset.reset=earliest (GROUP config)", e.Group)
	return nil
}

func strPtr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// VerifyShare checks a share cell: the client's ledger, then the group's share-partition start
// offset, which must reach seedCount (acknowledgements sent at close may land just after the
// client exits, so it is waited for, with the cell's deadline).
func (e *Env) VerifyShare(ctx context.Context, ds []shareDelivery) error {
	if err := verifyShareLedger(ds); err != nil {
		return err
	}
	e.Log.Printf("[harness] ledger: %d deliveries; every record accepted once except %s (released once, accepted on delivery 2) and %s (rejected once)", len(ds), shareReleased, shareRejected)
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	var last string
	err = waitFor(ctx, func() error {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = e.Group
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, g := range resp.Groups {
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				return err
			}
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					if t.Topic != e.Topic || p.Partition != 0 {
						continue
					}
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						return err
					}
					last = fmt.Sprintf("start offset %d, lag %d", p.StartOffset, p.Lag)
					if p.StartOffset == seedCount {
						return nil
					}
					return fmt.Errorf("share group %s: %s, want start offset %d", e.Group, last, seedCount)
				}
			}
		}
		return fmt.Errorf("share group %s: no offsets for %s[0]", e.Group, e.Topic)
	})
	if err != nil {
		return fmt.Errorf("verify share: %w", err)
	}
	e.Log.Printf("[harness] share group %s on %s[0]: %s (every record acknowledged or archived)", e.Group, e.Topic, last)
	return nil
}

// runFranzShare is the share cell of franz-go: two kgo share consumers (kgo.ShareGroup), each
// acknowledging every record with Record.Ack and flushing after each poll.
func runFranzShare(ctx context.Context, e *Env) error {
	var (
		mu     sync.Mutex
		ledger []shareDelivery
	)
	complete := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return shareLedgerComplete(ledger)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	for _, name := range []string{"c1", "c2"} {
		go func() {
			errs <- func() error {
				cl, err := e.client(kgo.ShareGroup(e.Group), kgo.ConsumeTopics(e.Topic), kgo.ClientID(name))
				if err != nil {
					return err
				}
				defer cl.Close()
				for !complete() {
					fs := cl.PollRecords(cctx, 0)
					if cctx.Err() != nil {
						break
					}
					for _, fe := range fs.Errors() {
						return fmt.Errorf("%s: %s[%d]: %w", name, fe.Topic, fe.Partition, fe.Err)
					}
					recs := fs.Records()
					for _, r := range recs {
						d := shareDelivery{Consumer: name, Offset: r.Offset, Value: string(r.Value), Count: int(r.DeliveryCount())}
						d.Ack = shareAck(d.Value, d.Count)
						r.Ack(map[string]kgo.AckStatus{"accept": kgo.AckAccept, "release": kgo.AckRelease, "reject": kgo.AckReject}[d.Ack])
						e.Log.Printf("%s", d)
						mu.Lock()
						ledger = append(ledger, d)
						mu.Unlock()
					}
					if len(recs) > 0 {
						if err := cl.FlushAcks(cctx); err != nil && cctx.Err() == nil {
							return fmt.Errorf("%s: flush acks: %w", name, err)
						}
					}
				}
				fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
				defer fcancel()
				return cl.FlushAcks(fctx)
			}()
			cancel() // the other consumer stops polling once the ledger is complete (or this one failed)
		}()
	}
	var first error
	for range 2 {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("share consumers: %d deliveries before the deadline: %w", len(ledger), err)
	}
	return e.VerifyShare(ctx, ledger)
}

// runJavaShare is the share cell of the Java client: clients/ShareCompat.java, two
// KafkaShareConsumers with explicit acknowledgement.
func runJavaShare(ctx context.Context, e *Env) error {
	out, err := e.Tools.Java(ctx, e, "", "ShareCompat", e.Addr, e.Topic, e.Group)
	if err != nil {
		return err
	}
	ds, err := parseShareLedger(out)
	if err != nil {
		return err
	}
	return e.VerifyShare(ctx, ds)
}
