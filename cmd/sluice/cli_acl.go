package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// runACL is `sluice acl list|create|delete`: ACLs as kafka-acls manages them (DescribeAcls,
// CreateAcls, DeleteAcls), on a cluster with an authorizer.
func runACL(c *cli, args []string) error {
	if len(args) == 0 {
		return usagef("acl wants one of list, create, delete")
	}
	switch args[0] {
	case "list", "create", "delete":
	default:
		return usagef("unknown acl command %q: want list, create or delete", args[0])
	}
	verb := args[0]
	fs := c.flags("acl "+verb, "table", "json")
	var topics, groups, txnIDs, allow, deny, hosts, ops listFlag
	fs.Var(&topics, "topic", "a topic the ACL is on (repeatable)")
	fs.Var(&groups, "group", "a consumer group the ACL is on (repeatable)")
	fs.Var(&txnIDs, "transactional-id", "a transactional ID the ACL is on (repeatable)")
	cluster := fs.Bool("cluster", false, "the ACL is on the cluster")
	fs.Var(&allow, "allow", "principal allowed, e.g. User:alice (repeatable)")
	fs.Var(&deny, "deny", "principal denied (repeatable)")
	fs.Var(&hosts, "host", "host the principals connect from (default *, every host)")
	fs.Var(&ops, "operation", "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All (repeatable or comma-separated)")
	prefixed := fs.Bool("prefixed", false, "resource names are prefixes (PREFIXED pattern) instead of literal names")
	_, adm, ctx, err := c.start(fs, args[1:], noArgs)
	if err != nil {
		return err
	}
	b := kadm.NewACLs()
	if verb == "create" {
		b.Topics(topics...).Groups(groups...).TransactionalIDs(txnIDs...).Allow(allow...).Deny(deny...)
		if *cluster {
			b.Clusters()
		}
		if len(hosts) == 0 {
			hosts = listFlag{"*"}
		}
		if len(allow) > 0 {
			b.AllowHosts(hosts...)
		}
		if len(deny) > 0 {
			b.DenyHosts(hosts...)
		}
	} else {
		// A filter: what is not named matches anything (kadm: Topics() with no names is any
		// topic, Allow() with no principals any allowed principal, AllowHosts() any host).
		if len(topics) > 0 {
			b.Topics(topics...)
		}
		if len(groups) > 0 {
			b.Groups(groups...)
		}
		if len(txnIDs) > 0 {
			b.TransactionalIDs(txnIDs...)
		}
		if *cluster {
			b.Clusters()
		}
		if len(topics)+len(groups)+len(txnIDs) == 0 && !*cluster {
			b.AnyResource()
		}
		if len(allow) > 0 || len(deny) == 0 {
			b.Allow(allow...).AllowHosts(hosts...)
		}
		if len(deny) > 0 || len(allow) == 0 {
			b.Deny(deny...).DenyHosts(hosts...)
		}
	}
	var operations []kadm.ACLOperation
	for _, list := range ops {
		for _, o := range strings.Split(list, ",") {
			op, err := kmsg.ParseACLOperation(strings.ToLower(strings.TrimSpace(o)))
			if err != nil {
				return usagef("--operation %q: %v", o, err)
			}
			operations = append(operations, op)
		}
	}
	if verb != "create" && len(operations) == 0 {
		operations = []kadm.ACLOperation{kadm.OpAny}
	}
	b.Operations(operations...)
	if *prefixed {
		b.ResourcePatternType(kadm.ACLPatternPrefixed)
	} else if verb != "create" {
		b.ResourcePatternType(kadm.ACLPatternAny)
	}
	switch verb {
	case "create":
		if len(allow)+len(deny) == 0 || len(operations) == 0 || (len(topics)+len(groups)+len(txnIDs) == 0 && !*cluster) {
			return usagef("acl create wants --allow or --deny, --operation, and --topic, --group, --transactional-id or --cluster")
		}
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			return aclError(err)
		}
		var rows []aclRow
		for _, r := range res {
			if r.Err != nil {
				return aclError(fmt.Errorf("%w %s", r.Err, r.ErrMessage))
			}
			rows = append(rows, aclRow{r.Principal, r.Host, r.Type.String(), r.Name, r.Pattern.String(), r.Operation.String(), r.Permission.String()})
		}
		return c.aclRows("created", rows)
	case "delete":
		res, err := adm.DeleteACLs(ctx, b)
		if err != nil {
			return aclError(err)
		}
		var rows []aclRow
		for _, r := range res {
			if r.Err != nil {
				return aclError(fmt.Errorf("%w %s", r.Err, r.ErrMessage))
			}
			for _, d := range r.Deleted {
				rows = append(rows, aclRow{d.Principal, d.Host, d.Type.String(), d.Name, d.Pattern.String(), d.Operation.String(), d.Permission.String()})
			}
		}
		return c.aclRows("deleted", rows)
	}
	res, err := adm.DescribeACLs(ctx, b)
	if err != nil {
		return aclError(err)
	}
	seen := map[aclRow]bool{}
	var rows []aclRow
	for _, r := range res {
		if r.Err != nil {
			return aclError(fmt.Errorf("%w %s", r.Err, r.ErrMessage))
		}
		for _, d := range r.Described {
			row := aclRow{d.Principal, d.Host, d.Type.String(), d.Name, d.Pattern.String(), d.Operation.String(), d.Permission.String()}
			if !seen[row] {
				seen[row] = true
				rows = append(rows, row)
			}
		}
	}
	return c.aclRows("", rows)
}

// aclRow is one ACL as the CLI prints it.
type aclRow struct {
	Principal  string `json:"principal"`
	Host       string `json:"host"`
	Resource   string `json:"resource_type"`
	Name       string `json:"resource_name"`
	Pattern    string `json:"pattern"`
	Operation  string `json:"operation"`
	Permission string `json:"permission"`
}

func (c *cli) aclRows(done string, rows []aclRow) error {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		return a.Resource+a.Name+a.Principal+a.Operation < b.Resource+b.Name+b.Principal+b.Operation
	})
	if rows == nil {
		rows = []aclRow{}
	}
	if c.output == "json" {
		return c.json(rows)
	}
	if done != "" {
		fmt.Fprintf(c.out, "%s %d ACLs\n", done, len(rows))
	}
	var table [][]string
	for _, r := range rows {
		table = append(table, []string{r.Principal, r.Host, r.Resource, r.Name, r.Pattern, r.Operation, r.Permission})
	}
	return c.table([]string{"PRINCIPAL", "HOST", "RESOURCE", "NAME", "PATTERN", "OPERATION", "PERMISSION"}, table)
}

// aclError explains the errors a person can act on.
func aclError(err error) error {
	switch s := err.Error(); {
	case strings.Contains(s, "SECURITY_DISABLED"):
		return errors.New("the cluster has no authorizer (authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer enables ACLs)")
	case strings.Contains(s, "CLUSTER_AUTHORIZATION_FAILED"):
		return fmt.Errorf("%w; managing ACLs needs ALTER (list: DESCRIBE) on the cluster, or a principal in super.users", err)
	}
	return err
}
