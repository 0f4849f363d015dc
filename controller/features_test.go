package controller

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestUpdateFeaturesRefusesAsKafka checks UpdateFeatures' answers against the messages Kafka
// 4.4's FeatureControlManager gives for the same updates, and that a refused request changes
// nothing (all or none).
func TestUpdateFeaturesRefusesAsKafka(t *testing.T) {
	cfg := testConfig(t.TempDir())
	c := startTest(t, cfg)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name    string
		updates []FeatureUpdate
		code    *kerr.Error
		msg     string
	}{
		{"share groups are not served", []FeatureUpdate{{Name: "share.version", Level: 1, UpgradeType: FeatureUpgrade}},
			kerr.InvalidUpdateVersion, "Invalid update version 1 for feature share.version. Local controller 1 does not support this feature."},
		{"transaction.version 1 is not served", []FeatureUpdate{{Name: "transaction.version", Level: 1, UpgradeType: FeatureSafeDowngrade}},
			kerr.InvalidUpdateVersion, "Invalid update version 1 for feature transaction.version. Local controller 1 only supports versions 2"},
		{"above the supported level", []FeatureUpdate{{Name: "group.version", Level: 2, UpgradeType: FeatureUpgrade}},
			kerr.InvalidUpdateVersion, "Invalid update version 2 for feature group.version. Local controller 1 only supports versions 1"},
		{"metadata.version", []FeatureUpdate{{Name: MetadataVersionFeature, Level: 30, UpgradeType: FeatureSafeDowngrade}},
			kerr.InvalidUpdateVersion, "Invalid metadata.version 30. Local controller 1 only supports versions 33"},
		{"unknown feature", []FeatureUpdate{{Name: "no.such.version", Level: 1, UpgradeType: FeatureUpgrade}},
			kerr.InvalidUpdateVersion, "Invalid update version 1 for feature no.such.version. Local controller 1 does not support this feature."},
		{"unknown feature at 0", []FeatureUpdate{{Name: "no.such.version", Level: 0, UpgradeType: FeatureSafeDowngrade}},
			kerr.InvalidUpdateVersion, "Invalid update version 0 for feature no.such.version. Feature no.such.version not found."},
		{"negative level", []FeatureUpdate{{Name: "group.version", Level: -1, UpgradeType: FeatureUpgrade}},
			kerr.InvalidUpdateVersion, "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."},
		{"unknown upgrade type", []FeatureUpdate{{Name: "group.version", Level: 1, UpgradeType: 9}},
			kerr.InvalidUpdateVersion, "Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."},
		{"a feature twice", []FeatureUpdate{{Name: "group.version", Level: 1, UpgradeType: FeatureUpgrade}, {Name: "group.version", Level: 1, UpgradeType: FeatureUpgrade}},
			kerr.InvalidRequest, "The request contains multiple FeatureUpdates for feature group.version."},
		{"a good update with a bad one", []FeatureUpdate{{Name: "group.version", Level: 1, UpgradeType: FeatureUpgrade}, {Name: "share.version", Level: 2, UpgradeType: FeatureUpgrade}},
			kerr.InvalidUpdateVersion, "Invalid update version 2 for feature share.version. Local controller 1 does not support this feature."},
	} {
		before := c.Image().Offset
		code, msg, err := c.UpdateFeatures(ctx, tc.updates, false)
		if err != nil || code != tc.code || msg != tc.msg {
			t.Errorf("%s: got %v %q %v, want %v %q", tc.name, code, msg, err, tc.code, tc.msg)
		}
		if im := c.Image(); im.Offset != before || im.FeatureLevels != nil {
			t.Errorf("%s: a refused update changed the image: offset %d -> %d, levels %v", tc.name, before, im.Offset, im.FeatureLevels)
		}
	}
}

// TestUpdateFeaturesWritesFeatureLevelRecords checks that an accepted update is a
// FeatureLevelRecord in the log (the image has its level and a new offset, the finalized
// epoch), that validateOnly writes nothing, and that the levels survive a snapshot.
func TestUpdateFeaturesWritesFeatureLevelRecords(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	if l := c.Image().FinalizedLevel("transaction.version"); l != 2 {
		t.Fatalf("default transaction.version %d, want 2", l)
	}
	before := c.Image().Offset
	if code, msg, err := c.UpdateFeatures(ctx, []FeatureUpdate{{Name: "group.version", Level: 1, UpgradeType: FeatureUpgrade}}, true); code != nil || err != nil {
		t.Fatalf("validate only: %v %q %v", code, msg, err)
	}
	if im := c.Image(); im.Offset != before || im.FeatureLevels != nil {
		t.Fatalf("validateOnly changed the image: %d -> %d %v", before, im.Offset, im.FeatureLevels)
	}
	code, msg, err := c.UpdateFeatures(ctx, []FeatureUpdate{
		{Name: "group.version", Level: 1, UpgradeType: FeatureUpgrade},
		{Name: "share.version", Level: 0, UpgradeType: FeatureSafeDowngrade},
	}, false)
	if code != nil || err != nil {
		t.Fatalf("update: %v %q %v", code, msg, err)
	}
	im := c.Image()
	if want := map[string]int16{"group.version": 1, "share.version": 0}; !reflect.DeepEqual(im.FeatureLevels, want) || im.Offset <= before {
		t.Fatalf("levels %v at offset %d (before %d), want %v", im.FeatureLevels, im.Offset, before, want)
	}
	if im.FinalizedFeaturesEpoch() != im.Offset {
		t.Fatalf("finalized epoch %d, image offset %d", im.FinalizedFeaturesEpoch(), im.Offset)
	}
	back, err := decodeImage(encodeImage(im))
	if err != nil || !reflect.DeepEqual(back.FeatureLevels, im.FeatureLevels) {
		t.Fatalf("snapshot round trip: %v %v", err, back.FeatureLevels)
	}
}

// TestFeatureLevelRecordApplies checks the state machine: a record sets a level (0 included,
// which takes the feature out of the finalized set), another record replaces it, a feature
// without a record is at its default, and a record with a negative level does not apply.
func TestFeatureLevelRecordApplies(t *testing.T) {
	base := emptyImage()
	next, errs := applyRecords(base, 5, []Record{
		&FeatureLevelRecord{Name: "transaction.version", Level: 1},
		&FeatureLevelRecord{Name: "transaction.version", Level: 0},
		&FeatureLevelRecord{Name: "group.version", Level: -1},
	})
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one for the negative level", errs)
	}
	if l := next.FinalizedLevel("transaction.version"); l != 0 {
		t.Fatalf("transaction.version %d, want 0", l)
	}
	if l := next.FinalizedLevel("group.version"); l != 1 {
		t.Fatalf("group.version %d, want its default 1", l)
	}
	if base.FeatureLevels != nil {
		t.Fatalf("the base image changed: %v", base.FeatureLevels)
	}
	got, err := DecodeRecord(EncodeRecord(&FeatureLevelRecord{Name: "kraft.version", Level: 1}))
	if err != nil || !reflect.DeepEqual(got, &FeatureLevelRecord{Name: "kraft.version", Level: 1}) {
		t.Fatalf("record round trip: %v %+v", err, got)
	}
}
