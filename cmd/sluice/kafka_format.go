package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// kafkaBootstrapCheckpoint is the one file Kafka's `kafka-storage format` writes into
// __cluster_metadata-0: the bootstrap snapshot at offset 0, epoch 0 (its feature levels and
// any --add-scram credentials), for the first controller to replay.
const kafkaBootstrapCheckpoint = "00000000000000000000-0000000000.checkpoint"

// kafkaFormatted reports whether metadataLog is the metadata directory of a node that Kafka's
// `kafka-storage format` prepared and that never ran: it holds Kafka's bootstrap checkpoint
// and nothing else (no segment, no later snapshot, no sluice state). Such directories are
// formatted for a new cluster, as `sluice format` leaves them, so sluice starts a new cluster
// with the cluster.id of their meta.properties instead of refusing them as a cluster whose
// metadata was lost. The checkpoint stays where it is; sluice's metadata log is its own.
func kafkaFormatted(metadataLog string) (bool, error) {
	ents, err := os.ReadDir(metadataLog)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	found := false
	for _, e := range ents {
		if e.Name() != kafkaBootstrapCheckpoint || !e.Type().IsRegular() {
			return false, nil
		}
		found = true
	}
	if !found {
		return false, nil
	}
	info, err := os.Stat(filepath.Join(metadataLog, kafkaBootstrapCheckpoint))
	return err == nil && info.Size() > 0, err
}
