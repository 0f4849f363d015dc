package telemetry

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP MetricsData reader. A pushed payload (KIP-714) is an OpenTelemetry
// opentelemetry.proto.metrics.v1.MetricsData message; this reads the parts sluice exports
// (gauges and sums of number data points, with their attributes and the resource's) straight
// off the wire with protowire, skipping every other field, so no generated OTLP code is needed.
// Field numbers are those of opentelemetry-proto's metrics.proto, common.proto and
// resource.proto; they are fixed by the protobuf wire compatibility rules.
//
// The reader never panics on input: every length is checked by protowire, nesting is at most
// the schema's depth (no recursion into AnyValue lists), and the number of points and
// attributes it returns is bounded (maxPoints, maxAttributes).

// ErrBadPayload wraps every reason a payload is not a MetricsData message.
var ErrBadPayload = errors.New("telemetry: malformed OTLP MetricsData")

// Bounds of one decoded payload.
const (
	maxPoints     = 1 << 16
	maxAttributes = 32
	maxValueLen   = 256
)

// Kind is how a point's value is exported.
type Kind uint8

const (
	// KindGauge is a last-value metric (an OTLP Gauge, or a Sum that is not monotonic and
	// cumulative).
	KindGauge Kind = iota + 1
	// KindCounter is a monotonic sum.
	KindCounter
)

// Point is one number data point of a pushed metric.
type Point struct {
	Name string
	Kind Kind
	// Delta is set for a Sum with delta temporality: the value adds to the previous one.
	Delta bool
	Value float64
	// Attributes are the resource's attributes followed by the point's, in payload order.
	Attributes []Attribute
}

// Attribute is one key and its value rendered as a string.
type Attribute struct{ Key, Value string }

// field walks the fields of one message, calling fn with each field's number, type and the
// bytes of a length-delimited field (nil otherwise) or its varint/fixed value.
func walk(b []byte, fn func(num protowire.Number, typ protowire.Type, data []byte, scalar uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrBadPayload, protowire.ParseError(n))
		}
		b = b[n:]
		var data []byte
		var scalar uint64
		switch typ {
		case protowire.BytesType:
			data, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			scalar, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			scalar, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			scalar = uint64(v)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrBadPayload, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(num, typ, data, scalar); err != nil {
			return err
		}
	}
	return nil
}

// DecodeMetricsData reads the gauge and sum points of a MetricsData payload.
func DecodeMetricsData(payload []byte) ([]Point, error) {
	var out []Point
	err := walk(payload, func(num protowire.Number, typ protowire.Type, data []byte, _ uint64) error {
		if num != 1 || typ != protowire.BytesType { // resource_metrics
			return nil
		}
		return decodeResourceMetrics(data, &out)
	})
	return out, err
}

func decodeResourceMetrics(b []byte, out *[]Point) error {
	var resource []Attribute
	var scopes [][]byte
	err := walk(b, func(num protowire.Number, typ protowire.Type, data []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1: // resource
			return walk(data, func(num protowire.Number, typ protowire.Type, data []byte, _ uint64) error {
				if num == 1 && typ == protowire.BytesType { // attributes
					return appendKeyValue(data, &resource)
				}
				return nil
			})
		case 2: // scope_metrics; read after the resource, which may follow them
			scopes = append(scopes, data)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, s := range scopes {
		err := walk(s, func(num protowire.Number, typ protowire.Type, data []byte, _ uint64) error {
			if num == 2 && typ == protowire.BytesType { // metrics
				return decodeMetric(data, resource, out)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func decodeMetric(b []byte, resource []Attribute, out *[]Point) error {
	var name string
	var kind Kind
	var delta bool
	var points [][]byte
	err := walk(b, func(num protowire.Number, typ protowire.Type, data []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			name = string(data)
		case 5, 7: // gauge, sum
			monotonic := false
			err := walk(data, func(n protowire.Number, t protowire.Type, d []byte, v uint64) error {
				switch {
				case n == 1 && t == protowire.BytesType:
					points = append(points, d)
				case n == 2 && t == protowire.VarintType:
					delta = v == 1 // AGGREGATION_TEMPORALITY_DELTA
				case n == 3 && t == protowire.VarintType:
					monotonic = v != 0
				}
				return nil
			})
			if err != nil {
				return err
			}
			kind = KindGauge
			if num == 7 && monotonic {
				kind = KindCounter
			}
			if num == 5 {
				delta = false // a gauge has no temporality
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if kind == 0 || name == "" {
		return nil // histograms, summaries and nameless metrics are not exported
	}
	for _, p := range points {
		if len(*out) >= maxPoints {
			return fmt.Errorf("%w: more than %d data points", ErrBadPayload, maxPoints)
		}
		pt := Point{Name: name, Kind: kind, Delta: delta, Attributes: append([]Attribute(nil), resource...)}
		hasValue := false
		err := walk(p, func(num protowire.Number, typ protowire.Type, data []byte, v uint64) error {
			switch {
			case num == 4 && typ == protowire.Fixed64Type: // as_double
				pt.Value, hasValue = math.Float64frombits(v), true
			case num == 6 && typ == protowire.Fixed64Type: // as_int (sfixed64)
				pt.Value, hasValue = float64(int64(v)), true
			case num == 7 && typ == protowire.BytesType: // attributes
				return appendKeyValue(data, &pt.Attributes)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if hasValue {
			*out = append(*out, pt)
		}
	}
	return nil
}

// appendKeyValue reads one KeyValue; its AnyValue is rendered as a string (scalars only; a
// list, map or bytes value is skipped).
func appendKeyValue(b []byte, attrs *[]Attribute) error {
	var kv Attribute
	has := false
	err := walk(b, func(num protowire.Number, typ protowire.Type, data []byte, _ uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			kv.Key = string(data)
		case num == 2 && typ == protowire.BytesType:
			return walk(data, func(n protowire.Number, t protowire.Type, d []byte, v uint64) error {
				switch {
				case n == 1 && t == protowire.BytesType:
					kv.Value, has = string(d), true
				case n == 2 && t == protowire.VarintType:
					kv.Value, has = strconv.FormatBool(v != 0), true
				case n == 3 && t == protowire.VarintType:
					kv.Value, has = strconv.FormatInt(int64(v), 10), true
				case n == 4 && t == protowire.Fixed64Type:
					kv.Value, has = strconv.FormatFloat(math.Float64frombits(v), 'g', -1, 64), true
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !has || kv.Key == "" || len(*attrs) >= maxAttributes {
		return nil
	}
	if len(kv.Value) > maxValueLen {
		kv.Value = kv.Value[:maxValueLen]
	}
	*attrs = append(*attrs, kv)
	return nil
}
