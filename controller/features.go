package controller

// Feature levels (KIP-584) in the metadata log, as Kafka's FeatureControlManager keeps them:
// a FeatureLevelRecord finalizes one feature at a level (0 removes it from the finalized
// set), and every node reads the finalized levels from its image, so all brokers advertise the
// same ones in ApiVersions. UpdateFeatures (API 57, kafka-features upgrade/downgrade/disable)
// proposes such records after the checks Kafka's controller makes.
//
// A log written before feature records existed has none: a feature without a record is at
// its default level (Features.Default), the level a new Kafka 4.4 cluster is formatted with
// where sluice serves it. sluice supports exactly the level of each feature that it
// implements (Supported == Default for all of them): its behaviour is not switched by a
// finalized level at run time, so it refuses any other level rather than advertise one it
// would not honour.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// FeatureLevelRecord finalizes Name at Level (Kafka's FeatureLevelRecord); level 0 removes the
// feature from the finalized set.
type FeatureLevelRecord struct {
	Name  string `json:"name"`
	Level int16  `json:"feature_level"`
}

func (*FeatureLevelRecord) Type() RecordType { return RecordFeatureLevel }

// MetadataVersionFeature is the name of the metadata.version feature.
const MetadataVersionFeature = "metadata.version"

// Feature is one feature sluice knows: the range of levels it supports and the level a log
// without a record for it is at.
type Feature struct {
	Name             string
	MinLevel         int16
	MaxLevel         int16
	DefaultFinalized int16
}

// Features lists the features sluice advertises, in the order Kafka 4.4's brokers list them
// in kafka-features describe (sorted by name, as the tool sorts). Levels, from Kafka 4.4.0's
// Feature and MetadataVersion:
//   - metadata.version 33 is 4.4-IV2, Kafka 4.4's latest production level. It versions
//     Kafka's KRaft record formats, which sluice does not write (its metadata log is its
//     own), so sluice has nothing to change per level and serves the 4.4 level only.
//   - kraft.version 1: the quorum's voter set is in the log and changes with AddRaftVoter /
//     RemoveRaftVoter (KIP-853, cluster/80_add_raft_voter.go).
//   - transaction.version 2: KIP-890 part 2 transactions (broker/transactions.go).
//   - group.version 1: the consumer group protocol (KIP-848).
//   - eligible.leader.replicas.version 1: KIP-966 (controller/elections.go).
//   - streams.version 1: the streams group protocol (KIP-1071, StreamsGroupHeartbeat).
//   - share.version 0: share groups (KIP-932) are not served, so no level above 0 is.
var Features = []Feature{
	{Name: "eligible.leader.replicas.version", MinLevel: 1, MaxLevel: 1, DefaultFinalized: 1},
	{Name: "group.version", MinLevel: 1, MaxLevel: 1, DefaultFinalized: 1},
	{Name: "kraft.version", MinLevel: 1, MaxLevel: 1, DefaultFinalized: 1},
	{Name: MetadataVersionFeature, MinLevel: 33, MaxLevel: 33, DefaultFinalized: 33},
	{Name: "share.version", MinLevel: 0, MaxLevel: 0, DefaultFinalized: 0},
	{Name: "streams.version", MinLevel: 1, MaxLevel: 1, DefaultFinalized: 1},
	{Name: "transaction.version", MinLevel: 2, MaxLevel: 2, DefaultFinalized: 2},
}

func featureByName(name string) (Feature, bool) {
	for _, f := range Features {
		if f.Name == name {
			return f, true
		}
	}
	return Feature{}, false
}

// FinalizedLevel is the finalized level of feature name in the image: the last
// FeatureLevelRecord's level, else the feature's default; 0 (not finalized) for a feature
// sluice does not know.
func (im *Image) FinalizedLevel(name string) int16 {
	if l, ok := im.FeatureLevels[name]; ok {
		return l
	}
	if f, ok := featureByName(name); ok {
		return f.DefaultFinalized
	}
	return 0
}

// FinalizedFeaturesEpoch is the epoch of the finalized feature set as Kafka's brokers report
// it in ApiVersions: the offset of the metadata image they read it from.
func (im *Image) FinalizedFeaturesEpoch() int64 {
	if im.Offset < 0 {
		return 0
	}
	return im.Offset
}

func (b *imageBuilder) applyFeatureLevel(r *FeatureLevelRecord) error {
	if r.Name == "" || r.Level < 0 {
		return fmt.Errorf("%w: feature level record %q level %d", ErrInvalidRecord, r.Name, r.Level)
	}
	if !b.featuresOwned {
		b.img.FeatureLevels = cloneMap(b.img.FeatureLevels)
		b.featuresOwned = true
	}
	b.img.FeatureLevels[r.Name] = r.Level
	return nil
}

