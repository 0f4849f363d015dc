package broker

// Helpers shared by the admin API files (CreateTopics, DescribeConfigs, AlterConfigs, ...):
// turning the controller's per-item errors into codes and messages, resolving config entries
// for DescribeConfigs and CreateTopics v5+, and bounding how long an admin request waits.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/internal/config"
)

// Kafka's config resource types (ConfigResource.Type).
const (
	resourceTopic        = int8(kmsg.ConfigResourceTypeTopic)
	resourceBroker       = int8(kmsg.ConfigResourceTypeBroker)
	resourceBrokerLogger = int8(kmsg.ConfigResourceTypeBrokerLogger)
)

// adminTimeout derives the context an admin request runs under from its TimeoutMillis. A
// non-positive timeout adds no deadline of its own: on a single node the controller answers at
// once, and Kafka's "timeout 0: do not wait for the change to propagate" still commits it.
func adminTimeout(ctx context.Context, timeoutMillis int32) (context.Context, context.CancelFunc) {
	if timeoutMillis <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Duration(timeoutMillis)*time.Millisecond)
}

// itemError and controllerCallError translate a controller call's outcome into response
// codes (controller.ResultError, controller.CallError: one translation for the broker and
// controller listeners).
var (
	itemError           = controller.ResultError
	controllerCallError = controller.CallError
)

func strPtr(s string) *string { return &s }

// dynamicBrokerConfigs returns this node's dynamic broker overrides and the cluster-wide
// dynamic defaults from the image.
func (b *Broker) dynamicBrokerConfigs(im *controller.Image) (perBroker, clusterDefault map[string]string) {
	return im.BrokerConfigs[strconv.Itoa(int(b.nodeID))], im.BrokerConfigs[""]
}

// brokerConfigValue resolves a broker key for this node (dynamic, dynamic default, static,
// default), or "" when it has no value.
func (b *Broker) brokerConfigValue(im *controller.Image, key string) string {
	perBroker, clusterDefault := b.dynamicBrokerConfigs(im)
	v, _ := config.BrokerValue(key, perBroker, clusterDefault, b.cfg.Static)
	if v == nil {
		return ""
	}
	return *v
}

// configEntry is one key as DescribeConfigs and CreateTopics v5+ report it.
type configEntry struct {
	name      string
	value     *string // nil for a null value or a sensitive key
	readOnly  bool
	source    config.Source
	sensitive bool
	synonyms  []config.Synonym // in precedence order, the entry's own source first
	typ       config.Type
	doc       string
}

// wanted reports whether key is in names; an empty list asks for every key, as Kafka's
// ConfigHelper treats both null and empty key lists.
func wanted(names []string, key string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n == key {
			return true
		}
	}
	return false
}

// redact nils the values of a sensitive key, as Kafka never returns them.
func redact(e configEntry) configEntry {
	if !e.sensitive {
		return e
	}
	e.value = nil
	syns := make([]config.Synonym, len(e.synonyms))
	for i, s := range e.synonyms {
		s.Value = nil
		syns[i] = s
	}
	e.synonyms = syns
	return e
}

// topicConfigEntries resolves every (or each named) topic key for a topic with the given
// overrides. Topic keys are never read-only (Kafka's createTopicConfigEntry); internal keys are
// not listed.
func (b *Broker) topicConfigEntries(im *controller.Image, overrides map[string]string, names []string) []configEntry {
	perBroker, clusterDefault := b.dynamicBrokerConfigs(im)
	var out []configEntry
	for _, d := range config.TopicDefs() {
		if d.Internal || !wanted(names, d.Name) {
			continue
		}
		v, src, syns := config.TopicValue(d.Name, overrides, perBroker, clusterDefault, b.cfg.Static)
		out = append(out, redact(configEntry{
			name:      d.Name,
			value:     v,
			source:    src,
			sensitive: d.Sensitive || d.Type == config.TypePassword,
			synonyms:  syns,
			typ:       d.Type,
			doc:       d.Doc,
		}))
	}
	return out
}

