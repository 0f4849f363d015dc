package telemetry

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/internal/compress"
)

// Bounds of the manager's state.
const (
	// MaxClientInstances bounds the client instances kept; past it the one seen longest ago
	// is dropped (Kafka's ClientMetricsManager keeps an LRU cache of 16384).
	MaxClientInstances = 16384
	// MaxSeries bounds the exported series over all clients; points of a new series past it
	// are dropped and counted (DroppedSeries).
	MaxSeries = 10000
	// MaxDecompressedBytes bounds a pushed payload after decompression.
	MaxDecompressedBytes = 16 << 20
	// minExpiry is the shortest time a client instance is kept after its last request
	// (Kafka's DEFAULT_CACHE_EXPIRY_MS); it is kept at least three push intervals.
	minExpiry = 60 * time.Second
)

// AcceptedCompressionTypes are the codecs a client may compress its payload with, in the
// order of preference Kafka's broker advertises (zstd, lz4, gzip, snappy).
var AcceptedCompressionTypes = []int8{compress.Zstd, compress.LZ4, compress.Gzip, compress.Snappy}

// Manager is the broker's side of KIP-714: it matches client instances to the CLIENT_METRICS
// subscriptions, answers GetTelemetrySubscriptions and PushTelemetry as Kafka's
// ClientMetricsManager does, and keeps the pushed gauges and sums for /metrics. Time is
// injected. Safe for concurrent use.
type Manager struct {
	now      func() time.Time
	maxBytes int32

	mu struct {
		sync.Mutex
		// subsCfg is the CLIENT_METRICS configs subs was parsed from.
		subsCfg map[string]map[string]string
		subs    []Subscription // sorted by name
		// version counts subscription changes; an instance made at an older version is
		// matched again at its next request.
		version uint64
		// Invariant: len(clients) <= MaxClientInstances.
		clients map[[16]byte]*instance
		// Invariant: series == the sum of len(i.series) over clients, <= MaxSeries.
		series        int
		droppedSeries uint64
		// lastExpiry is when expired instances were last dropped: at most once a second, so
		// a request does not walk every instance.
		lastExpiry time.Time
	}
}

// instance is one client instance (Kafka's ClientMetricsInstance).
type instance struct {
	id             [16]byte
	idString       string
	info           ClientInfo
	version        uint64
	subscriptionID int32
	metrics        []string
	intervalMs     int32
	// lastGet and lastPush are the accepted requests' times (zero: none yet).
	lastGet, lastPush time.Time
	lastSeen          time.Time
	terminating       bool
	// lastError is the code of the instance's last push (0 after a Get answered): a Get
	// after UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE is not throttled.
	lastError int16
	series    map[string]*series
}

type series struct {
	name   string
	kind   Kind
	labels []Attribute
	value  float64
}

// NewManager returns a manager with no subscriptions; maxBytes is telemetry.max.bytes.
func NewManager(now func() time.Time, maxBytes int32) *Manager {
	m := &Manager{now: now, maxBytes: maxBytes}
	m.mu.clients = map[[16]byte]*instance{}
	return m
}

// SetSubscriptions takes the CLIENT_METRICS configs of the newest metadata image; a call with
// the same configs as the last changes nothing.
func (m *Manager) SetSubscriptions(cfg map[string]map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if maps.EqualFunc(m.mu.subsCfg, cfg, func(a, b map[string]string) bool { return maps.Equal(a, b) }) {
		return
	}
	subs := make([]Subscription, 0, len(cfg))
	for name, c := range cfg {
		subs = append(subs, ParseSubscription(name, c))
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
	m.mu.subsCfg, m.mu.subs = cfg, subs
	m.mu.version++
}

// Subscriptions lists the subscription names, sorted.
func (m *Manager) Subscriptions() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, len(m.mu.subs))
	for i, s := range m.mu.subs {
		out[i] = s.Name
	}
	return out
}

// GetAnswer is a GetTelemetrySubscriptions answer.
type GetAnswer struct {
	ErrorCode      int16
	ErrorMessage   string
	InstanceID     [16]byte
	SubscriptionID int32
	Metrics        []string
	PushIntervalMs int32
	MaxBytes       int32
}

