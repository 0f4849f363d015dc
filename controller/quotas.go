package controller

// Client quotas in the metadata log, as Kafka's ClientQuotaControlManager keeps them: per
// quota entity (a user, a client id, both, or an IP, each by name or as the default) a set of
// quota keys and their values. AlterClientQuotas (API 49) changes them; the brokers enforce
// the byte rates (broker/quotas.go) and answer DescribeClientQuotas (48) from their image.

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Quota entity types, as Kafka names them.
const (
	QuotaUser     = "user"
	QuotaClientID = "client-id"
	QuotaIP       = "ip"
)

// Quota keys Kafka accepts (QuotaConfig).
const (
	QuotaProducerByteRate       = "producer_byte_rate"
	QuotaConsumerByteRate       = "consumer_byte_rate"
	QuotaRequestPercentage      = "request_percentage"
	QuotaControllerMutationRate = "controller_mutation_rate"
	QuotaConnectionCreationRate = "connection_creation_rate"
)

// QuotaName is one component of a quota entity: absent (!Set), the default (Default), or a
// name.
type QuotaName struct {
	Set     bool
	Default bool
	Name    string
}

// QuotaEntity identifies a quota: user and/or client id, or an IP. Comparable, so it keys
// Image.Quotas.
type QuotaEntity struct {
	User, ClientID, IP QuotaName
}

// QuotaEntityPart is one (type, name) pair as the wire carries it; a nil name is the default.
type QuotaEntityPart struct {
	Type string  `json:"entity_type"`
	Name *string `json:"entity_name,omitempty"`
}

// Parts returns the entity as wire pairs (user, client-id, ip order).
func (e QuotaEntity) Parts() []QuotaEntityPart {
	var out []QuotaEntityPart
	add := func(t string, n QuotaName) {
		if !n.Set {
			return
		}
		p := QuotaEntityPart{Type: t}
		if !n.Default {
			name := n.Name
			p.Name = &name
		}
		out = append(out, p)
	}
	add(QuotaUser, e.User)
	add(QuotaClientID, e.ClientID)
	add(QuotaIP, e.IP)
	return out
}

// ParseQuotaEntity validates wire pairs as Kafka's ClientQuotaControlManager does: at least
// one, each of type user, client-id or ip, none twice, ip not combined, an ip name a valid
// address. The problems are INVALID_REQUEST.
func ParseQuotaEntity(parts []QuotaEntityPart) (QuotaEntity, *validationError) {
	var e QuotaEntity
	if len(parts) == 0 {
		return e, fail(kerr.InvalidRequest, "Invalid empty client quota entity")
	}
	for _, p := range parts {
		var n *QuotaName
		switch p.Type {
		case QuotaUser:
			n = &e.User
		case QuotaClientID:
			n = &e.ClientID
		case QuotaIP:
			n = &e.IP
		default:
			return e, fail(kerr.InvalidRequest, "Unhandled client quota entity type: %s", p.Type)
		}
		if n.Set {
			return e, fail(kerr.InvalidRequest, "Invalid empty client quota entity")
		}
		n.Set = true
		if p.Name == nil {
			n.Default = true
		} else {
			n.Name = *p.Name
		}
	}
	if e.IP.Set {
		if e.User.Set || e.ClientID.Set {
			return e, fail(kerr.InvalidRequest, "Invalid quota entity combination, IP entity should not be combined with User or ClientId")
		}
		if !e.IP.Default && net.ParseIP(e.IP.Name) == nil {
			return e, fail(kerr.InvalidRequest, "%s is not a valid IP or resolvable host.", e.IP.Name)
		}
	}
	return e, nil
}

// ClientQuotaRecord sets (Remove false) or removes one quota key of one entity (Kafka's
// ClientQuotaRecord).
type ClientQuotaRecord struct {
	Entity []QuotaEntityPart `json:"entity"`
	Key    string            `json:"key"`
	Value  float64           `json:"value,omitempty"`
	Remove bool              `json:"remove,omitempty"`
}

func (*ClientQuotaRecord) Type() RecordType { return RecordClientQuota }

