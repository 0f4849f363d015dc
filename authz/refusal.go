package authz

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClusterRefusal is the answer to a request refused as a whole with CLUSTER_AUTHORIZATION_FAILED,
// as Kafka answers an API whose authorizeClusterOperation failed: the response's top-level error
// code where it has one, and every item the request named refused where the response has only
// per-item codes (CreateAcls, DeleteAcls, AlterClientQuotas, AlterUserScramCredentials). Both
// the broker's and the controller's listeners answer with it.
func ClusterRefusal(req kmsg.Request) kmsg.Response {
	code := kerr.ClusterAuthorizationFailed.Code
	resp := req.ResponseKind()
	switch r := resp.(type) {
	case *kmsg.DescribeACLsResponse:
		r.ErrorCode = code
	case *kmsg.CreateACLsResponse:
		for range req.(*kmsg.CreateACLsRequest).Creations {
			c := kmsg.NewCreateACLsResponseResult()
			c.ErrorCode = code
			r.Results = append(r.Results, c)
		}
	case *kmsg.DeleteACLsResponse:
		for range req.(*kmsg.DeleteACLsRequest).Filters {
			f := kmsg.NewDeleteACLsResponseResult()
			f.ErrorCode = code
			r.Results = append(r.Results, f)
		}
	case *kmsg.DescribeLogDirsResponse:
		r.ErrorCode = code // v3+; older versions have no field and answer no directories
	case *kmsg.ElectLeadersResponse:
		r.ErrorCode = code
	case *kmsg.AlterPartitionAssignmentsResponse:
		r.ErrorCode = code
	case *kmsg.ListPartitionReassignmentsResponse:
		r.ErrorCode = code
	case *kmsg.DescribeClientQuotasResponse:
		r.ErrorCode = code
	case *kmsg.AlterClientQuotasResponse:
		for _, e := range req.(*kmsg.AlterClientQuotasRequest).Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			re.ErrorCode = code
			for _, en := range e.Entity {
				ren := kmsg.NewAlterClientQuotasResponseEntryEntity()
				ren.Type, ren.Name = en.Type, en.Name
				re.Entity = append(re.Entity, ren)
			}
			r.Entries = append(r.Entries, re)
		}
	case *kmsg.DescribeUserSCRAMCredentialsResponse:
		r.ErrorCode = code
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		q := req.(*kmsg.AlterUserSCRAMCredentialsRequest)
		seen := map[string]bool{}
		add := func(user string) {
			if !seen[user] {
				seen[user] = true
				rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				rr.User, rr.ErrorCode = user, code
				r.Results = append(r.Results, rr)
			}
		}
		for _, d := range q.Deletions {
			add(d.Name)
		}
		for _, u := range q.Upsertions {
			add(u.Name)
		}
	case *kmsg.DescribeQuorumResponse:
		r.ErrorCode = code
	case *kmsg.AlterPartitionResponse:
		r.ErrorCode = code
	case *kmsg.UpdateFeaturesResponse:
		r.ErrorCode = code
	case *kmsg.DescribeClusterResponse:
		r.ErrorCode = code
	case *kmsg.BrokerRegistrationResponse:
		r.ErrorCode = code
	case *kmsg.BrokerHeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.UnregisterBrokerResponse:
		r.ErrorCode = code
	case *kmsg.AllocateProducerIDsResponse:
		r.ErrorCode = code
	case *kmsg.AddRaftVoterResponse:
		r.ErrorCode = code
	case *kmsg.RemoveRaftVoterResponse:
		r.ErrorCode = code
	case *kmsg.UpdateRaftVoterResponse:
		r.ErrorCode = code
	}
	return resp
}
