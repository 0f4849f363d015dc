package config

import (
	"errors"
	"testing"
)

// FuzzValidate: validation never panics, and a value that passes keeps passing once made
// canonical, and Canonical is idempotent.
func FuzzValidate(f *testing.F) {
	defs := append(TopicDefs(), BrokerDefs()...)
	f.Add(uint16(0), "delete,compact")
	f.Add(uint16(5), " 12 ")
	f.Add(uint16(40), "1@h:9093,2@[::1]:1")
	f.Add(uint16(100), "PLAINTEXT://[::1]:0")
	f.Add(uint16(7), "1.5e3d")
	f.Fuzz(func(t *testing.T, i uint16, value string) {
		d := defs[int(i)%len(defs)]
		if err := d.Check(value); err != nil {
			var cerr *Error
			if !errors.As(err, &cerr) || cerr.Key != d.Name {
				t.Fatalf("%s=%q: error %v does not name the key", d.Name, value, err)
			}
			return
		}
		c := Canonical(d.Type, value)
		if err := d.Check(c); err != nil {
			t.Fatalf("%s=%q passes but its canonical form %q fails: %v", d.Name, value, c, err)
		}
		if c2 := Canonical(d.Type, c); c2 != c {
			t.Fatalf("%s: Canonical not idempotent: %q -> %q -> %q", d.Name, value, c, c2)
		}
	})
}

// FuzzParseBroker: any properties file yields a Broker or an *Error naming a key; never a
// panic. Besides the file, the fuzzer sets two keys picked from the table so that it reaches
// the cross-key checks quickly.
func FuzzParseBroker(f *testing.F) {
	f.Add([]byte(kafkaServerProperties), uint16(0), "", uint16(0), "")
	f.Add([]byte("="), uint16(0), "", uint16(0), "") // the empty key is reported by name
	f.Add([]byte("process.roles=broker\ncontroller.quorum.voters=2@h:1\ncontroller.listener.names=C\nlisteners=PLAINTEXT://:1"), uint16(1), "x", uint16(2), "y")
	f.Add([]byte("listeners=A://:1,B://[::]:2\nlistener.security.protocol.map=A:SSL,B:SASL_SSL\ninter.broker.listener.name=b"), uint16(3), "1", uint16(4), "2")
	defs := BrokerDefs()
	f.Fuzz(func(t *testing.T, data []byte, k1 uint16, v1 string, k2 uint16, v2 string) {
		props, err := ParseProperties(data)
		if err != nil {
			return
		}
		props[defs[int(k1)%len(defs)].Name] = v1
		props[defs[int(k2)%len(defs)].Name] = v2
		b, err := ParseBroker(props)
		if err != nil {
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if _, set := props[cerr.Key]; !set {
				if _, known := BrokerDef(cerr.Key); !known {
					t.Fatalf("error %v names neither a key that was set nor a broker key", err)
				}
			}
			return
		}
		if len(b.Listeners) == 0 || len(b.LogDirs) == 0 || len(b.ProcessRoles) == 0 {
			t.Fatalf("accepted an unusable configuration: %+v", b)
		}
	})
}
