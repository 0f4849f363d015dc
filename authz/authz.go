package authz

import (
	"cmp"
	"errors"
	"net"
	"slices"
	"strings"
)

// Resource types (Kafka's ResourceType codes).
const (
	ResourceUnknown         int8 = 0
	ResourceAny             int8 = 1
	ResourceTopic           int8 = 2
	ResourceGroup           int8 = 3
	ResourceCluster         int8 = 4
	ResourceTransactionalID int8 = 5
	ResourceDelegationToken int8 = 6
	ResourceUser            int8 = 7
)

// Pattern types (Kafka's PatternType codes).
const (
	PatternUnknown  int8 = 0
	PatternAny      int8 = 1
	PatternMatch    int8 = 2
	PatternLiteral  int8 = 3
	PatternPrefixed int8 = 4
)

// Operations (Kafka's AclOperation codes).
const (
	OpUnknown         int8 = 0
	OpAny             int8 = 1
	OpAll             int8 = 2
	OpRead            int8 = 3
	OpWrite           int8 = 4
	OpCreate          int8 = 5
	OpDelete          int8 = 6
	OpAlter           int8 = 7
	OpDescribe        int8 = 8
	OpClusterAction   int8 = 9
	OpDescribeConfigs int8 = 10
	OpAlterConfigs    int8 = 11
	OpIdempotentWrite int8 = 12
	OpCreateTokens    int8 = 13
	OpDescribeTokens  int8 = 14
)

// Permissions (Kafka's AclPermissionType codes).
const (
	PermUnknown int8 = 0
	PermAny     int8 = 1
	PermDeny    int8 = 2
	PermAllow   int8 = 3
)

// Wildcard is the LITERAL resource name that matches every resource of its type, and the
// host that matches every host.
const Wildcard = "*"

// WildcardPrincipal matches every principal.
const WildcardPrincipal = "User:*"

// ClusterName is the only name of the CLUSTER resource.
const ClusterName = "kafka-cluster"

// StandardAuthorizerClass is the only authorizer.class.name sluice honours.
const StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// ACL is one access control entry bound to a resource pattern (Kafka's AclBinding). It is a
// comparable value: two equal ACLs are the same ACL.
type ACL struct {
	ResourceType int8   `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  int8   `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    int8   `json:"operation"`
	Permission   int8   `json:"permission"`
}

// Validate applies the rules Kafka's AclControlManager.validateNewAcl applies to an ACL to be
// created; the error's text is Kafka's message (the caller answers INVALID_REQUEST).
func (a ACL) Validate() error {
	switch a.ResourceType {
	case ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID, ResourceDelegationToken, ResourceUser:
	default:
		return errors.New("Invalid resourceType " + ResourceTypeName(a.ResourceType))
	}
	if a.PatternType != PatternLiteral && a.PatternType != PatternPrefixed {
		return errors.New("Invalid patternType " + PatternTypeName(a.PatternType))
	}
	if a.Operation <= OpAny || a.Operation > OpDescribeTokens {
		return errors.New("Invalid operation " + OperationName(a.Operation))
	}
	if a.Permission != PermAllow && a.Permission != PermDeny {
		return errors.New("Invalid permissionType " + PermissionName(a.Permission))
	}
	if a.ResourceName == "" {
		return errors.New("Resource name should not be empty")
	}
	if a.ResourceType == ResourceCluster && a.ResourceName != ClusterName {
		return errors.New("The only valid name for the CLUSTER resource is " + ClusterName)
	}
	if i := strings.IndexByte(a.Principal, ':'); i <= 0 || i == len(a.Principal)-1 {
		return errors.New("Could not parse principal from `" + a.Principal + "` (no colon is present separating the principal type from the principal name)")
	}
	return nil
}

// Filter selects ACLs (Kafka's AclBindingFilter). A nil name, principal or host matches any;
// ResourceAny, PatternAny, OpAny and PermAny match any. PatternMatch with a name selects the
// ACLs that would apply to a resource of that name: LITERAL with the name or "*", and
// PREFIXED whose name is a prefix of it.
type Filter struct {
	ResourceType int8
	ResourceName *string
	PatternType  int8
	Principal    *string
	Host         *string
	Operation    int8
	Permission   int8
}

