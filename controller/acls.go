package controller

// ACLs in the metadata log (Kafka's AccessControlEntryRecord and
// RemoveAccessControlEntryRecord, managed as Kafka's AclControlManager manages them).
//
// An ACL is the whole authz.ACL value: creating one that exists already is a success that
// writes nothing; removing one names it in full (Kafka's records carry a UUID instead; the
// binding is as unique here, since the set holds each binding once). The image's ACL set
// (Image.ACLs) is copied on the first ACL record of a batch and shared afterwards.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/authz"
)

// AccessControlEntryRecord adds one ACL.
type AccessControlEntryRecord struct {
	ACL authz.ACL `json:"acl"`
}

// RemoveAccessControlEntryRecord removes one ACL; one that is not there is skipped.
type RemoveAccessControlEntryRecord struct {
	ACL authz.ACL `json:"acl"`
}

func (*AccessControlEntryRecord) Type() RecordType       { return RecordAccessControlEntry }
func (*RemoveAccessControlEntryRecord) Type() RecordType { return RecordRemoveAccessControlEntry }

// applyACL applies an ACL record. An empty set is stored as nil, so images compare equal to
// their snapshots.
func (b *imageBuilder) applyACL(r Record) error {
	if !b.aclsOwned {
		b.img.ACLs = b.img.ACLs.Clone()
		b.aclsOwned = true
	}
	switch r := r.(type) {
	case *AccessControlEntryRecord:
		if err := r.ACL.Validate(); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidRecord, err)
		}
		b.img.ACLs.Add(r.ACL)
	case *RemoveAccessControlEntryRecord:
		if !b.img.ACLs.Remove(r.ACL) {
			return fmt.Errorf("%w: removing ACL %+v that does not exist", ErrInvalidRecord, r.ACL)
		}
	}
	if b.img.ACLs.Len() == 0 {
		b.img.ACLs = nil
		b.aclsOwned = false
	}
	return nil
}

// CreateACLResult is the outcome of creating one ACL.
type CreateACLResult struct {
	Err     error
	Message string
}

// CreateACLs adds ACLs through this node, which must be the active controller. An invalid
// ACL is INVALID_REQUEST with Kafka's message; the others are still created.
func (c *Controller) CreateACLs(ctx context.Context, acls []authz.ACL) ([]CreateACLResult, error) {
	results := make([]CreateACLResult, len(acls))
	req := &request{plan: func(w *Image) []Record {
		var recs []Record
		seen := map[authz.ACL]bool{}
		for i, a := range acls {
			results[i] = CreateACLResult{}
			if err := a.Validate(); err != nil {
				results[i] = CreateACLResult{kerr.InvalidRequest, err.Error()}
				continue
			}
			if w.ACLs.Contains(a) || seen[a] {
				continue
			}
			if len(recs) >= maxRecordsPerRequest {
				results[i] = CreateACLResult{kerr.PolicyViolation, "Unable to perform excessively large batch operation."}
				continue
			}
			seen[a] = true
			recs = append(recs, &AccessControlEntryRecord{ACL: a})
		}
		return recs
	}}
	if err := c.submit(ctx, req); err != nil {
		if verr, ok := err.(*validationError); ok {
			for i := range results {
				if results[i].Err == nil {
					results[i] = CreateACLResult{verr.code, verr.msg}
				}
			}
			return results, nil
		}
		return nil, err
	}
	return results, nil
}

// DeleteACLsResult is the outcome of one filter: the ACLs it removed.
type DeleteACLsResult struct {
	Err     error
	Message string
	Removed []authz.ACL
}

// DeleteACLs removes every ACL each filter matches (an ACL matched by several filters is
// reported under each), through this node, which must be the active controller.
func (c *Controller) DeleteACLs(ctx context.Context, filters []authz.Filter) ([]DeleteACLsResult, error) {
	results := make([]DeleteACLsResult, len(filters))
	req := &request{plan: func(w *Image) []Record {
		var recs []Record
		removed := map[authz.ACL]bool{}
		for i, f := range filters {
			results[i] = DeleteACLsResult{}
			if err := f.Validate(); err != nil {
				results[i] = DeleteACLsResult{Err: kerr.InvalidRequest, Message: err.Error()}
				continue
			}
			matched := w.ACLs.Select(f)
			if len(recs)+len(matched) > maxRecordsPerRequest {
				results[i] = DeleteACLsResult{Err: kerr.PolicyViolation, Message: "Unable to perform excessively large batch operation."}
				continue
			}
			results[i].Removed = matched
			for _, a := range matched {
				if !removed[a] {
					removed[a] = true
					recs = append(recs, &RemoveAccessControlEntryRecord{ACL: a})
				}
			}
		}
		return recs
	}}
	if err := c.submit(ctx, req); err != nil {
		if verr, ok := err.(*validationError); ok {
			for i := range results {
				if results[i].Err == nil {
					results[i] = DeleteACLsResult{Err: verr.code, Message: verr.msg}
				}
			}
			return results, nil
		}
		return nil, err
	}
	return results, nil
}
