package controller

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/authz"
)

func aclFor(principal, topic string, op int8) authz.ACL {
	return authz.ACL{ResourceType: authz.ResourceTopic, ResourceName: topic, PatternType: authz.PatternLiteral,
		Principal: principal, Host: "*", Operation: op, Permission: authz.PermAllow}
}

// TestACLsCreateDeleteAndRestart: ACLs are created (a duplicate writes nothing), invalid ones
// are refused with Kafka's messages, deleted by filter, and survive a restart from the log and
// from a snapshot.
func TestACLsCreateDeleteAndRestart(t *testing.T) {
	for _, every := range []int{0, 2} {
		t.Run(fmt.Sprintf("snapshot-every-%d", every), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.SnapshotEvery = every
			c, err := Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			alice := aclFor("User:alice", "t", authz.OpWrite)
			bob := aclFor("User:bob", "t", authz.OpRead)
			bad := alice
			bad.PatternType = authz.PatternMatch
			noColon := alice
			noColon.Principal = "alice"
			res, err := c.CreateACLs(ctx, []authz.ACL{alice, bob, alice, bad, noColon})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []error{nil, nil, nil, kerr.InvalidRequest, kerr.InvalidRequest} {
				if !errors.Is(res[i].Err, want) && res[i].Err != want {
					t.Errorf("create %d: %v %q, want %v", i, res[i].Err, res[i].Message, want)
				}
			}
			if res[3].Message != "Invalid patternType MATCH" {
				t.Errorf("message %q", res[3].Message)
			}
			if got := c.Image().ACLs.All(); !slices.Equal(got, []authz.ACL{alice, bob}) {
				t.Fatalf("ACLs %+v", got)
			}
			offset := c.Image().Offset
			if _, err := c.CreateACLs(ctx, []authz.ACL{alice}); err != nil || c.Image().Offset != offset {
				t.Fatalf("duplicate create: %v, offset %d -> %d", err, offset, c.Image().Offset)
			}
			// More entries, so a snapshot is taken.
			carol := aclFor("User:carol", "u", authz.OpRead)
			if _, err := c.CreateACLs(ctx, []authz.ACL{carol}); err != nil {
				t.Fatal(err)
			}
			bobName := "User:bob"
			del, err := c.DeleteACLs(ctx, []authz.Filter{{ResourceType: authz.ResourceAny, PatternType: authz.PatternAny,
				Principal: &bobName, Operation: authz.OpAny, Permission: authz.PermAny}, {}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(del[0].Removed, []authz.ACL{bob}) || del[0].Err != nil {
				t.Fatalf("delete: %+v", del[0])
			}
			if !errors.Is(del[1].Err, kerr.InvalidRequest) || del[1].Message != "Unknown patternFilter." {
				t.Fatalf("unknown filter: %+v", del[1])
			}
			want := []authz.ACL{alice, carol}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = startTest(t, cfg)
			if got := c.Image().ACLs.All(); !slices.Equal(got, want) {
				t.Fatalf("after restart: %+v, want %+v", got, want)
			}
		})
	}
}

// TestACLSnapshotRoundTrip: an image's ACLs survive encodeImage/decodeImage, and an image
// whose ACLs were all removed equals one that never had any.
func TestACLSnapshotRoundTrip(t *testing.T) {
	im := emptyImage()
	a := aclFor("User:a", "t", authz.OpAll)
	im, errs := applyRecords(im, 1, []Record{&AccessControlEntryRecord{ACL: a}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	back, err := decodeImage(encodeImage(im))
	if err != nil || !slices.Equal(back.ACLs.All(), []authz.ACL{a}) {
		t.Fatalf("round trip: %v %+v", err, back.ACLs.All())
	}
	im, errs = applyRecords(im, 2, []Record{&RemoveAccessControlEntryRecord{ACL: a}})
	if len(errs) > 0 || im.ACLs != nil {
		t.Fatalf("after removal: %v %+v", errs, im.ACLs)
	}
	if _, errs = applyRecords(im, 3, []Record{&RemoveAccessControlEntryRecord{ACL: a}}); len(errs) != 1 {
		t.Fatalf("removing a missing ACL: %v", errs)
	}
}

// TestACLRecordsCopyOnWrite: a batch that changes the ACLs leaves the base image's set as it
// was, and several ACL records in one batch (including emptying and refilling the set) apply
// in order.
func TestACLRecordsCopyOnWrite(t *testing.T) {
	a := aclFor("User:a", "t", authz.OpRead)
	b := aclFor("User:b", "t", authz.OpRead)
	base, errs := applyRecords(emptyImage(), 1, []Record{&AccessControlEntryRecord{ACL: a}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	next, errs := applyRecords(base, 2, []Record{&RemoveAccessControlEntryRecord{ACL: a}, &AccessControlEntryRecord{ACL: b},
		&AccessControlEntryRecord{ACL: a}, &RemoveAccessControlEntryRecord{ACL: b}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := base.ACLs.All(); !slices.Equal(got, []authz.ACL{a}) {
		t.Fatalf("base image changed: %+v", got)
	}
	if got := next.ACLs.All(); !slices.Equal(got, []authz.ACL{a}) {
		t.Fatalf("next image: %+v", got)
	}
	if base.ACLs == next.ACLs {
		t.Fatal("the changed image shares the base's set")
	}
	bad := a
	bad.Permission = authz.PermAny
	if _, errs := applyRecords(next, 3, []Record{&AccessControlEntryRecord{ACL: bad}}); len(errs) != 1 {
		t.Fatalf("an invalid ACL record applied: %v", errs)
	}
}