// Get answers GetTelemetrySubscriptions: a zero instance ID gets a new one; the instance's
// subscription is the union of the matching subscriptions' metrics ("*" alone if one has it)
// at the smallest of their intervals, or no metrics at the default interval when none
// matches. A request before the push interval passed since the instance's last accepted
// request is THROTTLING_QUOTA_EXCEEDED, unless the subscriptions changed since.
func (m *Manager) Get(id [16]byte, info ClientInfo) GetAnswer {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if id == ([16]byte{}) {
		id = m.newIDLocked()
	}
	inst := m.instanceLocked(id, info, now)
	a := GetAnswer{InstanceID: id, MaxBytes: m.maxBytes}
	last := inst.lastGet
	if inst.lastPush.After(last) {
		last = inst.lastPush
	}
	if last.IsZero() || now.Sub(last) >= time.Duration(inst.intervalMs)*time.Millisecond {
		inst.lastGet = now
	} else if inst.lastError != kerr.UnknownSubscriptionID.Code && inst.lastError != kerr.UnsupportedCompressionType.Code {
		// Early, and not the client recovering from a refused push.
		a.ErrorCode = kerr.ThrottlingQuotaExceeded.Code
		a.ErrorMessage = "Request from the client [" + inst.idString + "] arrived before the next push interval time"
		return a
	}
	inst.lastError = 0
	a.SubscriptionID, a.PushIntervalMs = inst.subscriptionID, inst.intervalMs
	a.Metrics = slices.Clone(inst.metrics)
	return a
}

// PushRequest is a PushTelemetry request's fields.
type PushRequest struct {
	InstanceID      [16]byte
	SubscriptionID  int32
	Terminating     bool
	CompressionType int8
	Metrics         []byte
	Info            ClientInfo
}