func (b *imageBuilder) applyQuota(r *ClientQuotaRecord) error {
	e, verr := ParseQuotaEntity(r.Entity)
	if verr != nil {
		return fmt.Errorf("%w: client quota record: %s", ErrInvalidRecord, verr.msg)
	}
	img := b.img
	if !b.quotasOwned {
		img.Quotas = cloneMap(img.Quotas)
		b.quotasOwned = true
	}
	m := cloneMap(img.Quotas[e])
	if r.Remove {
		delete(m, r.Key)
	} else {
		m[r.Key] = r.Value
	}
	if len(m) == 0 {
		delete(img.Quotas, e)
	} else {
		img.Quotas[e] = m
	}
	return nil
}

// QuotaOp sets (Remove false) or removes one quota key.
type QuotaOp struct {
	Key    string
	Value  float64
	Remove bool
}

// QuotaAlteration is one entry of AlterClientQuotas.
type QuotaAlteration struct {
	Entity []QuotaEntityPart
	Ops    []QuotaOp
}

// QuotaResult is the outcome of one alteration.
type QuotaResult struct {
	Err     error
	Message string
}

func (r *QuotaResult) errFields() (*error, *string) { return &r.Err, &r.Message }

// quotaKeyKinds: which keys apply to user/client-id entities (false) and to ip entities
// (true), and whether a value must be a whole number.
var quotaKeys = map[string]struct{ ip, integral bool }{
	QuotaProducerByteRate:       {false, true},
	QuotaConsumerByteRate:       {false, true},
	QuotaRequestPercentage:      {false, false},
	QuotaControllerMutationRate: {false, false},
	QuotaConnectionCreationRate: {true, true},
}

// AlterClientQuotas validates and applies quota changes as Kafka's ClientQuotaControlManager
// does: a bad entity, a key unknown or not for that entity type, a key twice in one entry, or
// a value that is not positive (or not whole for the byte and connection rates) is
// INVALID_REQUEST for that entry; other entries still apply.
func (c *Controller) AlterClientQuotas(ctx context.Context, alts []QuotaAlteration, validateOnly bool) ([]QuotaResult, error) {
	results := make([]QuotaResult, len(alts))
	req := &request{plan: func(w *Image) []Record {
		var recs []Record
		for i, a := range alts {
			r, verr := planQuota(w, a)
			if verr != nil {
				setErr(&results[i].Err, &results[i].Message, verr)
				continue
			}
			if !validateOnly {
				recs = append(recs, r...)
			}
		}
		return recs
	}}
	return submitEach(ctx, c, req, results, failUnfailed)
}

func planQuota(w *Image, a QuotaAlteration) ([]Record, *validationError) {
	e, verr := ParseQuotaEntity(a.Entity)
	if verr != nil {
		return nil, verr
	}
	seen := map[string]bool{}
	var recs []Record
	for _, op := range a.Ops {
		k, ok := quotaKeys[op.Key]
		if !ok || k.ip != e.IP.Set {
			return nil, fail(kerr.InvalidRequest, "Invalid configuration key %s", op.Key)
		}
		if seen[op.Key] {
			return nil, fail(kerr.InvalidRequest, "Duplicate quota key %s", op.Key)
		}
		seen[op.Key] = true
		if op.Remove {
			if _, ok := w.Quotas[e][op.Key]; ok {
				recs = append(recs, &ClientQuotaRecord{Entity: e.Parts(), Key: op.Key, Remove: true})
			}
			continue
		}
		if math.IsNaN(op.Value) || math.IsInf(op.Value, 0) || op.Value <= 0 {
			return nil, fail(kerr.InvalidRequest, "Quota %s must be greater than 0", op.Key)
		}
		if k.integral && (op.Value != math.Trunc(op.Value) || op.Value > math.MaxInt64) {
			return nil, fail(kerr.InvalidRequest, "Configuration %s must be a Long value", op.Key)
		}
		recs = append(recs, &ClientQuotaRecord{Entity: e.Parts(), Key: op.Key, Value: op.Value})
	}
	return recs, nil
}

