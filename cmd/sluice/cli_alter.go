package main

// The CLI's changing commands: topic alter-config and add-partitions, group seek and delete,
// and cluster health (a check scripts can gate on).

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// listFlag collects a repeated flag's values.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// topicAlterConfig sets (-c key=value) and removes (--delete key) dynamic topic configs with
// IncrementalAlterConfigs, as kafka-configs --alter does.
func topicAlterConfig(c *cli, args []string) error {
	fs := c.flags("topic alter-config", "table", "json")
	set := configFlags{}
	fs.Var(set, "c", "set topic config key=value (repeatable)")
	var del listFlag
	fs.Var(&del, "delete", "remove this topic config override, back to the default (repeatable)")
	pos, adm, ctx, err := c.start(fs, args, func(pos []string) error {
		if len(pos) != 1 {
			return usagef("topic alter-config wants one topic name")
		}
		if len(set) == 0 && len(del) == 0 {
			return usagef("topic alter-config wants -c key=value or --delete key")
		}
		return nil
	})
	if err != nil {
		return err
	}
	topic := pos[0]
	var ops []kadm.AlterConfig
	for _, k := range sortedConfigKeys(set) {
		ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: set[k]})
	}
	for _, k := range del {
		ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	resps, err := adm.AlterTopicConfigs(ctx, ops, topic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		r, err = resps.On(topic, nil)
		err = topicError(err, r.Err, r.ErrMessage, topic)
	}
	if err != nil {
		return err
	}
	if c.output == "json" {
		return c.json(map[string]any{"topic": topic, "set": set, "deleted": del})
	}
	for _, k := range sortedConfigKeys(set) {
		fmt.Fprintf(c.out, "set %s %s=%s\n", topic, k, *set[k])
	}
	for _, k := range del {
		fmt.Fprintf(c.out, "removed %s %s (back to the default)\n", topic, k)
	}
	return nil
}

// topicError is the error of a per-topic admin answer: the call's own error as it is, else the
// topic's error with the broker's message, explained (nil when both are nil). kadm's one-topic
// calls return the topic's error as the call's too.
func topicError(callErr, topicErr error, message, topic string) error {
	switch {
	case callErr != nil && callErr != topicErr:
		return callErr
	case topicErr == nil:
		return nil
	case message != "":
		return explain(fmt.Errorf("%w (%s)", topicErr, message), topic)
	}
	return explain(topicErr, topic)
}

func sortedConfigKeys(m configFlags) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// topicAddPartitions raises a topic's partition count to -p TOTAL (CreatePartitions), as
// kafka-topics --alter --partitions does; partitions are never removed.
func topicAddPartitions(c *cli, args []string) error {
	fs := c.flags("topic add-partitions", "table", "json")
	total := fs.Int("p", 0, "the topic's new total partition count")
	pos, adm, ctx, err := c.start(fs, args, func(pos []string) error {
		if len(pos) != 1 || *total <= 0 {
			return usagef("topic add-partitions wants one topic name and -p TOTAL")
		}
		return nil
	})
	if err != nil {
		return err
	}
	topic := pos[0]
	resps, err := adm.UpdatePartitions(ctx, *total, topic)
	if err == nil {
		var r kadm.CreatePartitionsResponse
		r, err = resps.On(topic, nil)
		err = topicError(err, r.Err, r.ErrMessage, topic)
	}
	if err != nil {
		return err
	}
	if c.output == "json" {
		return c.json(map[string]any{"topic": topic, "partitions": *total})
	}
	fmt.Fprintf(c.out, "topic %s now has %d partitions\n", topic, *total)
	return nil
}