// Push answers PushTelemetry with Kafka's checks, in Kafka's order: a zero or reserved
// instance ID is INVALID_REQUEST; after a terminating push every push is INVALID_REQUEST; a
// push before the push interval passed since the last (other than the first after a Get, and
// a terminating one) is THROTTLING_QUOTA_EXCEEDED; a subscription ID that is not the
// instance's current one is UNKNOWN_SUBSCRIPTION_ID; a codec outside 0-4
// UNSUPPORTED_COMPRESSION_TYPE; a payload over telemetry.max.bytes TELEMETRY_TOO_LARGE; one
// that does not decompress or decode INVALID_RECORD. Accepted points are kept for Families.
func (m *Manager) Push(r PushRequest) (int16, string) {
	idString := UUIDString(r.InstanceID)
	if r.InstanceID == ([16]byte{}) || r.InstanceID == oneUUID {
		return kerr.InvalidRequest.Code, "Invalid request from the client [" + idString + "], invalid client instance id"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	inst := m.instanceLocked(r.InstanceID, r.Info, now)
	code, msg := m.checkPushLocked(inst, r, now)
	inst.terminating = inst.terminating || r.Terminating
	inst.lastError = code
	if code != 0 || len(r.Metrics) == 0 {
		return code, msg
	}
	payload := r.Metrics
	if r.CompressionType != compress.None {
		var err error
		if payload, err = compress.Decompress(int(r.CompressionType), r.Metrics, MaxDecompressedBytes); err != nil {
			inst.lastError = kerr.InvalidRecord.Code
			return kerr.InvalidRecord.Code, "The pushed metrics do not decompress: " + err.Error()
		}
	}
	points, err := DecodeMetricsData(payload)
	if err != nil {
		inst.lastError = kerr.InvalidRecord.Code
		return kerr.InvalidRecord.Code, err.Error()
	}
	m.recordLocked(inst, points)
	return 0, ""
}

func (m *Manager) checkPushLocked(inst *instance, r PushRequest, now time.Time) (int16, string) {
	if inst.terminating {
		return kerr.InvalidRequest.Code, "Client [" + inst.idString + "] sent the previous request with state terminating to TRUE, can not accept any requests after that"
	}
	// The first push after a Get is accepted early: the client jitters its interval.
	accept := inst.lastGet.After(inst.lastPush) ||
		inst.lastPush.IsZero() || now.Sub(inst.lastPush) >= time.Duration(inst.intervalMs)*time.Millisecond
	if accept {
		inst.lastPush = now
	} else if !r.Terminating {
		return kerr.ThrottlingQuotaExceeded.Code, "Request from the client [" + inst.idString + "] arrived before the next push interval time"
	}
	if r.SubscriptionID != inst.subscriptionID {
		return kerr.UnknownSubscriptionID.Code, "Unknown client subscription id for the client [" + inst.idString + "]"
	}
	if r.CompressionType < compress.None || r.CompressionType > compress.Zstd {
		return kerr.UnsupportedCompressionType.Code, "Unknown compression type [" + strconv.Itoa(int(r.CompressionType)) + "] is received in telemetry request from [" + inst.idString + "]"
	}
	if len(r.Metrics) > int(m.maxBytes) {
		return kerr.TelemetryTooLarge.Code, "Telemetry request from [" + inst.idString + "] is larger than the maximum allowed size [" + strconv.Itoa(int(m.maxBytes)) + "]"
	}
	return 0, ""
}

// instanceLocked finds or makes the instance, matching it again when the subscriptions
// changed since it was made (with fresh request times, as Kafka makes a new instance), and
// drops instances not seen for their expiry.
func (m *Manager) instanceLocked(id [16]byte, info ClientInfo, now time.Time) *instance {
	m.expireLocked(now)
	inst := m.mu.clients[id]
	if inst == nil {
		if len(m.mu.clients) >= MaxClientInstances {
			m.evictOldestLocked()
		}
		inst = &instance{id: id, idString: UUIDString(id), info: info, series: map[string]*series{}}
		m.mu.clients[id] = inst
		m.matchLocked(inst)
	} else if inst.version < m.mu.version {
		m.matchLocked(inst)
		inst.lastGet, inst.lastPush, inst.terminating, inst.lastError = time.Time{}, time.Time{}, false, 0
	}
	inst.lastSeen = now
	return inst
}

func (m *Manager) matchLocked(inst *instance) {
	interval := int32(DefaultIntervalMs)
	set := map[string]bool{}
	for i := range m.mu.subs {
		s := &m.mu.subs[i]
		if !s.matches(inst.idString, inst.info) {
			continue
		}
		for _, name := range s.Metrics {
			set[name] = true
		}
		interval = min(interval, s.IntervalMs)
	}
	metrics := slices.Sorted(maps.Keys(set))
	if set[AllMetrics] {
		metrics = []string{AllMetrics}
	}
	inst.metrics, inst.intervalMs, inst.version = metrics, interval, m.mu.version
	// As Kafka's computeSubscriptionId: a CRC32C of the metrics and the interval, mixed with
	// the instance ID's hash, so it changes with the subscription.
	crc := crc32.Checksum([]byte(strings.Join(metrics, ",")+strconv.Itoa(int(interval))), crc32.MakeTable(crc32.Castagnoli))
	hi, lo := binary.BigEndian.Uint64(inst.id[:8]), binary.BigEndian.Uint64(inst.id[8:])
	h := hi ^ lo
	inst.subscriptionID = int32(crc) ^ int32(h>>32) ^ int32(h)
}

func (m *Manager) expireLocked(now time.Time) {
	if now.Sub(m.mu.lastExpiry) < time.Second && !now.Before(m.mu.lastExpiry) {
		return
	}
	m.mu.lastExpiry = now
	for id, inst := range m.mu.clients {
		ttl := max(minExpiry, 3*time.Duration(inst.intervalMs)*time.Millisecond)
		if now.Sub(inst.lastSeen) > ttl {
			m.dropLocked(id)
		}
	}
}

func (m *Manager) evictOldestLocked() {
	var oldest *instance
	for _, inst := range m.mu.clients {
		if oldest == nil || inst.lastSeen.Before(oldest.lastSeen) {
			oldest = inst
		}
	}
	if oldest != nil {
		m.dropLocked(oldest.id)
	}
}

func (m *Manager) dropLocked(id [16]byte) {
	if inst := m.mu.clients[id]; inst != nil {
		m.mu.series -= len(inst.series)
		delete(m.mu.clients, id)
	}
}

func (m *Manager) newIDLocked() [16]byte {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:])
		if id != ([16]byte{}) && id != oneUUID && m.mu.clients[id] == nil {
			return id
		}
	}
}

// oneUUID is Kafka's ONE_UUID (also its METADATA_TOPIC_ID); with the zero Uuid, Kafka's
// Uuid.RESERVED, which no client instance may have.
var oneUUID = [16]byte{15: 1}

// UUIDString renders a Uuid as Kafka does: unpadded URL-safe base64.
func UUIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// recordLocked keeps the points: a counter's delta adds to its value, anything else replaces it.
func (m *Manager) recordLocked(inst *instance, points []Point) {
	for _, p := range points {
		labels := sanitizeAttributes(p.Attributes)
		key := p.Name + "\x00" + joinLabels(labels)
		s := inst.series[key]
		if s == nil {
			if m.mu.series >= MaxSeries {
				m.mu.droppedSeries++
				continue
			}
			s = &series{name: p.Name, kind: p.Kind, labels: labels}
			inst.series[key] = s
			m.mu.series++
		}
		if p.Delta {
			s.value += p.Value
		} else {
			s.value = p.Value
		}
	}
}