// Validate refuses filters with UNKNOWN values, as Kafka's AclControlManager.validateFilter.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType <= ResourceUnknown || f.ResourceType > ResourceUser,
		f.PatternType <= PatternUnknown || f.PatternType > PatternPrefixed:
		return errors.New("Unknown patternFilter.")
	case f.Operation <= OpUnknown || f.Operation > OpDescribeTokens,
		f.Permission <= PermUnknown || f.Permission > PermAllow:
		return errors.New("Unknown entryFilter.")
	}
	return nil
}

// Matches reports whether the filter selects a.
func (f Filter) Matches(a ACL) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != a.ResourceType {
		return false
	}
	switch f.PatternType {
	case PatternAny:
		if f.ResourceName != nil && *f.ResourceName != a.ResourceName {
			return false
		}
	case PatternMatch:
		if f.ResourceName != nil && !patternApplies(a, *f.ResourceName) {
			return false
		}
	default:
		if f.PatternType != a.PatternType || f.ResourceName != nil && *f.ResourceName != a.ResourceName {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != a.Principal || f.Host != nil && *f.Host != a.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != a.Operation {
		return false
	}
	return f.Permission == PermAny || f.Permission == a.Permission
}

// patternApplies reports whether a's resource pattern applies to a resource named name.
func patternApplies(a ACL, name string) bool {
	if a.PatternType == PatternPrefixed {
		return strings.HasPrefix(name, a.ResourceName)
	}
	return a.ResourceName == name || a.ResourceName == Wildcard
}

type patternKey struct {
	resourceType, patternType int8
	name                      string
}

// Set is a set of ACLs indexed by resource pattern. The zero value and nil are empty sets.
// Invariant: a Set reachable from a published metadata image is never modified; Add and
// Remove are for a set its builder just made with Clone.
type Set struct {
	byPattern map[patternKey]map[ACL]struct{}
	n         int
}

// Len is the number of ACLs.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Clone returns a copy that may be modified.
func (s *Set) Clone() *Set {
	c := &Set{byPattern: map[patternKey]map[ACL]struct{}{}}
	if s == nil {
		return c
	}
	for k, m := range s.byPattern {
		mc := make(map[ACL]struct{}, len(m))
		for a := range m {
			mc[a] = struct{}{}
		}
		c.byPattern[k] = mc
	}
	c.n = s.n
	return c
}

// Add adds a; it reports whether a was new.
func (s *Set) Add(a ACL) bool {
	k := patternKey{a.ResourceType, a.PatternType, a.ResourceName}
	m := s.byPattern[k]
	if m == nil {
		m = map[ACL]struct{}{}
		s.byPattern[k] = m
	}
	if _, ok := m[a]; ok {
		return false
	}
	m[a] = struct{}{}
	s.n++
	return true
}

// Remove removes a; it reports whether a was there.
func (s *Set) Remove(a ACL) bool {
	k := patternKey{a.ResourceType, a.PatternType, a.ResourceName}
	m := s.byPattern[k]
	if _, ok := m[a]; !ok {
		return false
	}
	delete(m, a)
	if len(m) == 0 {
		delete(s.byPattern, k)
	}
	s.n--
	return true
}

// Contains reports whether a is in the set.
func (s *Set) Contains(a ACL) bool {
	if s == nil {
		return false
	}
	_, ok := s.byPattern[patternKey{a.ResourceType, a.PatternType, a.ResourceName}][a]
	return ok
}

// Select returns the ACLs the filter matches, sorted (resource type, pattern type, name,
// principal, host, operation, permission).
func (s *Set) Select(f Filter) []ACL {
	var out []ACL
	if s == nil {
		return nil
	}
	for _, m := range s.byPattern {
		for a := range m {
			if f.Matches(a) {
				out = append(out, a)
			}
		}
	}
	SortACLs(out)
	return out
}

// All returns every ACL, sorted as Select sorts.
func (s *Set) All() []ACL {
	return s.Select(Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermAny})
}

// SortACLs sorts ACLs in a deterministic order.
func SortACLs(acls []ACL) {
	slices.SortFunc(acls, func(a, b ACL) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.PatternType, b.PatternType),
			cmp.Compare(a.ResourceName, b.ResourceName), cmp.Compare(a.Principal, b.Principal),
			cmp.Compare(a.Host, b.Host), cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
	})
}

// Authorizer is the StandardAuthorizer policy: super users and the rule for resources no ACL
// applies to. It holds no ACLs; every call takes the current Set.
type Authorizer struct {
	superUsers    map[string]bool
	allowIfNoACLs bool
}