// brokerConfigEntries resolves the keys of this node's broker resource: every broker key with
// its effective value, read-only unless Kafka lets it change dynamically.
func (b *Broker) brokerConfigEntries(im *controller.Image, names []string) []configEntry {
	perBroker, clusterDefault := b.dynamicBrokerConfigs(im)
	var out []configEntry
	seen := map[string]bool{}
	add := func(d *config.Def) {
		if seen[d.Name] || !wanted(names, d.Name) {
			return
		}
		seen[d.Name] = true
		v, src := config.BrokerValue(d.Name, perBroker, clusterDefault, b.cfg.Static)
		syns := config.BrokerSynonyms(d.Name, perBroker, clusterDefault, b.cfg.Static)
		out = append(out, redact(configEntry{
			name:      d.Name,
			value:     v,
			readOnly:  d.ReadOnly,
			source:    src,
			sensitive: d.Sensitive || d.Type == config.TypePassword,
			synonyms:  syns,
			typ:       d.Type,
			doc:       d.Doc,
		}))
	}
	for _, d := range config.BrokerDefs() {
		if !d.Internal {
			add(d)
		}
	}
	// Per-listener overrides set dynamically are keys of their own, as Kafka lists them.
	for _, m := range []map[string]string{perBroker, clusterDefault} {
		for key := range m {
			if d, ok := config.BrokerDef(key); ok && strings.HasPrefix(key, "listener.name.") {
				add(d)
			}
		}
	}
	// Keys Kafka defines only dynamically (the replication throttle rates) are listed when
	// set, with their dynamic source and synonyms, as Kafka lists them.
	for _, key := range sortedKeys(mergedKeys(perBroker, clusterDefault)) {
		d, ok := config.DynamicBrokerDef(key)
		if !ok || seen[key] || !wanted(names, key) {
			continue
		}
		if _, static := config.BrokerDef(key); static {
			continue
		}
		seen[key] = true
		var syns []config.Synonym
		for _, src := range []struct {
			m      map[string]string
			source config.Source
		}{{perBroker, config.SourceDynamicBrokerConfig}, {clusterDefault, config.SourceDynamicDefaultBrokerConfig}} {
			if v, ok := src.m[key]; ok {
				syns = append(syns, config.Synonym{Name: key, Value: &v, Source: src.source})
			}
		}
		out = append(out, configEntry{name: key, value: syns[0].Value, source: syns[0].Source, synonyms: syns, typ: d.Type, doc: d.Doc})
	}
	return out
}