// sanitizeAttributes makes attribute keys Prometheus label names, drops the labels the
// exporter sets itself and later duplicates, and sorts them by key.
func sanitizeAttributes(attrs []Attribute) []Attribute {
	out := make([]Attribute, 0, len(attrs))
	seen := map[string]bool{LabelClientInstanceID: true, LabelClientID: true}
	for _, a := range attrs {
		k := PrometheusName(a.Key)
		if k == "" || seen[k] || strings.HasPrefix(k, "__") {
			continue
		}
		seen[k] = true
		out = append(out, Attribute{Key: k, Value: strings.ToValidUTF8(a.Value, "\uFFFD")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func joinLabels(labels []Attribute) string {
	var b strings.Builder
	for _, l := range labels {
		b.WriteString(l.Key)
		b.WriteByte('=')
		b.WriteString(l.Value)
		b.WriteByte(0)
	}
	return b.String()
}

// PrometheusName maps a metric or attribute name to a Prometheus name: every character
// outside [a-zA-Z0-9_] becomes '_', and a leading digit gets a '_' before it
// (org.apache.kafka.producer.record.send.total -> org_apache_kafka_producer_record_send_total).
func PrometheusName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) > 0 && b[0] >= '0' && b[0] <= '9' {
		return "_" + string(b)
	}
	return string(b)
}

// The labels every exported client series has.
const (
	LabelClientInstanceID = "client_instance_id"
	LabelClientID         = "client_id"
)

// reservedPrefixes are metric name prefixes of the broker's own metrics; a client's metric
// mapped onto one is not exported, so a client cannot clash with (and break) a broker series.
var reservedPrefixes = []string{"sluice_", "go_", "process_", "promhttp_"}

// Family is one exported metric name with its series.
type Family struct {
	Name, Help string
	Kind       Kind
	// LabelNames are client_instance_id, client_id, then the union of the series' attribute
	// keys, sorted; a series without one has "" for it.
	LabelNames []string
	Series     []Series
}

// Series is one labelled value of a family.
type Series struct {
	LabelValues []string
	Value       float64
}

// Families lists the pushed metrics of the live client instances by Prometheus name. A name
// pushed as both a counter and a gauge keeps the kind of its first series in client
// instance order and drops the others, as one family has one type.
func (m *Manager) Families() []Family {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(m.now())
	ids := slices.SortedFunc(maps.Keys(m.mu.clients), func(a, b [16]byte) int { return strings.Compare(string(a[:]), string(b[:])) })
	type entry struct {
		inst *instance
		s    *series
	}
	byName := map[string][]entry{}
	for _, id := range ids {
		inst := m.mu.clients[id]
		keys := slices.Sorted(maps.Keys(inst.series))
		for _, k := range keys {
			s := inst.series[k]
			name := PrometheusName(s.name)
			if name == "" || slices.ContainsFunc(reservedPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
				continue
			}
			byName[name] = append(byName[name], entry{inst, s})
		}
	}
	out := make([]Family, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		entries := byName[name]
		f := Family{Name: name, Kind: entries[0].s.kind, Help: "Pushed by clients (KIP-714): " + entries[0].s.name}
		keySet := map[string]bool{}
		for _, e := range entries {
			for _, l := range e.s.labels {
				keySet[l.Key] = true
			}
		}
		attrKeys := slices.Sorted(maps.Keys(keySet))
		f.LabelNames = append([]string{LabelClientInstanceID, LabelClientID}, attrKeys...)
		seen := map[string]bool{}
		for _, e := range entries {
			if e.s.kind != f.Kind {
				continue
			}
			values := make([]string, len(f.LabelNames))
			values[0], values[1] = e.inst.idString, strings.ToValidUTF8(e.inst.info.ClientID, "\uFFFD")
			for _, l := range e.s.labels {
				i, _ := slices.BinarySearch(attrKeys, l.Key)
				values[2+i] = l.Value
			}
			// Two pushed names may map to one Prometheus name ("a.b", "a_b"): the first wins.
			if k := strings.Join(values, "\x00"); !seen[k] {
				seen[k] = true
				f.Series = append(f.Series, Series{LabelValues: values, Value: e.s.value})
			}
		}
		out = append(out, f)
	}
	return out
}

// Stats are the manager's counts for /metrics.
type Stats struct {
	Instances, Series int
	DroppedSeries     uint64
}

// Stats reads the manager's counts.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{Instances: len(m.mu.clients), Series: m.mu.series, DroppedSeries: m.mu.droppedSeries}
}
