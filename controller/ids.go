package controller

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// String renders the ID as Kafka renders a Uuid: URL-safe base64 without padding (22 chars).
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// IsZero reports whether id is the zero UUID, which Kafka reserves to mean "no topic ID".
func (id TopicID) IsZero() bool { return id == TopicID{} }

// MarshalText encodes the ID as String does.
func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText decodes the String form.
func (id *TopicID) UnmarshalText(b []byte) error {
	parsed, err := ParseTopicID(string(b))
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}

// ParseTopicID parses the 22-character base64 form of a topic ID.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	if base64.RawURLEncoding.DecodedLen(len(s)) != len(id) {
		return id, fmt.Errorf("controller: topic ID %q: not 22 base64 characters", s)
	}
	n, err := base64.RawURLEncoding.Decode(id[:], []byte(s))
	if err != nil || n != len(id) {
		return TopicID{}, fmt.Errorf("controller: topic ID %q: %v", s, err)
	}
	return id, nil
}

// randomUUID returns a random version-4 UUID that is neither the zero UUID nor Kafka's
// reserved metadata topic ID (0...01), as Kafka's Uuid.randomUuid guarantees.
func randomUUID() [16]byte {
	for {
		var u [16]byte
		if _, err := rand.Read(u[:]); err != nil {
			panic(fmt.Sprintf("controller: crypto/rand: %v", err))
		}
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
		if u == ([16]byte{}) || u == ([16]byte{15: 1}) {
			continue
		}
		// Kafka also avoids IDs whose string form starts with '-', as they confuse command
		// line tools.
		if base64.RawURLEncoding.EncodeToString(u[:])[0] == '-' {
			continue
		}
		return u
	}
}

// newTopicID returns a fresh random topic ID.
func newTopicID() TopicID { return TopicID(randomUUID()) }

// newClusterID returns a Kafka-style cluster ID: the 22-character base64 form of a random UUID.
func newClusterID() string {
	u := randomUUID()
	return base64.RawURLEncoding.EncodeToString(u[:])
}
