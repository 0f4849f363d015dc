package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// brokerRow is one broker of the overview.
type brokerRow struct {
	ID         int32
	Addr       string
	Rack       string
	Controller bool
	Leads      int   // partitions it leads
	Replicas   int   // partition replicas it hosts
	LogBytes   int64 // bytes in its log directories (-1: not known)
}

type overviewData struct {
	ClusterID        string
	Controller       int32
	Brokers          []brokerRow
	Topics           int
	Partitions       int
	Offline          []string
	UnderReplicated  []string
	Healthy          bool
	TotalLogBytes    int64
	LogDirsAvailable bool
}

func (s *Server) overview(ctx context.Context, _ *http.Request) (string, any, error) {
	md, err := s.adm.Metadata(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("the cluster at %s did not answer: %w", strings.Join(s.cfg.Brokers, ","), err)
	}
	d := overviewData{ClusterID: md.Cluster, Controller: md.Controller}
	rows := map[int32]*brokerRow{}
	for _, b := range md.Brokers {
		row := &brokerRow{ID: b.NodeID, Addr: fmt.Sprintf("%s:%d", b.Host, b.Port), Controller: b.NodeID == md.Controller, LogBytes: -1}
		if b.Rack != nil {
			row.Rack = *b.Rack
		}
		rows[b.NodeID] = row
	}
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			continue
		}
		d.Topics++
		for _, p := range t.Partitions.Sorted() {
			d.Partitions++
			name := fmt.Sprintf("%s-%d", t.Topic, p.Partition)
			if p.Leader < 0 {
				d.Offline = append(d.Offline, name)
			} else if len(p.ISR) < len(p.Replicas) {
				d.UnderReplicated = append(d.UnderReplicated, name)
			}
			if r := rows[p.Leader]; r != nil {
				r.Leads++
			}
			for _, id := range p.Replicas {
				if r := rows[id]; r != nil {
					r.Replicas++
				}
			}
		}
	}
	if dirs, err := s.adm.DescribeAllLogDirs(ctx, nil); err == nil {
		d.LogDirsAvailable = true
		for id, bd := range dirs {
			if r := rows[id]; r != nil && bd.Error() == nil {
				r.LogBytes = bd.Size()
				d.TotalLogBytes += r.LogBytes
			}
		}
	}
	for _, r := range rows {
		d.Brokers = append(d.Brokers, *r)
	}
	sort.Slice(d.Brokers, func(i, j int) bool { return d.Brokers[i].ID < d.Brokers[j].ID })
	d.Healthy = d.Controller >= 0 && len(d.Offline) == 0 && len(d.UnderReplicated) == 0
	return "Cluster " + d.ClusterID, d, nil
}

// topicRow is one topic of the topics page.
type topicRow struct {
	Name              string
	Internal          bool
	Partitions        int
	ReplicationFactor int
	Messages          int64 // end minus start offsets, summed (compaction and markers make it an upper bound)
	LeaderBytes       int64 // bytes of the leader replicas (-1: not known)
	UnderReplicated   int
	Offline           int
	Sparkline         sparkline
}

type topicsData struct {
	Topics       []topicRow
	ShowInternal bool
}

func (s *Server) topics(ctx context.Context, r *http.Request) (string, any, error) {
	d := topicsData{ShowInternal: r.URL.Query().Get("internal") == "1"}
	list := s.adm.ListTopics
	if d.ShowInternal {
		list = s.adm.ListTopicsWithInternal
	}
	td, err := list(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("listing topics: %w", err)
	}
	names := td.Names()
	starts, _ := s.adm.ListStartOffsets(ctx, names...)
	ends, _ := s.adm.ListEndOffsets(ctx, names...)
	sizes := s.leaderSizes(ctx, td)
	for _, t := range td.Sorted() {
		row := topicRow{Name: t.Topic, Internal: t.IsInternal, Partitions: len(t.Partitions), LeaderBytes: -1,
			Sparkline: s.sampler.sparkline(t.Topic)}
		if sizes != nil {
			row.LeaderBytes = sizes[t.Topic]
		}
		for _, p := range t.Partitions {
			row.ReplicationFactor = max(row.ReplicationFactor, len(p.Replicas))
			switch {
			case p.Leader < 0:
				row.Offline++
			case len(p.ISR) < len(p.Replicas):
				row.UnderReplicated++
			}
			if e, ok := ends.Lookup(t.Topic, p.Partition); ok && e.Err == nil {
				st := int64(0)
				if so, ok := starts.Lookup(t.Topic, p.Partition); ok && so.Err == nil {
					st = so.Offset
				}
				row.Messages += max(e.Offset-st, 0)
			}
		}
		d.Topics = append(d.Topics, row)
	}
	return "Topics", d, nil
}

