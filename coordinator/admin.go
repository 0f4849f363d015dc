package coordinator

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups handles DescribeGroups (key 15) v0–v6. Members' metadata and
// assignments are included only for a Stable group, as Kafka does.
// AuthorizedOperations is left at "not requested" (MinInt32); the broker
// fills it when IncludeAuthorizedOperations is set.
func (c *Coordinator) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	groups, err := describeEach(ctx, c, req.Groups,
		func(id string) kmsg.DescribeGroupsResponseGroup {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.AuthorizedOperations = id, math.MinInt32
			return dg
		},
		func(dg *kmsg.DescribeGroupsResponseGroup, code int16) { dg.ErrorCode = code },
		func(s *shard, dg kmsg.DescribeGroupsResponseGroup) kmsg.DescribeGroupsResponseGroup {
			return s.describeGroup(req.Version, dg)
		})
	if err != nil {
		return nil, err
	}
	resp.Groups = groups
	return resp, nil
}

// describeEach describes each group on its shard's goroutine, for DescribeGroups and
// ConsumerGroupDescribe: newGroup makes a group's answer, setCode puts an error code in it
// (the group's lookup failed, or its shard unloaded meanwhile), describe fills it.
func describeEach[G any](ctx context.Context, c *Coordinator, ids []string, newGroup func(id string) G, setCode func(*G, int16), describe func(*shard, G) G) ([]G, error) {
	var out []G
	for _, id := range ids {
		g := newGroup(id)
		s, code := c.lookup(id)
		if code != 0 {
			setCode(&g, code)
			out = append(out, g)
			continue
		}
		described, err := await(ctx, s, func(reply func(G)) {
			reply(describe(s, g))
		}, func() G {
			setCode(&g, errNotCoordinator)
			return g
		})
		if err != nil {
			return nil, err
		}
		out = append(out, described)
	}
	return out, nil
}

func (s *shard) describeGroup(version int16, dg kmsg.DescribeGroupsResponseGroup) kmsg.DescribeGroupsResponseGroup {
	g := s.groups[dg.Group]
	if g != nil && (g.cg != nil || g.sg != nil) {
		// A KIP-848 group is described by ConsumerGroupDescribe, a streams
		// group by StreamsGroupDescribe.
		dg.State = groupDead.String()
		if version >= 6 {
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + dg.Group + " is not a classic group."
			dg.ErrorMessage = &msg
		}
		return dg
	}
	if g == nil || g.state == groupDead {
		dg.State = groupDead.String()
		if version >= 6 {
			// KIP-1043: v6 reports a missing group as an error.
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + dg.Group + " not found."
			dg.ErrorMessage = &msg
		}
		return dg
	}
	dg.State = g.state.String()
	dg.ProtocolType = g.protocolType
	if g.state == groupStable {
		dg.Protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.ProtocolMetadata = []byte{}
		dm.MemberAssignment = []byte{}
		if g.state == groupStable {
			if md := m.metadataFor(g.protocol); md != nil {
				dm.ProtocolMetadata = md
			}
			if m.assignment != nil {
				dm.MemberAssignment = m.assignment
			}
		}
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

// groupType is the ListGroups v5 type of a group.
func (g *group) groupType() string {
	if g.sg != nil {
		return "streams"
	}
	if g.cg != nil {
		return "consumer"
	}
	return "classic"
}

// ListGroups handles ListGroups (key 16) v0–v5 over every shard loaded here,
// with v4's state filter and v5's type filter (both case-insensitive, as
// Kafka's). While a shard loads, the answer is COORDINATOR_LOAD_IN_PROGRESS
// with the groups of the loaded shards.
func (c *Coordinator) ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) (*kmsg.ListGroupsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	shards, loading := c.allShards()
	if loading {
		resp.ErrorCode = errLoadInProgress
	}
	lower := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = strings.ToLower(s)
		}
		return out
	}
	states, types := lower(req.StatesFilter), lower(req.TypesFilter)
	for _, s := range shards {
		out, err := await(ctx, s, func(reply func([]kmsg.ListGroupsResponseGroup)) {
			var gs []kmsg.ListGroupsResponseGroup
			for _, g := range s.groups {
				if g.state == groupDead {
					continue
				}
				if len(states) > 0 && !slices.Contains(states, strings.ToLower(g.stateName())) {
					continue
				}
				if len(types) > 0 && !slices.Contains(types, g.groupType()) {
					continue
				}
				lg := kmsg.NewListGroupsResponseGroup()
				lg.Group = g.id
				lg.ProtocolType = g.protocolType
				lg.GroupState = g.stateName()
				lg.GroupType = g.groupType()
				gs = append(gs, lg)
			}
			reply(gs)
		}, func() []kmsg.ListGroupsResponseGroup { return nil })
		if err != nil {
			return nil, err
		}
		resp.Groups = append(resp.Groups, out...)
	}
	sort.Slice(resp.Groups, func(i, j int) bool { return resp.Groups[i].Group < resp.Groups[j].Group })
	return resp, nil
}

// DeleteGroups handles DeleteGroups (key 42) v0–v2: each group must be empty
// (NON_EMPTY_GROUP otherwise); its metadata and offsets are tombstoned and
// the answer waits for the tombstones to commit.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	type waiting struct {
		i  int
		ch chan int16
	}
	var waits []waiting
	for i, id := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		resp.Groups = append(resp.Groups, dg)
		if id == "" {
			resp.Groups[i].ErrorCode = kerr.InvalidGroupID.Code
			continue
		}
		s, code := c.lookup(id)
		if code != 0 {
			resp.Groups[i].ErrorCode = code
			continue
		}
		ch := make(chan int16, 1)
		s.submit(func() {
			if s.unloaded {
				ch <- errNotCoordinator
				return
			}
			s.deleteGroup(id, func(code int16) { ch <- code })
		})
		waits = append(waits, waiting{i, ch})
	}
	for _, w := range waits {
		select {
		case code := <-w.ch:
			resp.Groups[w.i].ErrorCode = code
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return resp, nil
}

func (s *shard) deleteGroup(id string, reply func(int16)) {
	g := s.groups[id]
	if g == nil || g.state == groupDead {
		reply(kerr.GroupIDNotFound.Code)
		return
	}
	if !g.isEmpty() {
		reply(kerr.NonEmptyGroup.Code)
		return
	}
	var recs []record
	for topic, ps := range g.offsets {
		for p := range ps {
			recs = append(recs, offsetTombstone(id, topic, p))
		}
	}
	for tp := range g.pendingCommits {
		// A commit still in flight lands before these tombstones; delete it
		// too, or it would outlive the group on reload.
		if _, ok := g.offsets[tp.topic][tp.partition]; !ok {
			recs = append(recs, offsetTombstone(id, tp.topic, tp.partition))
		}
	}
	recs = append(recs, g.deletionRecords()...)
	g.transition(groupDead)
	s.write(recs, func(code int16) {
		if code != 0 {
			if g.state == groupDead {
				g.transition(groupEmpty)
			}
			reply(code)
			return
		}
		if s.groups[id] == g {
			delete(s.groups, id)
		}
		reply(0)
	})
}
