package coordinator

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDataDriven runs the scripts in testdata/groups: each command drives the
// coordinator and prints every response that completed meanwhile, including
// answers to earlier blocked JoinGroup/SyncGroup calls, so a script is the
// whole trace of a scenario. Commands:
//
//	join group=G [member=M] [instance=I] [protocols=a,b] [meta=topics] [version=N] [client=C]
//	sync group=G member=M gen=N [assign=M1:x,M2:y]
//	heartbeat group=G member=M gen=N [instance=I]
//	leave group=G members=M1,M2 [instances=I1,I2]
//	commit group=G gen=N member=M offsets=t/0=5,t/1=6
//	fetch group=G topics=t/0,t/1
//	describe group=G
//	list
//	advance d=3s
//	restart
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/groups", func(t *testing.T, path string) {
		h := newHarness(t, nil)
		var out []string
		emit := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out = out[:0]
			arg := func(key, def string) string {
				for _, a := range d.CmdArgs {
					if a.Key == key {
						return strings.Join(a.Vals, ",")
					}
				}
				return def
			}
			num := func(key string, def int) int {
				n, err := strconv.Atoi(arg(key, strconv.Itoa(def)))
				if err != nil {
					d.Fatalf(t, "%s: %v", key, err)
				}
				return n
			}
			optStr := func(key string) *string {
				if v := arg(key, ""); v != "" {
					return &v
				}
				return nil
			}
			group := arg("group", "g")
			if d.Cmd != "list" && d.Cmd != "advance" && d.Cmd != "restart" {
				h.load(group)
			}
			switch d.Cmd {
			case "join":
				client := arg("client", "c")
				req := h.joinReq(joinSpec{
					group: group, memberID: arg("member", ""), instance: optStr("instance"),
					version: int16(num("version", 9)), protocols: strings.Split(arg("protocols", "range"), ","),
					meta: consumerMeta(strings.Split(arg("meta", "t"), ",")...),
				})
				h.inShard(group, func(s *shard) {
					s.joinGroup(JoinClient{ClientID: client, ClientHost: "/127.0.0.1"}, req, func(r *kmsg.JoinGroupResponse) {
						emit("join %s → %s", client, fmtJoin(r))
					})
				})
			case "sync":
				req := kmsg.NewPtrSyncGroupRequest()
				req.Version = 5
				req.Group, req.MemberID, req.Generation = group, arg("member", ""), int32(num("gen", -1))
				if a := arg("assign", ""); a != "" {
					for _, kv := range strings.Split(a, ",") {
						m, v, _ := strings.Cut(kv, ":")
						req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(v)})
					}
				}
				who := req.MemberID
				h.inShard(group, func(s *shard) {
					s.syncGroup(req, func(code int16, a []byte) { emit("sync %s → %s assignment=%q", who, errName(code), a) })
				})
			case "heartbeat":
				req := kmsg.NewPtrHeartbeatRequest()
				req.Group, req.MemberID, req.Generation, req.InstanceID = group, arg("member", ""), int32(num("gen", -1)), optStr("instance")
				h.inShard(group, func(s *shard) { emit("heartbeat %s → %s", req.MemberID, errName(s.heartbeat(req))) })
			case "leave":
				req := kmsg.NewPtrLeaveGroupRequest()
				req.Version = 5
				req.Group = group
				for _, m := range strings.Split(arg("members", ""), ",") {
					req.Members = append(req.Members, kmsg.LeaveGroupRequestMember{MemberID: m})
				}
				if in := arg("instances", ""); in != "" {
					for i, inst := range strings.Split(in, ",") {
						if inst != "" {
							req.Members[i].InstanceID = &inst
						}
					}
				}
				h.inShard(group, func(s *shard) {
					r := s.leaveGroup(req)
					var parts []string
					for _, m := range r.Members {
						parts = append(parts, m.MemberID+":"+errName(m.ErrorCode))
					}
					emit("leave → %s [%s]", errName(r.ErrorCode), strings.Join(parts, " "))
				})
			case "commit":
				offsets := map[string]map[int32]int64{}
				for _, kv := range strings.Split(arg("offsets", ""), ",") {
					tp, v, _ := strings.Cut(kv, "=")
					topic, p, _ := strings.Cut(tp, "/")
					pi, _ := strconv.Atoi(p)
					vi, _ := strconv.ParseInt(v, 10, 64)
					if offsets[topic] == nil {
						offsets[topic] = map[int32]int64{}
					}
					offsets[topic][int32(pi)] = vi
				}
				for _, topic := range sortedKeys(offsets) {
					r := h.commit(group, int32(num("gen", -1)), arg("member", ""), 9, topic, offsets[topic])
					var codes []string
					for _, c := range commitCodes(r) {
						codes = append(codes, errName(c))
					}
					emit("commit %s → %s", topic, strings.Join(codes, " "))
				}
			case "fetch":
				for _, tp := range strings.Split(arg("topics", ""), ",") {
					topic, p, _ := strings.Cut(tp, "/")
					pi, _ := strconv.Atoi(p)
					emit("fetch %s → %d", tp, h.fetch(group, topic, int32(pi))[0])
				}
			case "describe":
				dg := h.describe(group)
				emit("%s state=%s protocol=%s/%s", dg.Group, dg.State, dg.ProtocolType, dg.Protocol)
				for _, m := range dg.Members {
					inst := ""
					if m.InstanceID != nil {
						inst = " instance=" + *m.InstanceID
					}
					emit("  %s client=%s%s assignment=%q", m.MemberID, m.ClientID, inst, m.MemberAssignment)
				}
			case "list":
				req := kmsg.NewPtrListGroupsRequest()
				req.Version = 5
				r, _ := h.c.ListGroups(ctx, req)
				for _, g := range r.Groups {
					emit("%s %s %s %s", g.Group, g.ProtocolType, g.GroupState, g.GroupType)
				}
			case "advance":
				dur, err := time.ParseDuration(arg("d", "0s"))
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				h.advance(dur)
			case "restart":
				h.restart()
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			if len(out) == 0 {
				return "ok\n"
			}
			return strings.Join(out, "\n") + "\n"
		})
	})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e := kerr.ErrorForCode(code); e != nil {
		if ke, ok := e.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return strconv.Itoa(int(code))
}

func fmtJoin(r *kmsg.JoinGroupResponse) string {
	if r.ErrorCode != 0 {
		return fmt.Sprintf("%s member=%s", errName(r.ErrorCode), r.MemberID)
	}
	var members []string
	for _, m := range r.Members {
		members = append(members, m.MemberID)
	}
	s := fmt.Sprintf("gen=%d member=%s leader=%s protocol=%s", r.Generation, r.MemberID, r.LeaderID, *r.Protocol)
	if len(members) > 0 {
		s += " members=" + strings.Join(members, ",")
	}
	if r.SkipAssignment {
		s += " skip-assignment"
	}
	return s
}
