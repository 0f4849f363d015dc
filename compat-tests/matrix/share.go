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
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
	return shareVerdict(by, problems)
}

// shareVerdict is a ledger check's outcome: problems found on the seeded values, plus every
// value left in by (delivered but never produced), sorted into one error.
func shareVerdict(by map[string][]shareDelivery, problems []string) error {
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

// VerifyShare checks a share cell: the client's ledger (unless nil: checked by the caller), then the group's share-partition start
// offset, which must reach seedCount (acknowledgements sent at close may land just after the
// client exits, so it is waited for, with the cell's deadline).
func (e *Env) VerifyShare(ctx context.Context, ds []shareDelivery) error {
	if ds != nil {
		if err := verifyShareLedger(ds); err != nil {
			return err
		}
		e.Log.Printf("[harness] ledger: %d deliveries; every record accepted once except %s (released once, accepted on delivery 2) and %s (rejected once)", len(ds), shareReleased, shareRejected)
	}
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	brokers, err := kadm.NewClient(cl).ListBrokers(ctx)
	if err != nil {
		return err
	}
	// The request names the partition: without topics sluice lists only the share partitions
	// the answering node knows (on a cluster, share group membership is per node). Every node is
	// asked until one has the group (GROUP_ID_NOT_FOUND elsewhere).
	var last string
	err = waitFor(ctx, func() error {
		var errs []string
		for _, b := range brokers {
			req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			g.GroupID = e.Group
			g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: e.Topic, Partitions: []int32{0}}}
			req.Groups = append(req.Groups, g)
			resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
			if err == nil && (len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1) {
				err = fmt.Errorf("unexpected response shape %+v", resp.Groups)
			}
			if err == nil {
				if err = kerr.ErrorForCode(resp.Groups[0].ErrorCode); err == nil {
					err = kerr.ErrorForCode(resp.Groups[0].Topics[0].Partitions[0].ErrorCode)
				}
			}
			if err != nil {
				errs = append(errs, fmt.Sprintf("node %d: %v", b.NodeID, err))
				continue
			}
			p := resp.Groups[0].Topics[0].Partitions[0]
			last = fmt.Sprintf("start offset %d, lag %d (node %d)", p.StartOffset, p.Lag, b.NodeID)
			if p.StartOffset == seedCount {
				return nil
			}
			errs = append(errs, last)
		}
		return fmt.Errorf("DescribeShareGroupOffsets %s %s[0]: %s; want start offset %d", e.Group, e.Topic, strings.Join(errs, "; "), seedCount)
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

// The console share consumer acknowledges every record it prints the same way (accept, or
// --release, or --reject), so its share cell runs it in three steps over the seeded records:
//
//  1. one console consumer with --reject --max-messages 1 rejects v0 (records it acquired but
//     did not print go back when it closes);
//  2. one with --release --max-messages 9 releases the nine others;
//  3. two running at once (the default, accept) with --timeout-ms share the nine: each must be
//     accepted by exactly one of them, and v0 is never delivered again.
//
// A record's delivery count must rise with each delivery (step 1 may have acquired records it
// did not print, which counts a delivery the ledger does not show).
const consoleShareIdle = "5000" // --timeout-ms of step 3: exit after 5 s without a record

// runConsoleShare is the share cell of kafka-console-share-consumer.
func runConsoleShare(ctx context.Context, e *Env) error {
	const cls = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"
	console := func(name string, args ...string) ([]shareDelivery, error) {
		out, err := e.Tools.Java(ctx, e, "", cls, append([]string{"--bootstrap-server", e.Addr, "--topic", e.Topic, "--group", e.Group,
			"--formatter-property", "print.offset=true", "--formatter-property", "print.delivery=true"}, args...)...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		ack := "accept"
		for _, a := range args {
			if a == "--reject" || a == "--release" {
				ack = a[2:]
			}
		}
		return parseConsoleShare(name, ack, out)
	}
	ledger, err := console("rejecter", "--reject", "--max-messages", "1", "--timeout-ms", "20000")
	if err != nil {
		return err
	}
	ds, err := console("releaser", "--release", "--max-messages", "9", "--timeout-ms", "20000")
	if err != nil {
		return err
	}
	ledger = append(ledger, ds...)
	var wg sync.WaitGroup
	res := make([][]shareDelivery, 2)
	errs := make([]error, 2)
	for i, name := range []string{"c1", "c2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = console(name, "--timeout-ms", consoleShareIdle)
		}()
	}
	wg.Wait()
	for i := range res {
		if errs[i] != nil {
			return errs[i]
		}
		ledger = append(ledger, res[i]...)
	}
	for _, d := range ledger {
		e.Log.Printf("%s", d)
	}
	if err := verifyConsoleShareLedger(ledger); err != nil {
		return err
	}
	return e.VerifyShare(ctx, nil)
}

// parseConsoleShare reads the console share consumer's "Offset:<o>\tDelivery:<n>\t<value>" lines.
func parseConsoleShare(consumer, ack, out string) ([]shareDelivery, error) {
	var ds []shareDelivery
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "Offset:") {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 || !strings.HasPrefix(f[1], "Delivery:") {
			return nil, fmt.Errorf("%s: unexpected line %q", consumer, line)
		}
		off, err1 := strconv.ParseInt(strings.TrimPrefix(f[0], "Offset:"), 10, 64)
		n, err2 := strconv.Atoi(strings.TrimPrefix(f[1], "Delivery:"))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: unexpected line %q", consumer, line)
		}
		ds = append(ds, shareDelivery{Consumer: consumer, Offset: off, Value: f[2], Count: n, Ack: ack})
	}
	return ds, nil
}