// leaderSizes is each topic's bytes on its partitions' leaders (nil if DescribeLogDirs fails).
func (s *Server) leaderSizes(ctx context.Context, td kadm.TopicDetails) map[string]int64 {
	dirs, err := s.adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return nil
	}
	out := map[string]int64{}
	for _, t := range td {
		for _, p := range t.Partitions {
			if bd, ok := dirs[p.Leader]; ok {
				if dp, ok := bd.LookupPartition(t.Topic, p.Partition); ok {
					out[t.Topic] += dp.Size
				}
			}
		}
	}
	return out
}

type partitionRow struct {
	Partition   int32
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Offline     []int32
	Start, End  int64
	Bytes       int64 // on the leader; -1 unknown
}

type configRow struct {
	Key, Value, Source string
	Sensitive          bool
}

type topicData struct {
	Name       string
	ID         string
	Internal   bool
	Partitions []partitionRow
	Configs    []configRow // set on the topic (the rest are defaults)
	Defaults   int         // how many configs are at their default
	Sparkline  sparkline
}

func (s *Server) topic(ctx context.Context, r *http.Request) (string, any, error) {
	name := r.PathValue("topic")
	td, err := s.adm.ListTopicsWithInternal(ctx, name)
	if err != nil {
		return "", nil, fmt.Errorf("describing topic %s: %w", name, err)
	}
	t, ok := td[name]
	if !ok || errors.Is(t.Err, kerr.UnknownTopicOrPartition) {
		return "", nil, notFound("topic %s does not exist", name)
	}
	if t.Err != nil {
		return "", nil, fmt.Errorf("topic %s: %w", name, t.Err)
	}
	d := topicData{Name: name, ID: topicID(t.ID), Internal: t.IsInternal, Sparkline: s.sampler.sparkline(name)}
	starts, _ := s.adm.ListStartOffsets(ctx, name)
	ends, _ := s.adm.ListEndOffsets(ctx, name)
	dirs, dirsErr := s.adm.DescribeAllLogDirs(ctx, nil)
	for _, p := range t.Partitions.Sorted() {
		row := partitionRow{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas,
			ISR: p.ISR, Offline: p.OfflineReplicas, Start: -1, End: -1, Bytes: -1}
		if o, ok := starts.Lookup(name, p.Partition); ok && o.Err == nil {
			row.Start = o.Offset
		}
		if o, ok := ends.Lookup(name, p.Partition); ok && o.Err == nil {
			row.End = o.Offset
		}
		if dirsErr == nil {
			if bd, ok := dirs[p.Leader]; ok {
				if dp, ok := bd.LookupPartition(name, p.Partition); ok {
					row.Bytes = dp.Size
				}
			}
		}
		d.Partitions = append(d.Partitions, row)
	}
	if rcs, err := s.adm.DescribeTopicConfigs(ctx, name); err == nil && len(rcs) == 1 && rcs[0].Err == nil {
		for _, c := range rcs[0].Configs {
			if c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
				d.Defaults++
				continue
			}
			d.Configs = append(d.Configs, configRow{Key: c.Key, Value: c.MaybeValue(), Source: c.Source.String(), Sensitive: c.Sensitive})
		}
		sort.Slice(d.Configs, func(i, j int) bool { return d.Configs[i].Key < d.Configs[j].Key })
	}
	return "Topic " + name, d, nil
}

// groupRow is one group of the groups page.
type groupRow struct {
	Name, State, Protocol, ProtocolType string
	Coordinator                         int32
	Members                             int
	Lag                                 int64
	Err                                 string
}

