package broker

// The clean shutdown file (KIP-966), as Kafka's CleanShutdownFileHandler keeps it, so a log
// directory moved between Kafka and sluice means the same thing: a broker whose shutdown
// closed every partition log without an error (each log flushed and synced) and with none
// offline writes ".kafka_cleanshutdown" in its log directory, holding the JSON object
// {"version":0,"brokerEpoch":N} with the broker epoch it was registered at. At start, before
// it registers and before any log is opened, the node reads the file and deletes it
// (TakeCleanShutdownEpoch), so a crash at any later point, during log loading included, leaves
// no file behind; the epoch read (-1 without a readable file) is the registration's
// PreviousBrokerEpoch. The controller takes a broker whose previous epoch is not the one it
// last gave it out of every ISR and ELR (controller/membership.go): after a crash its log may
// have lost a tail it had acknowledged as a follower.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"sluice/logstore"
)

// CleanShutdownFileName is the clean shutdown file's name in a log directory (Kafka's
// CleanShutdownFileHandler.CLEAN_SHUTDOWN_FILE_NAME).
const CleanShutdownFileName = ".kafka_cleanshutdown"

// cleanShutdownFileMax bounds how much of the file is read: its content is one small JSON
// object; anything longer is not a clean shutdown file.
const cleanShutdownFileMax = 4096

// cleanShutdownContent is the file's JSON (Kafka's CleanShutdownFileHandler.Content, version
// 0). Unknown fields are ignored, as Kafka ignores them.
type cleanShutdownContent struct {
	Version     int    `json:"version"`
	BrokerEpoch *int64 `json:"brokerEpoch"`
}

// TakeCleanShutdownEpoch reads the clean shutdown file of log directory dir and deletes it.
// It returns the broker epoch the file holds, or -1 when there is none or it cannot be parsed
// (an unclean shutdown, as Kafka reads it). An error means the file could not be removed (or
// read for another reason than its absence): starting anyway could leave a stale file that a
// later crash would be mistaken for a clean shutdown by, so the caller must not start.
func TakeCleanShutdownEpoch(dir string) (int64, error) {
	fsys := logstore.OSFS{}
	path := filepath.Join(dir, CleanShutdownFileName)
	data, err := logstore.ReadFileLimit(fsys, path, cleanShutdownFileMax)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return -1, nil
	case err != nil && !errors.Is(err, logstore.ErrFileTooLarge):
		return -1, fmt.Errorf("reading the clean shutdown file: %w", err)
	}
	epoch := int64(-1)
	var c cleanShutdownContent
	if err == nil && json.Unmarshal(data, &c) == nil && c.BrokerEpoch != nil && *c.BrokerEpoch >= 0 {
		epoch = *c.BrokerEpoch
	}
	if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return -1, fmt.Errorf("removing the clean shutdown file: %w", err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return -1, fmt.Errorf("removing the clean shutdown file: %w", err)
	}
	return epoch, nil
}

// writeCleanShutdownFile writes the clean shutdown file of log directory dir for broker
// epoch, atomically (a synced temporary file renamed into place, the directory synced), so
// the file is either absent or whole.
func writeCleanShutdownFile(fsys logstore.FS, dir string, epoch int64) error {
	data, err := json.Marshal(cleanShutdownContent{Version: 0, BrokerEpoch: &epoch})
	if err != nil {
		return err
	}
	return logstore.WriteFileAtomic(fsys, dir, CleanShutdownFileName, data)
}