// groupSeek commits new offsets for an empty group on every partition of its topics (or of
// --topic): start, end, an offset N, or @MILLIS (the first offset at or after a timestamp),
// as kafka-consumer-groups --reset-offsets --execute does. A group with members is refused:
// they would overwrite the offsets.
func groupSeek(c *cli, args []string) error {
	fs := c.flags("group seek", "table", "json")
	to := fs.String("to", "", "start, end, an offset N, or @MILLIS (first record at or after that Unix time in ms)")
	var topics listFlag
	fs.Var(&topics, "topic", "seek only this topic (repeatable; default: the topics the group has offsets for)")
	pos, adm, ctx, err := c.start(fs, args, func(pos []string) error {
		if len(pos) != 1 || *to == "" {
			return usagef("group seek wants one group name and --to start|end|N|@MILLIS")
		}
		return nil
	})
	if err != nil {
		return err
	}
	group := pos[0]
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return err
	}
	if d, ok := described[group]; ok && d.Err == nil && len(d.Members) > 0 {
		return fmt.Errorf("group %s has %d active members; stop them before seeking (they would overwrite the offsets)", group, len(d.Members))
	}
	if len(topics) == 0 {
		fetched, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return fmt.Errorf("group %s: %w", group, err)
		}
		seen := map[string]bool{}
		fetched.Each(func(o kadm.OffsetResponse) {
			if !seen[o.Topic] {
				seen[o.Topic] = true
				topics = append(topics, o.Topic)
			}
		})
		if len(topics) == 0 {
			return fmt.Errorf("group %s has no committed offsets; name the topics with --topic", group)
		}
		sort.Strings(topics)
	}
	var listed kadm.ListedOffsets
	switch {
	case *to == "start":
		listed, err = adm.ListStartOffsets(ctx, topics...)
	case *to == "end":
		listed, err = adm.ListEndOffsets(ctx, topics...)
	case strings.HasPrefix(*to, "@"):
		ms, perr := strconv.ParseInt((*to)[1:], 10, 64)
		if perr != nil {
			return usagef("--to %q: @ wants a Unix time in milliseconds", *to)
		}
		listed, err = adm.ListOffsetsAfterMilli(ctx, ms, topics...)
	default:
		n, perr := strconv.ParseInt(*to, 10, 64)
		if perr != nil || n < 0 {
			return usagef("--to %q: want start, end, an offset N or @MILLIS", *to)
		}
		listed, err = adm.ListEndOffsets(ctx, topics...) // for the partitions; offsets replaced below
		listed.Each(func(o kadm.ListedOffset) {
			o.Offset = n
			listed[o.Topic][o.Partition] = o
		})
	}
	if err != nil {
		return err
	}
	if err := listed.Error(); err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) && ke == kerr.UnknownTopicOrPartition {
			return fmt.Errorf("a topic of %v does not exist; `sluice topic list` shows the topics", []string(topics))
		}
		return err
	}
	committed, err := adm.CommitOffsets(ctx, group, listed.Offsets())
	if err != nil {
		return fmt.Errorf("group %s: %w", group, err)
	}
	if err := committed.Error(); err != nil {
		return fmt.Errorf("group %s: %w", group, err)
	}
	type row struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
	}
	rows := []row{}
	committed.Each(func(o kadm.OffsetResponse) { rows = append(rows, row{o.Topic, o.Partition, o.At}) })
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Topic != rows[j].Topic {
			return rows[i].Topic < rows[j].Topic
		}
		return rows[i].Partition < rows[j].Partition
	})
	if c.output == "json" {
		return c.json(map[string]any{"group": group, "offsets": rows})
	}
	var table [][]string
	for _, r := range rows {
		table = append(table, []string{r.Topic, fmt.Sprint(r.Partition), fmt.Sprint(r.Offset)})
	}
	return c.table([]string{"TOPIC", "PARTITION", "NEW OFFSET"}, table)
}

// groupDelete deletes empty groups and their committed offsets (DeleteGroups).
func groupDelete(c *cli, args []string) error {
	fs := c.flags("group delete", "table", "json")
	pos, adm, ctx, err := c.start(fs, args, someArgs("group delete wants at least one group name"))
	if err != nil {
		return err
	}
	resps, err := adm.DeleteGroups(ctx, pos...)
	if err != nil {
		return err
	}
	out := map[string]string{}
	var failed []error
	for _, g := range pos {
		r := resps[g]
		switch {
		case r.Err == nil:
			out[g] = "deleted"
			continue
		case errors.Is(r.Err, kerr.GroupIDNotFound):
			failed = append(failed, fmt.Errorf("group %s does not exist; `sluice group list` shows the groups", g))
		case errors.Is(r.Err, kerr.NonEmptyGroup):
			failed = append(failed, fmt.Errorf("group %s still has members; stop them first", g))
		default:
			failed = append(failed, fmt.Errorf("group %s: %w", g, r.Err))
		}
		out[g] = r.Err.Error()
	}
	if c.output == "json" {
		if err := c.json(out); err != nil {
			return err
		}
	} else {
		for _, g := range pos {
			if out[g] == "deleted" {
				fmt.Fprintf(c.out, "deleted group %s\n", g)
			}
		}
	}
	if len(failed) > 0 {
		return joinErrors(failed)
	}
	return nil
}

// clusterHealth checks what an operator looks at first: every partition has a leader, every
// ISR is full and at least min.insync.replicas, and a controller is active. It exits 1 (with
// the problems listed) when the cluster is not healthy, so scripts can gate on it.
func clusterHealth(c *cli, args []string) error {
	fs := c.flags("cluster health", "table", "json")
	_, adm, ctx, err := c.start(fs, args, noArgs)
	if err != nil {
		return err
	}
	md, err := adm.Metadata(ctx)
	if err != nil {
		return err
	}
	var offline, underReplicated []string
	partitions := 0
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			continue
		}
		for _, p := range t.Partitions.Sorted() {
			partitions++
			name := fmt.Sprintf("%s-%d", t.Topic, p.Partition)
			switch {
			case p.Leader < 0 || errors.Is(p.Err, kerr.LeaderNotAvailable):
				offline = append(offline, name)
			case len(p.ISR) < len(p.Replicas):
				underReplicated = append(underReplicated, fmt.Sprintf("%s (ISR %s of %s)", name, int32List(p.ISR), int32List(p.Replicas)))
			}
		}
	}
	healthy := md.Controller >= 0 && len(offline) == 0 && len(underReplicated) == 0
	if c.output == "json" {
		if err := c.json(map[string]any{"healthy": healthy, "controller": md.Controller, "brokers": len(md.Brokers),
			"partitions": partitions, "offline_partitions": nonNil(offline), "under_replicated_partitions": nonNil(underReplicated)}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.out, "controller %d, %d brokers, %d partitions, %d offline, %d under-replicated\n",
			md.Controller, len(md.Brokers), partitions, len(offline), len(underReplicated))
		for _, p := range offline {
			fmt.Fprintf(c.out, "offline: %s\n", p)
		}
		for _, p := range underReplicated {
			fmt.Fprintf(c.out, "under-replicated: %s\n", p)
		}
	}
	if !healthy {
		if md.Controller < 0 {
			return errors.New("not healthy: no active controller")
		}
		return fmt.Errorf("not healthy: %d offline and %d under-replicated partitions", len(offline), len(underReplicated))
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