// New makes an authorizer. superUsers are principals ("User:admin"), as super.users lists
// them (semicolon-separated in the config; the caller splits).
func New(superUsers []string, allowEveryoneIfNoACLFound bool) *Authorizer {
	a := &Authorizer{superUsers: map[string]bool{}, allowIfNoACLs: allowEveryoneIfNoACLFound}
	for _, u := range superUsers {
		if u = strings.TrimSpace(u); u != "" {
			a.superUsers[u] = true
		}
	}
	return a
}

// ParseSuperUsers splits super.users: principals separated by semicolons.
func ParseSuperUsers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Request is one action to authorize.
type Request struct {
	Principal    string
	Host         string // the client's address, without port
	Operation    int8
	ResourceType int8
	ResourceName string
}

// HostOf returns the address part of a connection's remote address, as Kafka compares hosts
// (InetAddress.getHostAddress).
func HostOf(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	h, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return h
}

// Authorize decides one request against the ACLs in s.
func (z *Authorizer) Authorize(s *Set, r Request) bool {
	if z.superUsers[r.Principal] {
		return true
	}
	anyApplies := false
	allowed := false
	check := func(m map[ACL]struct{}) (denied bool) {
		for a := range m {
			anyApplies = true
			if a.Principal != r.Principal && a.Principal != WildcardPrincipal {
				continue
			}
			if a.Host != Wildcard && a.Host != r.Host {
				continue
			}
			if a.Permission == PermDeny {
				if a.Operation == OpAll || a.Operation == r.Operation {
					return true
				}
				continue
			}
			if a.Permission == PermAllow && implies(a.Operation, r.Operation) {
				allowed = true
			}
		}
		return false
	}
	if s != nil {
		if check(s.byPattern[patternKey{r.ResourceType, PatternLiteral, r.ResourceName}]) {
			return false
		}
		if r.ResourceName != Wildcard && check(s.byPattern[patternKey{r.ResourceType, PatternLiteral, Wildcard}]) {
			return false
		}
		for i := len(r.ResourceName); i > 0; i-- {
			if check(s.byPattern[patternKey{r.ResourceType, PatternPrefixed, r.ResourceName[:i]}]) {
				return false
			}
		}
	}
	if allowed {
		return true
	}
	return !anyApplies && z.allowIfNoACLs
}

// implies reports whether an ALLOW of granted permits requested.
func implies(granted, requested int8) bool {
	switch {
	case granted == OpAll || granted == requested:
		return true
	case requested == OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case requested == OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

// AuthorizeAny reports whether the principal may perform op on at least one resource of the
// type (Kafka's Authorizer.authorizeByResourceType, used for idempotent producers without
// IDEMPOTENT_WRITE on the cluster): some ALLOW for op (or ALL) on a LITERAL or PREFIXED
// pattern that no DENY for op (or ALL) covers — a LITERAL DENY of the same name, a PREFIXED
// DENY that is a prefix of it, or the LITERAL DENY "*".
func (z *Authorizer) AuthorizeAny(s *Set, principal, host string, resourceType, op int8) bool {
	if z.superUsers[principal] {
		return true
	}
	if s == nil {
		return false
	}
	var allows []ACL
	denyLiteral := map[string]bool{}
	var denyPrefixes []string
	for k, m := range s.byPattern {
		if k.resourceType != resourceType {
			continue
		}
		for a := range m {
			if a.Principal != principal && a.Principal != WildcardPrincipal || a.Host != Wildcard && a.Host != host {
				continue
			}
			if a.Operation != op && a.Operation != OpAll {
				continue
			}
			switch {
			case a.Permission == PermAllow:
				allows = append(allows, a)
			case a.PatternType == PatternLiteral:
				denyLiteral[a.ResourceName] = true
			default:
				denyPrefixes = append(denyPrefixes, a.ResourceName)
			}
		}
	}
	if denyLiteral[Wildcard] {
		return false
	}
	for _, a := range allows {
		if a.PatternType == PatternLiteral && denyLiteral[a.ResourceName] {
			continue
		}
		covered := false
		for _, p := range denyPrefixes {
			if strings.HasPrefix(a.ResourceName, p) {
				covered = true
				break
			}
		}
		if !covered {
			return true
		}
	}
	return false
}