// mergedKeys is the set of keys of the maps.
func mergedKeys(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// clusterDefaultConfigEntries lists the broker resource "" : only the cluster-wide dynamic
// defaults, each with source DYNAMIC_DEFAULT_BROKER_CONFIG and only synonyms of that source,
// as Kafka's ConfigHelper does for the default resource.
func (b *Broker) clusterDefaultConfigEntries(im *controller.Image, names []string) []configEntry {
	_, clusterDefault := b.dynamicBrokerConfigs(im)
	keys := sortedKeys(clusterDefault)
	var out []configEntry
	for _, key := range keys {
		if !wanted(names, key) {
			continue
		}
		d, ok := config.BrokerDef(key)
		if !ok {
			continue
		}
		value := clusterDefault[key]
		out = append(out, redact(configEntry{
			name:      key,
			value:     &value,
			readOnly:  d.ReadOnly,
			source:    config.SourceDynamicDefaultBrokerConfig,
			sensitive: d.Sensitive || d.Type == config.TypePassword,
			synonyms:  []config.Synonym{{Name: key, Value: &value, Source: config.SourceDynamicDefaultBrokerConfig}},
			typ:       d.Type,
			doc:       d.Doc,
		}))
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// parseBrokerResource checks a broker resource name as Kafka's ConfigAdminManager does: empty
// is the cluster-wide default resource, otherwise it must be this node's id.
func (b *Broker) parseBrokerResource(name string) (isDefault bool, code int16, message *string) {
	if name == "" {
		return true, 0, nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return false, kerr.InvalidRequest.Code, strPtr("Node id must be an integer, but it is: " + name)
	}
	if int32(id) != b.nodeID {
		return false, kerr.InvalidRequest.Code, strPtr("Unexpected broker id, expected " + strconv.Itoa(int(b.nodeID)) + ", but received " + name)
	}
	return false, 0, nil
}

// maxTopicNameLength is Kafka's Topic.MAX_NAME_LENGTH.
const maxTopicNameLength = 249

// topicNameProblem checks a topic name as Kafka's Topic.validate does and returns its message,
// or "" for a legal name. Admin APIs that only read answer INVALID_TOPIC_EXCEPTION with it.
func topicNameProblem(name string) string {
	switch {
	case name == "":
		return "Topic name is illegal, it can't be empty"
	case name == "." || name == "..":
		return `Topic name cannot be "." or ".."`
	case len(name) > maxTopicNameLength:
		return "Topic name is illegal, it can't be longer than " + strconv.Itoa(maxTopicNameLength) + " characters, topic name: " + name
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			return "Topic name \"" + name + "\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
		}
	}
	return ""
}

func itoa32(n int32) string { return strconv.Itoa(int(n)) }

// alterResource is one resource of AlterConfigs or IncrementalAlterConfigs on its way to the
// controller: the operations it resolves to, or the error found before the controller.
type alterResource struct {
	resourceType int8
	name         string
	ops          []controller.ConfigOp
	replaceAll   bool
	code         int16
	message      *string
	// handled: the resource was answered without the controller (a BROKER_LOGGER).
	handled bool
}

func (r *alterResource) fail(code int16, message string) {
	if r.code == 0 {
		r.code, r.message = code, &message
	}
}

// checkAlterKeys refuses, as Kafka does, a resource whose request names a config key twice or gives
// null values (nulls: the keys whose operation needs a value and has none); then it checks the
// resource name.
func (b *Broker) checkAlterKeys(r *alterResource, names, nulls []string) {
	if duplicateKeys(names) {
		r.fail(kerr.InvalidRequest.Code, "Error due to duplicate config keys")
	}
	if len(nulls) > 0 {
		r.fail(kerr.InvalidRequest.Code, "Null value not supported for : "+strings.Join(nulls, ", "))
	}
	b.checkAlterResourceName(r)
}

// duplicateResources marks every occurrence of a resource named more than once, as Kafka's
// ConfigAdminManager.preprocess does.
func duplicateResources(rs []alterResource) {
	type key struct {
		t    int8
		name string
	}
	counts := map[key]int{}
	for _, r := range rs {
		counts[key{r.resourceType, r.name}]++
	}
	for i := range rs {
		if counts[key{rs[i].resourceType, rs[i].name}] > 1 {
			rs[i].fail(kerr.InvalidRequest.Code, "Each resource must appear at most once.")
		}
	}
}

// duplicateKeys reports whether a key appears twice in names.
func duplicateKeys(names []string) bool {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return true
		}
		seen[n] = true
	}
	return false
}

// checkAlterResourceName checks the resource's type and name before its operations: a broker
// resource must be "" or this node, a topic resource a legal name.
func (b *Broker) checkAlterResourceName(r *alterResource) {
	switch r.resourceType {
	case resourceBroker:
		if _, code, msg := b.parseBrokerResource(r.name); code != 0 {
			r.fail(code, *msg)
		}
	case resourceGroup:
		if r.name == "" {
			r.fail(kerr.InvalidRequest.Code, "Group resource name must not be empty.")
		}
	case resourceClientMetrics:
		if r.name == "" {
			r.fail(kerr.InvalidRequest.Code, "Subscription name can't be empty")
		}
	case resourceTopic:
		if r.name == "" {
			// As Kafka's ControllerConfigurationValidator words it.
			r.fail(kerr.InvalidRequest.Code, "Default topic resources are not allowed.")
		} else if problem := topicNameProblem(r.name); problem != "" {
			r.fail(kerr.InvalidTopicException.Code, problem)
		}
	default:
		r.fail(kerr.InvalidRequest.Code, "Unknown resource type "+strconv.Itoa(int(r.resourceType)))
	}
}

