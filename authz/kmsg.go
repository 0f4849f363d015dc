package authz

import "github.com/twmb/franz-go/pkg/kmsg"

// The wire forms of ACLs and filters (CreateAcls, DescribeAcls and DeleteAcls), shared by the
// broker's and the controller's listeners.

// FromCreation is the ACL a CreateAcls creation asks for.
func FromCreation(c kmsg.CreateACLsRequestCreation) ACL {
	return ACL{ResourceType: int8(c.ResourceType), ResourceName: c.ResourceName, PatternType: int8(c.ResourcePatternType),
		Principal: c.Principal, Host: c.Host, Operation: int8(c.Operation), Permission: int8(c.PermissionType)}
}

// ToCreation is the inverse of FromCreation.
func ToCreation(a ACL) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
	c.Principal, c.Host, c.Operation, c.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
	return c
}

// FromDeleteFilter is the filter of one DeleteAcls filter.
func FromDeleteFilter(f kmsg.DeleteACLsRequestFilter) Filter {
	return Filter{ResourceType: int8(f.ResourceType), ResourceName: f.ResourceName, PatternType: int8(f.ResourcePatternType),
		Principal: f.Principal, Host: f.Host, Operation: int8(f.Operation), Permission: int8(f.PermissionType)}
}

// ToDeleteFilter is the inverse of FromDeleteFilter.
func ToDeleteFilter(f Filter) kmsg.DeleteACLsRequestFilter {
	d := kmsg.NewDeleteACLsRequestFilter()
	d.ResourceType, d.ResourceName, d.ResourcePatternType = kmsg.ACLResourceType(f.ResourceType), f.ResourceName, kmsg.ACLResourcePatternType(f.PatternType)
	d.Principal, d.Host, d.Operation, d.PermissionType = f.Principal, f.Host, kmsg.ACLOperation(f.Operation), kmsg.ACLPermissionType(f.Permission)
	return d
}

// FromDescribe is the filter of a DescribeAcls request (v0 has no pattern type: LITERAL).
func FromDescribe(r *kmsg.DescribeACLsRequest) Filter {
	pt := int8(r.ResourcePatternType)
	if r.Version == 0 {
		pt = PatternLiteral
	}
	return Filter{ResourceType: int8(r.ResourceType), ResourceName: r.ResourceName, PatternType: pt,
		Principal: r.Principal, Host: r.Host, Operation: int8(r.Operation), Permission: int8(r.PermissionType)}
}

// MatchingACL is a removed ACL as DeleteAcls reports it.
func MatchingACL(a ACL) kmsg.DeleteACLsResponseResultMatchingACL {
	m := kmsg.NewDeleteACLsResponseResultMatchingACL()
	m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
	m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
	return m
}

// FromMatchingACL is the inverse of MatchingACL.
func FromMatchingACL(m kmsg.DeleteACLsResponseResultMatchingACL) ACL {
	return ACL{ResourceType: int8(m.ResourceType), ResourceName: m.ResourceName, PatternType: int8(m.ResourcePatternType),
		Principal: m.Principal, Host: m.Host, Operation: int8(m.Operation), Permission: int8(m.PermissionType)}
}

// DescribeResources groups sorted ACLs by resource pattern, as DescribeAcls answers.
func DescribeResources(acls []ACL) []kmsg.DescribeACLsResponseResource {
	var out []kmsg.DescribeACLsResponseResource
	for _, a := range acls {
		n := len(out)
		if n == 0 || int8(out[n-1].ResourceType) != a.ResourceType || out[n-1].ResourceName != a.ResourceName ||
			int8(out[n-1].ResourcePatternType) != a.PatternType {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			out = append(out, r)
			n++
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		out[n-1].ACLs = append(out[n-1].ACLs, e)
	}
	return out
}