// FeatureUpgradeType is how UpdateFeatures may move a level (Kafka's FeatureUpdate.UpgradeType
// codes on the wire).
type FeatureUpgradeType int8

const (
	FeatureUpgradeUnknown  FeatureUpgradeType = 0
	FeatureUpgrade         FeatureUpgradeType = 1
	FeatureSafeDowngrade   FeatureUpgradeType = 2
	FeatureUnsafeDowngrade FeatureUpgradeType = 3
)

// FeatureUpdate is one entry of UpdateFeatures.
type FeatureUpdate struct {
	Name        string
	Level       int16
	UpgradeType FeatureUpgradeType
}

// UpdateFeatures validates and applies feature updates as Kafka's FeatureControlManager does:
// all of them or none. The first failing update's error is the answer (INVALID_UPDATE_VERSION
// with Kafka's message); nil means every level was finalized (or, validateOnly, would be).
// The Go error is for a call that did not complete (ctx done, controller closed, not the
// leader as a *validationError from submit is turned into its code).
func (c *Controller) UpdateFeatures(ctx context.Context, updates []FeatureUpdate, validateOnly bool) (code *kerr.Error, msg string, err error) {
	var verr *validationError
	req := &request{plan: func(w *Image) []Record {
		var recs []Record
		recs, verr = c.planFeatureUpdates(w, updates)
		if verr != nil || validateOnly {
			return nil
		}
		return recs
	}}
	if err := c.submit(ctx, req); err != nil {
		if rerr, ok := err.(*validationError); ok {
			return rerr.code, rerr.msg, nil
		}
		return nil, "", err
	}
	if verr != nil {
		return verr.code, verr.msg, nil
	}
	return nil, "", nil
}

// planFeatureUpdates checks every update in order, as Kafka's FeatureControlManager.
// updateFeature does, and returns their records or the first problem. A feature named twice
// is INVALID_REQUEST, as Kafka's broker refuses it before its controller sees it.
func (c *Controller) planFeatureUpdates(w *Image, updates []FeatureUpdate) ([]Record, *validationError) {
	seen := map[string]bool{}
	var recs []Record
	for _, u := range updates {
		if seen[u.Name] {
			return nil, fail(kerr.InvalidRequest, "The request contains multiple FeatureUpdates for feature %s.", u.Name)
		}
		seen[u.Name] = true
		if verr := c.checkFeatureUpdate(w, u); verr != nil {
			return nil, verr
		}
		recs = append(recs, &FeatureLevelRecord{Name: u.Name, Level: u.Level})
	}
	return recs, nil
}

func (c *Controller) checkFeatureUpdate(w *Image, u FeatureUpdate) *validationError {
	invalid := func(format string, args ...any) *validationError {
		if u.Name == MetadataVersionFeature {
			return fail(kerr.InvalidUpdateVersion, "Invalid metadata.version %d. %s", u.Level, fmt.Sprintf(format, args...))
		}
		return fail(kerr.InvalidUpdateVersion, "Invalid update version %d for feature %s. %s", u.Level, u.Name, fmt.Sprintf(format, args...))
	}
	if u.UpgradeType < FeatureUpgrade || u.UpgradeType > FeatureUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	if u.Level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	// The supported range check comes before the direction check, as in Kafka; a feature
	// sluice does not know supports level 0 only, as Kafka's QuorumFeatures.DISABLED.
	f, ok := featureByName(u.Name)
	if !ok {
		f = Feature{Name: u.Name}
	}
	if u.Level < f.MinLevel || u.Level > f.MaxLevel {
		who := "Local controller " + strconv.Itoa(int(c.cfg.NodeID))
		if f.MaxLevel == 0 {
			return invalid("%s does not support this feature.", who)
		}
		return invalid("%s only supports versions %s", who, levelRange(f.MinLevel, f.MaxLevel))
	}
	current := w.FinalizedLevel(u.Name)
	switch {
	case u.Level < current && u.UpgradeType == FeatureUpgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case u.Level > current && u.UpgradeType != FeatureUpgrade:
		return invalid("Can't downgrade to a newer version.")
	}
	if !ok {
		// Level 0 of a feature nobody knows: Kafka's Features.featureFromName refuses it.
		return invalid("Feature %s not found.", u.Name)
	}
	return nil
}

// levelRange formats a range as Kafka's VersionRange.toString does.
func levelRange(min, max int16) string {
	if min == max {
		return strconv.Itoa(int(min))
	}
	return strconv.Itoa(int(min)) + "-" + strconv.Itoa(int(max))
}
