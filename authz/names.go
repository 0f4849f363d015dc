package authz

import "strconv"

var (
	resourceNames   = []string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}
	patternNames    = []string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
	operationNames  = []string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"}
	permissionNames = []string{"UNKNOWN", "ANY", "DENY", "ALLOW"}
)

func name(names []string, v int8) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return strconv.Itoa(int(v))
}

// ResourceTypeName is Kafka's name of a resource type code.
func ResourceTypeName(v int8) string { return name(resourceNames, v) }

// PatternTypeName is Kafka's name of a pattern type code.
func PatternTypeName(v int8) string { return name(patternNames, v) }

// OperationName is Kafka's name of an operation code.
func OperationName(v int8) string { return name(operationNames, v) }

// PermissionName is Kafka's name of a permission code.
func PermissionName(v int8) string { return name(permissionNames, v) }