func (s *Server) groups(ctx context.Context, _ *http.Request) (string, any, error) {
	listed, err := s.adm.ListGroups(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("listing groups: %w", err)
	}
	names := listed.Groups()
	var rows []groupRow
	if len(names) > 0 {
		lags, err := s.adm.Lag(ctx, names...)
		if err != nil {
			return "", nil, fmt.Errorf("describing groups: %w", err)
		}
		for _, name := range names {
			l := lags[name]
			row := groupRow{Name: name, State: l.State, Protocol: l.Protocol, ProtocolType: l.ProtocolType,
				Coordinator: l.Coordinator.NodeID, Members: len(l.Members)}
			if err := l.Error(); err != nil {
				row.Err = err.Error()
			} else {
				row.Lag = l.Lag.Total()
			}
			rows = append(rows, row)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return "Consumer groups", rows, nil
}

type memberRow struct {
	ID, InstanceID, ClientID, Host string
	Assigned                       []string
}

type lagRow struct {
	Topic               string
	Partition           int32
	Committed, End, Lag int64
	Member              string
	Err                 string
}

type groupData struct {
	Name, State, Protocol string
	Coordinator           int32
	Members               []memberRow
	Partitions            []lagRow
	TotalLag              int64
	Topics                []string
}

func (s *Server) group(ctx context.Context, r *http.Request) (string, any, error) {
	name := r.PathValue("group")
	lags, err := s.adm.Lag(ctx, name)
	if err != nil {
		return "", nil, fmt.Errorf("describing group %s: %w", name, err)
	}
	l, ok := lags[name]
	if !ok || errors.Is(l.Error(), kerr.GroupIDNotFound) || l.State == "Dead" {
		return "", nil, notFound("group %s does not exist", name)
	}
	if err := l.Error(); err != nil {
		return "", nil, fmt.Errorf("group %s: %w", name, err)
	}
	d := groupData{Name: name, State: l.State, Protocol: l.Protocol, Coordinator: l.Coordinator.NodeID, TotalLag: l.Lag.Total()}
	for _, m := range l.Members {
		row := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			row.InstanceID = *m.InstanceID
		}
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				for _, p := range t.Partitions {
					row.Assigned = append(row.Assigned, fmt.Sprintf("%s-%d", t.Topic, p))
				}
			}
		}
		d.Members = append(d.Members, row)
	}
	sort.Slice(d.Members, func(i, j int) bool { return d.Members[i].ID < d.Members[j].ID })
	for _, m := range l.Lag.Sorted() {
		row := lagRow{Topic: m.Topic, Partition: m.Partition, Committed: m.Commit.At, End: m.End.Offset, Lag: m.Lag}
		if m.Member != nil {
			row.Member = m.Member.MemberID
		}
		if m.Err != nil {
			row.Err = m.Err.Error()
		}
		d.Partitions = append(d.Partitions, row)
		if !slices.Contains(d.Topics, m.Topic) {
			d.Topics = append(d.Topics, m.Topic)
		}
	}
	return "Group " + name, d, nil
}

// createTopic handles the create-topic form: name, partitions, replication, configs (one
// key=value a line).
func (s *Server) createTopic(ctx context.Context, r *http.Request) (string, error) {
	name := strings.TrimSpace(r.FormValue("name"))
	if name == "" {
		return "", badRequest("a topic needs a name")
	}
	partitions, err := formInt(r, "partitions", -1)
	if err != nil {
		return "", err
	}
	replication, err := formInt(r, "replication", -1)
	if err != nil {
		return "", err
	}
	configs := map[string]*string{}
	for _, line := range strings.Split(r.FormValue("configs"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return "", badRequest("config line %q: want key=value", line)
		}
		configs[strings.TrimSpace(k)] = &v
	}
	resp, err := s.adm.CreateTopic(ctx, int32(partitions), int16(replication), configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		if resp.ErrMessage != "" {
			err = fmt.Errorf("%w: %s", err, resp.ErrMessage)
		}
		return "", badRequest("creating topic %s: %v", name, err)
	}
	return "/topics/" + name + "?flash=created", nil
}

// seekGroup handles the seek form of an empty group: to start, end or an offset, for one
// topic or all the group has offsets for.
func (s *Server) seekGroup(ctx context.Context, r *http.Request) (string, error) {
	group := r.PathValue("group")
	described, err := s.adm.DescribeGroups(ctx, group)
	if err != nil {
		return "", err
	}
	if d, ok := described[group]; ok && d.Err == nil && len(d.Members) > 0 {
		return "", httpError{http.StatusConflict, fmt.Sprintf("group %s has %d active members; stop them before moving its offsets", group, len(d.Members))}
	}
	topics := []string{}
	if t := r.FormValue("topic"); t != "" {
		topics = append(topics, t)
	} else {
		fetched, err := s.adm.FetchOffsets(ctx, group)
		if err != nil {
			return "", err
		}
		fetched.Each(func(o kadm.OffsetResponse) {
			if !slices.Contains(topics, o.Topic) {
				topics = append(topics, o.Topic)
			}
		})
	}
	if len(topics) == 0 {
		return "", badRequest("group %s has no committed offsets; choose a topic", group)
	}
	var listed kadm.ListedOffsets
	switch to := r.FormValue("to"); to {
	case "start":
		listed, err = s.adm.ListStartOffsets(ctx, topics...)
	case "end":
		listed, err = s.adm.ListEndOffsets(ctx, topics...)
	default:
		n, perr := strconv.ParseInt(to, 10, 64)
		if perr != nil || n < 0 {
			return "", badRequest("to %q: want start, end or an offset", to)
		}
		listed, err = s.adm.ListEndOffsets(ctx, topics...)
		listed.Each(func(o kadm.ListedOffset) {
			o.Offset = n
			listed[o.Topic][o.Partition] = o
		})
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return "", err
	}
	committed, err := s.adm.CommitOffsets(ctx, group, listed.Offsets())
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return "", fmt.Errorf("committing offsets for %s: %w", group, err)
	}
	return "/groups/" + group + "?flash=offsets+moved", nil
}

func formInt(r *http.Request, key string, def int) (int, error) {
	v := strings.TrimSpace(r.FormValue(key))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, badRequest("%s %q is not a number", key, v)
	}
	return n, nil
}
