package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseProperties(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[string]string
		err  string
	}{
		{name: "empty", in: "", want: map[string]string{}},
		{name: "equals", in: "a=b", want: map[string]string{"a": "b"}},
		{name: "colon", in: "a:b", want: map[string]string{"a": "b"}},
		{name: "blank separator", in: "a b", want: map[string]string{"a": "b"}},
		{name: "blanks around separator", in: "  a \t =  b c  ", want: map[string]string{"a": "b c  "}},
		{name: "blank then colon", in: "a   :  b", want: map[string]string{"a": "b"}},
		{name: "only one separator eaten", in: "a==b", want: map[string]string{"a": "=b"}},
		{name: "blank then two separators", in: "a = =b", want: map[string]string{"a": "=b"}},
		{name: "key only", in: "a", want: map[string]string{"a": ""}},
		{name: "key and separator", in: "a=", want: map[string]string{"a": ""}},
		{name: "empty key", in: "=b", want: map[string]string{"": "b"}},
		{name: "comments", in: "# c\n! c\n  # indented\na=b # not a comment\n", want: map[string]string{"a": "b # not a comment"}},
		{name: "blank lines", in: "\n\n  \t\na=1\n\n", want: map[string]string{"a": "1"}},
		{name: "crlf and cr", in: "a=1\r\nb=2\rc=3", want: map[string]string{"a": "1", "b": "2", "c": "3"}},
		{name: "continuation", in: "a=one,\\\n    two,\\\n\tthree\nb=2", want: map[string]string{"a": "one,two,three", "b": "2"}},
		{name: "continuation crlf", in: "a=x\\\r\n  y", want: map[string]string{"a": "xy"}},
		{name: "continuation of key", in: "ke\\\n  y=v", want: map[string]string{"key": "v"}},
		{name: "continued line is not a comment", in: "a=x\\\n#y", want: map[string]string{"a": "x#y"}},
		{name: "comment does not continue", in: "# c \\\na=b", want: map[string]string{"a": "b"}},
		{name: "even backslashes do not continue", in: "a=x\\\\\nb=y", want: map[string]string{"a": `x\`, "b": "y"}},
		{name: "continuation at end of input", in: "a=x\\", want: map[string]string{"a": "x"}},
		{name: "continuation into blank line", in: "a=x\\\n\nb=y", want: map[string]string{"a": "x", "b": "y"}},
		{name: "comment after empty continuation", in: "\\\n  # c\na=b", want: map[string]string{"a": "b"}},
		{name: "empty continued line skipped", in: "\\\n\n\\\r\n\na=b", want: map[string]string{"a": "b"}},
		{name: "backslash newline at end is key empty", in: "a=b\n\\\n", want: map[string]string{"a": "b", "": ""}},
		{name: "lone backslash is key empty", in: "\\", want: map[string]string{"": ""}},
		{name: "comment with cr", in: "#c\ra=b\r\n#d\r\nc=d", want: map[string]string{"a": "b", "c": "d"}},
		{name: "escapes", in: `a=\t\n\r\f\\\=\:\#\!\ \q`, want: map[string]string{"a": "\t\n\r\f\\=:#! q"}},
		{name: "escaped separator in key", in: `a\=b\:c\ d=e`, want: map[string]string{"a=b:c d": "e"}},
		{name: "leading escaped blank kept", in: `a=\  x`, want: map[string]string{"a": "  x"}},
		{name: "unicode escape", in: `a=caf\u00e9 \u20AC`, want: map[string]string{"a": "café €"}},
		{name: "surrogate pair", in: `a=\ud83d\ude00`, want: map[string]string{"a": "😀"}},
		{name: "lone surrogate", in: `a=\ud83dx`, want: map[string]string{"a": "\uFFFDx"}},
		{name: "utf8 text", in: "a=héllo", want: map[string]string{"a": "héllo"}},
		{name: "latin1 text", in: "a=h\xe9llo", want: map[string]string{"a": "héllo"}},
		{name: "duplicate key last wins", in: "a=1\na=2", want: map[string]string{"a": "2"}},
		{name: "malformed unicode", in: "x=1\na=\\u12", err: "line 2: malformed \\uxxxx encoding"},
		{name: "malformed unicode digits", in: `a=\uzzzz`, err: "malformed"},
		{name: "malformed unicode after continuation", in: "a=\\\n\\u", err: "line 1:"},
		{name: "line numbers count every terminator", in: "#\r\n\n\ra=\\\r\n b\r\n\\uZZZZ", err: "line 6:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProperties([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// kafkaServerProperties is the shape of the server.properties Kafka 4.x ships for a combined
// KRaft node, with ports moved so it parses as a real sluice configuration.
const kafkaServerProperties = `
############################# Server Basics #############################

# The role of this server. Setting this puts us in KRaft mode
process.roles=broker,controller

# The node id associated with this instance's roles
node.id=1

# List of controller endpoints used connect to the controller cluster
controller.quorum.bootstrap.servers=localhost:9093

############################# Socket Server Settings #############################

listeners=PLAINTEXT://:9092,CONTROLLER://:9093

# Name of listener used for communication between brokers.
inter.broker.listener.name=PLAINTEXT

# Listener name, hostname and port the broker or the controller will advertise to clients.
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093

# A comma-separated list of the names of the listeners used by the controller.
controller.listener.names=CONTROLLER

# Maps listener names to security protocols, the default is for them to be the same.
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL

num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600

############################# Log Basics #############################

log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1

############################# Internal Topic Settings  #############################
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1

############################# Log Retention Policy #############################
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
`

func TestLoadKafkaServerProperties(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(kafkaServerProperties), 0o600); err != nil {
		t.Fatal(err)
	}
	props, err := LoadProperties(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(props) != 24 || props["listeners"] != "PLAINTEXT://:9092,CONTROLLER://:9093" {
		t.Fatalf("props = %q", props)
	}
	b, err := ParseBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	if b.NodeID != 1 || len(b.Listeners) != 2 || b.Listeners[1] != (Listener{"CONTROLLER", "", 9093, "PLAINTEXT"}) {
		t.Fatalf("broker = %+v", b)
	}
	if len(b.AdvertisedListeners) != 2 || b.AdvertisedListeners[0].Address() != "localhost:9092" {
		t.Fatalf("advertised = %+v", b.AdvertisedListeners)
	}
	if b.InterBrokerListenerName != "PLAINTEXT" || b.LogDirs[0] != "/tmp/kraft-combined-logs" || b.OffsetsTopicReplicationFactor != 1 {
		t.Fatalf("broker = %+v", b)
	}
	// The share.coordinator.state.topic.* keys of Kafka's sample file are honoured now.
	wantWarn := []string{"num.io.threads", "num.network.threads",
		"socket.receive.buffer.bytes", "socket.send.buffer.bytes"}
	var gotWarn []string
	for _, w := range b.Warnings {
		gotWarn = append(gotWarn, strings.Fields(w)[0])
	}
	sort.Strings(gotWarn)
	if fmt.Sprint(gotWarn) != fmt.Sprint(wantWarn) {
		t.Fatalf("warnings %q, want keys %q", b.Warnings, wantWarn)
	}
}

func TestLoadPropertiesErrors(t *testing.T) {
	if _, err := LoadProperties(filepath.Join(t.TempDir(), "missing.properties")); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
	path := filepath.Join(t.TempDir(), "bad.properties")
	if err := os.WriteFile(path, []byte("a=\\uXYZW\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadProperties(path); err == nil || !strings.Contains(err.Error(), path+": line 1") {
		t.Fatalf("err = %v", err)
	}
}

// formatProperties writes props so that ParseProperties reads them back unchanged: the
// inverse used by the fuzz target's round trip.
func formatProperties(props map[string]string) string {
	var b strings.Builder
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(escapeProperty(k, true))
		b.WriteByte('=')
		b.WriteString(escapeProperty(props[k], false))
		b.WriteByte('\n')
	}
	return b.String()
}

func escapeProperty(s string, key bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '\\' || r == '=' || r == ':' || r == '#' || r == '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == ' ' && (key || i == 0):
			b.WriteString(`\ `)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r > 0x7e:
			if r > 0xffff {
				r1, r2 := (r-0x10000)>>10+0xD800, (r-0x10000)&0x3ff+0xDC00
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FuzzParseProperties: parsing never panics, and whatever it returns survives a
// format-and-parse round trip.
func FuzzParseProperties(f *testing.F) {
	f.Add([]byte(kafkaServerProperties))
	f.Add([]byte("a=b\\\n  c\r\n# x\n!y\nk\\=1 : v\\u00e9\\"))
	f.Add([]byte("\\u\n\\\r\n\f\t=\\ud83d\\ude00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := ParseProperties(data)
		if err != nil {
			return
		}
		for k, v := range props {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				t.Fatalf("invalid UTF-8 in %q=%q", k, v)
			}
		}
		text := formatProperties(props)
		again, err := ParseProperties([]byte(text))
		if err != nil {
			t.Fatalf("reparse of %q: %v", text, err)
		}
		if !maps.Equal(props, again) {
			t.Fatalf("round trip changed %q into %q via %q", props, again, text)
		}
	})
}