// Quota filter match types (DescribeClientQuotas components).
const (
	QuotaMatchExact   int8 = 0
	QuotaMatchDefault int8 = 1
	QuotaMatchAny     int8 = 2
)

// QuotaFilterComponent is one DescribeClientQuotas filter component.
type QuotaFilterComponent struct {
	EntityType string
	MatchType  int8
	Match      *string
}

// QuotaDescription is one matching entity and its values.
type QuotaDescription struct {
	Entity QuotaEntity
	Values map[string]float64
}

// DescribeClientQuotas answers DescribeClientQuotas from an image as Kafka's
// ClientQuotasImage.describe does: each component restricts one entity type (exact name,
// default, or any specified); strict means the entity has no other types. A type twice or an
// unknown type is INVALID_REQUEST for the whole request.
func DescribeClientQuotas(im *Image, comps []QuotaFilterComponent, strict bool) ([]QuotaDescription, *kerr.Error, string) {
	want := map[string]QuotaFilterComponent{}
	for _, c := range comps {
		switch c.EntityType {
		case QuotaUser, QuotaClientID, QuotaIP:
		default:
			return nil, kerr.InvalidRequest, "Custom entity type " + c.EntityType + " not supported"
		}
		if _, dup := want[c.EntityType]; dup {
			return nil, kerr.InvalidRequest, "Entity type " + c.EntityType + " cannot appear more than once in the filter."
		}
		if c.MatchType < QuotaMatchExact || c.MatchType > QuotaMatchAny {
			return nil, kerr.InvalidRequest, fmt.Sprintf("Unknown match type %d", c.MatchType)
		}
		want[c.EntityType] = c
	}
	if _, ip := want[QuotaIP]; ip && (len(want) > 1) {
		return nil, kerr.InvalidRequest, "Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component."
	}
	matches := func(n QuotaName, t string) bool {
		c, ok := want[t]
		if !ok {
			return !strict || !n.Set
		}
		if !n.Set {
			return false
		}
		switch c.MatchType {
		case QuotaMatchExact:
			return !n.Default && c.Match != nil && n.Name == *c.Match
		case QuotaMatchDefault:
			return n.Default
		}
		return true
	}
	var out []QuotaDescription
	for e, v := range im.Quotas {
		if matches(e.User, QuotaUser) && matches(e.ClientID, QuotaClientID) && matches(e.IP, QuotaIP) {
			out = append(out, QuotaDescription{Entity: e, Values: v})
		}
	}
	slices.SortFunc(out, func(a, b QuotaDescription) int { return strings.Compare(entityKey(a.Entity), entityKey(b.Entity)) })
	return out, nil, ""
}

func entityKey(e QuotaEntity) string {
	var sb strings.Builder
	for _, p := range e.Parts() {
		sb.WriteString(p.Type)
		sb.WriteByte('=')
		if p.Name == nil {
			sb.WriteString("<default>")
		} else {
			sb.WriteString(*p.Name)
		}
		sb.WriteByte(';')
	}
	return sb.String()
}

// snapshotQuota is one entity's quotas in a snapshot.
type snapshotQuota struct {
	Entity []QuotaEntityPart  `json:"entity"`
	Values map[string]float64 `json:"values"`
}

func snapshotQuotas(q map[QuotaEntity]map[string]float64) []snapshotQuota {
	out := make([]snapshotQuota, 0, len(q))
	for e, v := range q {
		out = append(out, snapshotQuota{Entity: e.Parts(), Values: v})
	}
	slices.SortFunc(out, func(a, b snapshotQuota) int {
		ea, _ := ParseQuotaEntity(a.Entity)
		eb, _ := ParseQuotaEntity(b.Entity)
		return strings.Compare(entityKey(ea), entityKey(eb))
	})
	return out
}

func restoreQuotas(s []snapshotQuota) map[QuotaEntity]map[string]float64 {
	if len(s) == 0 {
		return nil
	}
	out := map[QuotaEntity]map[string]float64{}
	for _, q := range s {
		if e, verr := ParseQuotaEntity(q.Entity); verr == nil && len(q.Values) > 0 {
			out[e] = q.Values
		}
	}
	return out
}
