// Package authz is sluice's ACL model and authorizer, with the rules of Apache Kafka's
// StandardAuthorizer (org.apache.kafka.metadata.authorizer):
//
//   - An ACL (Kafka's AclBinding) names a resource pattern (resource type, name, pattern type
//     LITERAL or PREFIXED), a principal ("User:alice" or the wildcard "User:*"), a host (an
//     address or "*"), an operation and a permission (ALLOW or DENY). The numeric values are
//     Kafka's wire values (kmsg.ACLResourceType and friends).
//   - A principal named in super.users is allowed everything.
//   - The ACLs that apply to a resource are the LITERAL ones with its name, the LITERAL ones
//     named "*", and the PREFIXED ones whose name is a prefix of its name.
//   - Among those that match the principal (or User:*) and the host (or *): a DENY for the
//     operation or ALL wins over everything. An ALLOW matches the operation, ALL, or an
//     operation that implies it: READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS
//     implies DESCRIBE_CONFIGS. (A DENY implies nothing but itself and ALL.)
//   - With no DENY and no ALLOW matching: if some ACL applies to the resource at all (for any
//     principal, host or operation) the request is denied; if none does, it is allowed when
//     allow.everyone.if.no.acl.found is true, denied otherwise.
//
// Set is an immutable-once-published, indexed set of ACLs; the controller's metadata image
// holds one (Image.ACLs) built from AccessControlEntryRecords. Authorizer is the configured
// policy (super users, the no-ACL rule) applied to a Set.
package authz