// verifyConsoleShareLedger checks the console cell's ledger: v0 delivered once and rejected;
// every other seeded record released zero or more times and then accepted exactly once, by one
// of the two accepting consumers, its delivery count rising with each delivery.
func verifyConsoleShareLedger(ds []shareDelivery) error {
	by := map[string][]shareDelivery{}
	for _, d := range ds {
		by[d.Value] = append(by[d.Value], d)
	}
	var problems []string
	for i := 0; i < seedCount; i++ {
		v := fmt.Sprintf("v%d", i)
		got := by[v]
		delete(by, v)
		var desc []string
		ok := len(got) > 0
		for j, d := range got {
			desc = append(desc, fmt.Sprintf("%s#%d %s", d.Consumer, d.Count, d.Ack))
			ok = ok && d.Offset == int64(i) && d.Count >= 1 && (j == 0 || d.Count > got[j-1].Count)
			switch {
			case i == 0:
				ok = ok && len(got) == 1 && d.Ack == "reject"
			case j < len(got)-1:
				ok = ok && d.Ack == "release"
			default:
				ok = ok && d.Ack == "accept"
			}
		}
		if !ok {
			want := "released 0 or more times, then accepted once, delivery counts rising"
			if i == 0 {
				want = "rejected once, never again"
			}
			problems = append(problems, fmt.Sprintf("%s delivered [%s], want %s", v, strings.Join(desc, ", "), want))
		}
	}
	return shareVerdict(by, problems)
}

// runConfluentShare is the share cell of confluent-kafka-python from PyPI: clients/
// confluent_share.py, two ShareConsumers with explicit acknowledgement.
func runConfluentShare(ctx context.Context, e *Env) error {
	python, err := e.Tools.PythonVenv(ctx)
	if err != nil {
		return err
	}
	out, err := runProgram(ctx, e.Log, e.Dir, nil, "", python, filepath.Join(e.Tools.scripts, "confluent_share.py"), e.Addr, e.Topic, e.Group)
	if err != nil {
		return err
	}
	ds, err := parseShareLedger(out)
	if err != nil {
		return err
	}
	return e.VerifyShare(ctx, ds)
}
