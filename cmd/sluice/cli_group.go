package main

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

func runGroup(c *cli, args []string) error {
	if len(args) == 0 {
		return usagef("group wants one of list, describe, seek, delete")
	}
	switch args[0] {
	case "list":
		return groupList(c, args[1:])
	case "describe":
		return groupDescribe(c, args[1:])
	case "seek":
		return groupSeek(c, args[1:])
	case "delete":
		return groupDelete(c, args[1:])
	}
	return usagef("unknown group command %q: want list, describe, seek or delete", args[0])
}

func groupList(c *cli, args []string) error {
	fs := c.flags("group list", "table", "json")
	_, adm, ctx, err := c.start(fs, args, noArgs)
	if err != nil {
		return err
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return err
	}
	type row struct {
		Group        string `json:"group"`
		State        string `json:"state"`
		ProtocolType string `json:"protocol_type"`
		Coordinator  int32  `json:"coordinator"`
	}
	rows := []row{}
	for _, g := range groups.Sorted() {
		rows = append(rows, row{g.Group, g.State, g.ProtocolType, g.Coordinator})
	}
	if c.output == "json" {
		return c.json(rows)
	}
	var table [][]string
	for _, r := range rows {
		table = append(table, []string{r.Group, r.State, r.ProtocolType, fmt.Sprint(r.Coordinator)})
	}
	return c.table([]string{"GROUP", "STATE", "TYPE", "COORDINATOR"}, table)
}

func groupDescribe(c *cli, args []string) error {
	fs := c.flags("group describe", "table", "json")
	pos, adm, ctx, err := c.start(fs, args, oneArg("group describe wants one group name"))
	if err != nil {
		return err
	}
	group := pos[0]
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		return err
	}
	l, ok := lags[group]
	if !ok {
		return fmt.Errorf("group %s: no answer from its coordinator", group)
	}
	if err := l.Error(); err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return fmt.Errorf("group %s does not exist; `sluice group list` shows the groups", group)
		}
		return fmt.Errorf("group %s: %w", group, err)
	}
	if l.State == "Dead" {
		return fmt.Errorf("group %s does not exist; `sluice group list` shows the groups", group)
	}
	type part struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Committed int64  `json:"committed_offset"`
		End       int64  `json:"end_offset"`
		Lag       int64  `json:"lag"`
		Member    string `json:"member,omitempty"`
		Client    string `json:"client_id,omitempty"`
		Host      string `json:"host,omitempty"`
		Error     string `json:"error,omitempty"`
	}
	parts := []part{}
	var total int64
	for _, m := range l.Lag.Sorted() {
		p := part{Topic: m.Topic, Partition: m.Partition, Committed: m.Commit.At, End: m.End.Offset, Lag: m.Lag}
		if m.Member != nil {
			p.Member, p.Client, p.Host = m.Member.MemberID, m.Member.ClientID, m.Member.ClientHost
		}
		if m.Err != nil {
			p.Error = m.Err.Error()
		}
		if m.Lag > 0 {
			total += m.Lag
		}
		parts = append(parts, p)
	}
	if c.output == "json" {
		return c.json(map[string]any{"group": group, "state": l.State, "protocol": l.Protocol,
			"coordinator": l.Coordinator.NodeID, "members": len(l.Members), "total_lag": total, "partitions": parts})
	}
	fmt.Fprintf(c.out, "group %s: state %s, %d members, coordinator %d, total lag %d\n\n",
		group, l.State, len(l.Members), l.Coordinator.NodeID, total)
	var rows [][]string
	for _, p := range parts {
		committed := fmt.Sprint(p.Committed)
		if p.Committed < 0 {
			committed = "-"
		}
		member := p.Member
		if member == "" {
			member = "-"
		}
		rows = append(rows, []string{p.Topic, fmt.Sprint(p.Partition), committed, fmt.Sprint(p.End), fmt.Sprint(p.Lag), member})
	}
	return c.table([]string{"TOPIC", "PARTITION", "COMMITTED", "END", "LAG", "MEMBER"}, rows)
}
