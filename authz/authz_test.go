package authz

import "testing"

func allow(rt int8, name string, pt int8, principal, host string, op int8) ACL {
	return ACL{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: PermAllow}
}

func deny(rt int8, name string, pt int8, principal, host string, op int8) ACL {
	a := allow(rt, name, pt, principal, host, op)
	a.Permission = PermDeny
	return a
}

func setOf(acls ...ACL) *Set {
	s := (*Set)(nil).Clone()
	for _, a := range acls {
		s.Add(a)
	}
	return s
}

// TestAuthorize: the StandardAuthorizer rules, one case per rule.
func TestAuthorize(t *testing.T) {
	const (
		T = ResourceTopic
		L = PatternLiteral
		P = PatternPrefixed
	)
	alice := "User:alice"
	read := func(name string) Request {
		return Request{Principal: alice, Host: "10.0.0.1", Operation: OpRead, ResourceType: T, ResourceName: name}
	}
	withOp := func(r Request, op int8) Request { r.Operation = op; return r }
	for _, tc := range []struct {
		name       string
		acls       []ACL
		req        Request
		super      []string
		allowNoACL bool
		want       bool
	}{
		{"no ACLs, default deny", nil, read("t"), nil, false, false},
		{"no ACLs, allow.everyone.if.no.acl.found", nil, read("t"), nil, true, true},
		{"super user", []ACL{deny(T, "t", L, alice, "*", OpAll)}, read("t"), []string{alice}, false, true},
		{"literal allow", []ACL{allow(T, "t", L, alice, "*", OpRead)}, read("t"), nil, false, true},
		{"literal allow of another topic", []ACL{allow(T, "u", L, alice, "*", OpRead)}, read("t"), nil, false, false},
		{"another topic's ACL does not count as applying", []ACL{allow(T, "u", L, alice, "*", OpRead)}, read("t"), nil, true, true},
		{"ACL for another principal applies: no fallback", []ACL{allow(T, "t", L, "User:bob", "*", OpRead)}, read("t"), nil, true, false},
		{"wildcard resource", []ACL{allow(T, "*", L, alice, "*", OpRead)}, read("t"), nil, false, true},
		{"wildcard principal", []ACL{allow(T, "t", L, "User:*", "*", OpRead)}, read("t"), nil, false, true},
		{"prefixed", []ACL{allow(T, "te", P, alice, "*", OpRead)}, read("test"), nil, false, true},
		{"prefixed does not match shorter", []ACL{allow(T, "test", P, alice, "*", OpRead)}, read("te"), nil, false, false},
		{"prefixed * is not a wildcard", []ACL{allow(T, "*", P, alice, "*", OpRead)}, read("t"), nil, false, false},
		{"host matches", []ACL{allow(T, "t", L, alice, "10.0.0.1", OpRead)}, read("t"), nil, false, true},
		{"host differs", []ACL{allow(T, "t", L, alice, "10.0.0.2", OpRead)}, read("t"), nil, false, false},
		{"deny beats allow", []ACL{allow(T, "t", L, alice, "*", OpRead), deny(T, "t", L, alice, "*", OpRead)}, read("t"), nil, false, false},
		{"prefixed deny beats literal allow", []ACL{allow(T, "tx", L, alice, "*", OpRead), deny(T, "t", P, alice, "*", OpRead)}, read("tx"), nil, false, false},
		{"wildcard deny beats literal allow", []ACL{allow(T, "t", L, alice, "*", OpRead), deny(T, "*", L, "User:*", "*", OpAll)}, read("t"), nil, false, false},
		{"deny of another operation", []ACL{allow(T, "t", L, alice, "*", OpRead), deny(T, "t", L, alice, "*", OpWrite)}, read("t"), nil, false, true},
		{"deny READ does not deny DESCRIBE", []ACL{allow(T, "t", L, alice, "*", OpAll), deny(T, "t", L, alice, "*", OpRead)}, withOp(read("t"), OpDescribe), nil, false, true},
		{"deny on another host", []ACL{allow(T, "t", L, alice, "*", OpRead), deny(T, "t", L, alice, "10.9.9.9", OpRead)}, read("t"), nil, false, true},
		{"ALL implies READ", []ACL{allow(T, "t", L, alice, "*", OpAll)}, read("t"), nil, false, true},
		{"ALL implies IDEMPOTENT_WRITE", []ACL{allow(ResourceCluster, ClusterName, L, alice, "*", OpAll)}, Request{alice, "h", OpIdempotentWrite, ResourceCluster, ClusterName}, nil, false, true},
		{"WRITE implies DESCRIBE", []ACL{allow(T, "t", L, alice, "*", OpWrite)}, withOp(read("t"), OpDescribe), nil, false, true},
		{"DELETE implies DESCRIBE", []ACL{allow(T, "t", L, alice, "*", OpDelete)}, withOp(read("t"), OpDescribe), nil, false, true},
		{"ALTER implies DESCRIBE", []ACL{allow(T, "t", L, alice, "*", OpAlter)}, withOp(read("t"), OpDescribe), nil, false, true},
		{"READ does not imply WRITE", []ACL{allow(T, "t", L, alice, "*", OpRead)}, withOp(read("t"), OpWrite), nil, false, false},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", []ACL{allow(T, "t", L, alice, "*", OpAlterConfigs)}, withOp(read("t"), OpDescribeConfigs), nil, false, true},
		{"DESCRIBE_CONFIGS does not imply DESCRIBE", []ACL{allow(T, "t", L, alice, "*", OpDescribeConfigs)}, withOp(read("t"), OpDescribe), nil, false, false},
		{"CREATE does not imply DESCRIBE", []ACL{allow(T, "t", L, alice, "*", OpCreate)}, withOp(read("t"), OpDescribe), nil, false, false},
		{"group is another resource type", []ACL{allow(ResourceGroup, "t", L, alice, "*", OpRead)}, read("t"), nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := New(tc.super, tc.allowNoACL)
			if got := z.Authorize(setOf(tc.acls...), tc.req); got != tc.want {
				t.Errorf("Authorize = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAuthorizeAny: Kafka's authorizeByResourceType, which lets an idempotent producer with
// WRITE on some topic through without IDEMPOTENT_WRITE on the cluster.
func TestAuthorizeAny(t *testing.T) {
	const T, L, P = ResourceTopic, PatternLiteral, PatternPrefixed
	a := "User:alice"
	for _, tc := range []struct {
		name string
		acls []ACL
		want bool
	}{
		{"none", nil, false},
		{"literal allow", []ACL{allow(T, "t", L, a, "*", OpWrite)}, true},
		{"ALL allow", []ACL{allow(T, "t", L, a, "*", OpAll)}, true},
		{"prefixed allow", []ACL{allow(T, "t", P, a, "*", OpWrite)}, true},
		{"allow for READ only", []ACL{allow(T, "t", L, a, "*", OpRead)}, false},
		{"other principal", []ACL{allow(T, "t", L, "User:bob", "*", OpWrite)}, false},
		{"same literal denied", []ACL{allow(T, "t", L, a, "*", OpWrite), deny(T, "t", L, a, "*", OpWrite)}, false},
		{"covered by prefixed deny", []ACL{allow(T, "tx", L, a, "*", OpWrite), deny(T, "t", P, a, "*", OpWrite)}, false},
		{"wildcard deny", []ACL{allow(T, "t", L, a, "*", OpWrite), deny(T, "*", L, a, "*", OpWrite)}, false},
		{"one of two denied", []ACL{allow(T, "t", L, a, "*", OpWrite), allow(T, "u", L, a, "*", OpWrite), deny(T, "t", L, a, "*", OpWrite)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := New(nil, false).AuthorizeAny(setOf(tc.acls...), a, "h", T, OpWrite); got != tc.want {
				t.Errorf("AuthorizeAny = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFilter: DeleteAcls/DescribeAcls filter matching, ANY and MATCH as Kafka's.
func TestFilter(t *testing.T) {
	lit := allow(ResourceTopic, "t", PatternLiteral, "User:a", "*", OpRead)
	wild := allow(ResourceTopic, "*", PatternLiteral, "User:a", "*", OpRead)
	pre := allow(ResourceTopic, "te", PatternPrefixed, "User:a", "*", OpRead)
	other := allow(ResourceGroup, "t", PatternLiteral, "User:b", "*", OpWrite)
	s := setOf(lit, wild, pre, other)
	name := func(n string) *string { return &n }
	for _, tc := range []struct {
		name string
		f    Filter
		want int
	}{
		{"any", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}, 4},
		{"topic any", Filter{ResourceType: ResourceTopic, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}, 3},
		{"literal t", Filter{ResourceType: ResourceTopic, ResourceName: name("t"), PatternType: PatternLiteral, Operation: OpAny, Permission: PermAny}, 1},
		{"any named te", Filter{ResourceType: ResourceAny, ResourceName: name("te"), PatternType: PatternAny, Operation: OpAny, Permission: PermAny}, 1},
		{"match test", Filter{ResourceType: ResourceTopic, ResourceName: name("test"), PatternType: PatternMatch, Operation: OpAny, Permission: PermAny}, 2},
		{"principal b", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Principal: name("User:b"), Operation: OpAny, Permission: PermAny}, 1},
		{"op write", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpWrite, Permission: PermAny}, 1},
		{"deny", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermDeny}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.Select(tc.f); len(got) != tc.want {
				t.Errorf("Select = %+v, want %d", got, tc.want)
			}
		})
	}
	if (Filter{}).Validate() == nil {
		t.Error("a filter of UNKNOWN values validated")
	}
}
