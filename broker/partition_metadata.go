package broker

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"sluice/controller"
)

// partitionMetadataFile is Kafka's per-partition file naming the topic ID the directory belongs
// to, so that a directory left from a deleted topic is never taken for a new topic of the same
// name.
const partitionMetadataFile = "partition.metadata"

// maxPartitionMetadataBytes bounds how much of a partition.metadata file is read: the real
// file is about 45 bytes.
const maxPartitionMetadataBytes = 4096

// errNoPartitionMetadata means partition.metadata holds nothing but whitespace: it names no
// topic, so it neither claims nor disowns the directory (Kafka writes the file once, on
// creation; an empty one is a write a crash cut short).
var errNoPartitionMetadata = errors.New("partition.metadata is empty")

// encodePartitionMetadata is the file sluice writes, in Kafka's format.
func encodePartitionMetadata(id controller.TopicID) []byte {
	return []byte("version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(id[:]) + "\n")
}

// parsePartitionMetadata reads a partition.metadata file as Kafka's PartitionMetadataFile
// does — a "version: 0" line and a "topic_id: <base64 UUID>" line — tolerating what a hand
// edit or another writer may leave: surrounding whitespace, CRLF line endings, blank lines,
// padded base64 and extra keys. Anything else is an error, and the caller must not guess.
func parsePartitionMetadata(data []byte) (controller.TopicID, error) {
	var id controller.TopicID
	if len(bytes.TrimSpace(data)) == 0 {
		return id, errNoPartitionMetadata
	}
	var version, topicID string
	var haveVersion, haveID bool
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line) // also drops a CR
		if line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			return id, fmt.Errorf("malformed line %q", clip(line))
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch key {
		case "version":
			version, haveVersion = value, true
		case "topic_id":
			topicID, haveID = value, true
		}
	}
	if !haveVersion || version != "0" {
		return id, fmt.Errorf("unsupported or missing version %q (want 0)", clip(version))
	}
	if !haveID {
		return id, errors.New("no topic_id line")
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(topicID, "="))
	if err != nil {
		// Kafka writes URL-safe base64; accept the standard alphabet too.
		raw, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(topicID, "="))
	}
	if err != nil || len(raw) != len(id) {
		return id, fmt.Errorf("topic_id %q is not a base64 UUID", clip(topicID))
	}
	copy(id[:], raw)
	return id, nil
}

// clip shortens untrusted text quoted in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
