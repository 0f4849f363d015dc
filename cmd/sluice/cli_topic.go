package main

import (
	"encoding/base64"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"sort"
	"strings"
)

func runTopic(c *cli, args []string) error {
	if len(args) == 0 {
		return usagef("topic wants one of create, list, describe, delete, alter-config, add-partitions")
	}
	switch args[0] {
	case "create":
		return topicCreate(c, args[1:])
	case "list":
		return topicList(c, args[1:])
	case "describe":
		return topicDescribe(c, args[1:])
	case "delete":
		return topicDelete(c, args[1:])
	case "alter-config":
		return topicAlterConfig(c, args[1:])
	case "add-partitions":
		return topicAddPartitions(c, args[1:])
	}
	return usagef("unknown topic command %q: want create, list, describe, delete, alter-config or add-partitions", args[0])
}

// configFlags collects repeated -c key=value flags.
type configFlags map[string]*string

func (s configFlags) String() string { return "" }

func (s configFlags) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", kv)
	}
	s[k] = &v
	return nil
}

func topicCreate(c *cli, args []string) error {
	fs := c.flags("topic create", "table", "json")
	partitions := fs.Int("p", -1, "partitions (-1: the broker's num.partitions)")
	replicas := fs.Int("r", -1, "replication factor (-1: the broker's default.replication.factor)")
	configs := configFlags{}
	fs.Var(configs, "c", "topic config key=value (repeatable)")
	pos, adm, ctx, err := c.start(fs, args, oneArg("topic create wants one topic name"))
	if err != nil {
		return err
	}
	resp, err := adm.CreateTopic(ctx, int32(*partitions), int16(*replicas), configs, pos[0])
	if err = topicError(err, resp.Err, resp.ErrMessage, pos[0]); err != nil {
		return err
	}
	if c.output == "json" {
		return c.json(map[string]any{"topic": resp.Topic, "id": topicID(resp.ID),
			"partitions": resp.NumPartitions, "replication_factor": resp.ReplicationFactor})
	}
	fmt.Fprintf(c.out, "created topic %s: %d partitions, replication factor %d\n", resp.Topic, resp.NumPartitions, resp.ReplicationFactor)
	return nil
}

func topicList(c *cli, args []string) error {
	fs := c.flags("topic list", "table", "json")
	internal := fs.Bool("i", false, "include internal topics (__consumer_offsets)")
	_, adm, ctx, err := c.start(fs, args, noArgs)
	if err != nil {
		return err
	}
	list := adm.ListTopics
	if *internal {
		list = adm.ListTopicsWithInternal
	}
	topics, err := list(ctx)
	if err != nil {
		return err
	}
	type row struct {
		Topic             string `json:"topic"`
		Partitions        int    `json:"partitions"`
		ReplicationFactor int    `json:"replication_factor"`
		Internal          bool   `json:"internal"`
	}
	var rows []row
	for _, t := range topics.Sorted() {
		rf := 0
		for _, p := range t.Partitions {
			rf = max(rf, len(p.Replicas))
		}
		rows = append(rows, row{t.Topic, len(t.Partitions), rf, t.IsInternal})
	}
	if c.output == "json" {
		if rows == nil {
			rows = []row{}
		}
		return c.json(rows)
	}
	var table [][]string
	for _, r := range rows {
		table = append(table, []string{r.Topic, fmt.Sprint(r.Partitions), fmt.Sprint(r.ReplicationFactor)})
	}
	return c.table([]string{"TOPIC", "PARTITIONS", "REPLICAS"}, table)
}

func topicDescribe(c *cli, args []string) error {
	fs := c.flags("topic describe", "table", "json")
	pos, adm, ctx, err := c.start(fs, args, oneArg("topic describe wants one topic name"))
	if err != nil {
		return err
	}
	topic := pos[0]
	topics, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		return err
	}
	t, ok := topics[topic]
	if !ok || t.Err != nil {
		if t.Err == nil {
			t.Err = kerr.UnknownTopicOrPartition
		}
		return explain(t.Err, topic)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	type part struct {
		Partition   int32   `json:"partition"`
		Leader      int32   `json:"leader"`
		LeaderEpoch int32   `json:"leader_epoch"`
		Replicas    []int32 `json:"replicas"`
		ISR         []int32 `json:"isr"`
		StartOffset int64   `json:"start_offset"`
		EndOffset   int64   `json:"end_offset"`
	}
	var parts []part
	for _, p := range t.Partitions.Sorted() {
		pt := part{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR,
			StartOffset: -1, EndOffset: -1}
		if o, ok := starts.Lookup(topic, p.Partition); ok && o.Err == nil {
			pt.StartOffset = o.Offset
		}
		if o, ok := ends.Lookup(topic, p.Partition); ok && o.Err == nil {
			pt.EndOffset = o.Offset
		}
		parts = append(parts, pt)
	}
	configs := map[string]string{}
	if rcs, err := adm.DescribeTopicConfigs(ctx, topic); err == nil && len(rcs) == 1 && rcs[0].Err == nil {
		for _, cfg := range rcs[0].Configs {
			if cfg.Value != nil && cfg.Source.String() == "DYNAMIC_TOPIC_CONFIG" {
				configs[cfg.Key] = *cfg.Value
			}
		}
	}
	if c.output == "json" {
		return c.json(map[string]any{"topic": topic, "id": topicID(t.ID), "internal": t.IsInternal,
			"partitions": parts, "configs": configs})
	}
	fmt.Fprintf(c.out, "topic %s (id %s), %d partitions\n", topic, topicID(t.ID), len(parts))
	if len(configs) > 0 {
		keys := make([]string, 0, len(configs))
		for k := range configs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(c.out, "  %s=%s\n", k, configs[k])
		}
	}
	fmt.Fprintln(c.out)
	var rows [][]string
	for _, p := range parts {
		rows = append(rows, []string{fmt.Sprint(p.Partition), fmt.Sprint(p.Leader), fmt.Sprint(p.LeaderEpoch),
			int32List(p.Replicas), int32List(p.ISR), fmt.Sprint(p.StartOffset), fmt.Sprint(p.EndOffset)})
	}
	return c.table([]string{"PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "START", "END"}, rows)
}

func topicDelete(c *cli, args []string) error {
	fs := c.flags("topic delete", "table", "json")
	pos, adm, ctx, err := c.start(fs, args, someArgs("topic delete wants at least one topic name"))
	if err != nil {
		return err
	}
	resps, err := adm.DeleteTopics(ctx, pos...)
	if err != nil {
		return err
	}
	var failed []error
	for _, r := range resps.Sorted() {
		if r.Err != nil {
			failed = append(failed, explain(r.Err, r.Topic))
			continue
		}
		if c.output != "json" {
			fmt.Fprintf(c.out, "deleted topic %s\n", r.Topic)
		}
	}
	if c.output == "json" {
		out := map[string]string{}
		for _, r := range resps {
			out[r.Topic] = "deleted"
			if r.Err != nil {
				out[r.Topic] = r.Err.Error()
			}
		}
		if err := c.json(out); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return joinErrors(failed)
	}
	return nil
}

// joinErrors joins errs one per line.
func joinErrors(errs []error) error {
	s := make([]string, len(errs))
	for i, e := range errs {
		s[i] = e.Error()
	}
	return fmt.Errorf("%s", strings.Join(s, "\n"))
}

// topicID prints a topic ID as Kafka's tools do (URL-safe base64 without padding).
func topicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