// brokerConfigProblem checks dynamic broker config changes as Kafka's DynamicBrokerConfig
// does; Kafka reports these failures as INVALID_REQUEST (KAFKA-13609). Unknown keys are
// INVALID_CONFIG, as sluice never silently ignores a key.
func brokerConfigProblem(ops []controller.ConfigOp) (int16, string) {
	var readOnly []string
	for _, op := range ops {
		if op.Value == nil {
			continue // reverting a key to its default is always allowed, as in Kafka
		}
		d, ok := config.DynamicBrokerDef(op.Key)
		if !ok {
			return kerr.InvalidConfig.Code, (&config.Error{Key: op.Key, Unknown: true}).Error()
		}
		if d.ReadOnly {
			readOnly = append(readOnly, op.Key)
			continue
		}
		if err := d.Check(*op.Value); err != nil {
			return kerr.InvalidRequest.Code, err.Error()
		}
	}
	if len(readOnly) > 0 {
		// Kafka prints the Scala Set of keys.
		return kerr.InvalidRequest.Code, "Cannot update these configs dynamically: Set(" + strings.Join(readOnly, ", ") + ")"
	}
	return 0, ""
}

// alterConfigs sends the resources without an error to the controller and records its answers.
// After a real change it waits until this broker applied it, so a following describe or
// produce sees the new values.
func (b *Broker) alterConfigs(ctx context.Context, rs []alterResource, validateOnly bool) {
	var reqs []controller.AlterConfigs
	var idx []int
	for i, r := range rs {
		if r.code != 0 || r.handled {
			continue
		}
		if r.resourceType == resourceBroker {
			if code, msg := brokerConfigProblem(r.ops); code != 0 {
				rs[i].fail(code, msg)
				continue
			}
		}
		if r.resourceType == resourceGroup {
			if code, msg := b.groupConfigProblem(r.ops); code != 0 {
				rs[i].fail(code, msg)
				continue
			}
			if code, msg := b.groupSessionHeartbeatProblem(b.ctrl.Image().GroupConfigs[r.name], r.ops); code != 0 {
				rs[i].fail(code, msg)
				continue
			}
		}
		if r.resourceType == resourceClientMetrics {
			if code, msg := clientMetricsProblem(r.ops); code != 0 {
				rs[i].fail(code, msg)
				continue
			}
		}
		reqs = append(reqs, controller.AlterConfigs{ResourceType: r.resourceType, ResourceName: r.name, Ops: r.ops, ReplaceAll: r.replaceAll})
		idx = append(idx, i)
	}
	if len(reqs) == 0 {
		return
	}
	results, err := b.ctrl.AlterConfigs(ctx, reqs, validateOnly)
	if err != nil {
		code, msg := controllerCallError(err)
		for _, i := range idx {
			rs[i].code, rs[i].message = code, msg
		}
		return
	}
	for j, i := range idx {
		if j >= len(results) {
			rs[i].code = kerr.UnknownServerError.Code
			continue
		}
		rs[i].code, rs[i].message = itemError(results[j].Err, results[j].Message)
	}
	if !validateOnly {
		b.waitForImage(ctx, b.ctrl.Image().Offset)
	}
}

// partitionsSnapshot returns the replicas hosted on this node, in no order.
func (b *Broker) partitionsSnapshot() []*Partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]*Partition, 0, len(b.mu.partitions))
	for _, p := range b.mu.partitions {
		out = append(out, p)
	}
	return out
}

// every runs f every interval (fallback when interval is not positive) until the broker
// closes. REQUIRES: counted in b.done.
func (b *Broker) every(interval, fallback time.Duration, f func()) {
	defer b.done.Done()
	if interval <= 0 {
		interval = fallback
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-b.closing:
			return
		case <-ticker.C:
			f()
		}
	}
}

// hostedPartitions returns the replicas hosted on this node, sorted by topic and partition.
func (b *Broker) hostedPartitions() []*Partition {
	out := b.partitionsSnapshot()
	slices.SortFunc(out, func(x, y *Partition) int {
		if c := strings.Compare(x.tp.topic, y.tp.topic); c != 0 {
			return c
		}
		return int(x.tp.partition) - int(y.tp.partition)
	})
	return out
}
