package main

import (
	"bytes"
	"strings"
	"testing"

	"sluice/broker"
	"sluice/migrate"
)

// The broker skips the directory migrate renames Kafka's metadata log to; the two names are
// one name.
func TestMigrateBackupDirName(t *testing.T) {
	if broker.KafkaMetadataBackupDir != migrate.KafkaMetadataBackup {
		t.Fatalf("broker skips %q, migrate writes %q", broker.KafkaMetadataBackupDir, migrate.KafkaMetadataBackup)
	}
}

func TestMigrateUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "--from-kafka DIR is required"},
		{[]string{"--from-kafka", t.TempDir(), "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"--from-kafka", t.TempDir(), "--set", "process.roles=broker", "--set", "controller.quorum.voters=2@127.0.0.1:9093", "--set", "controller.listener.names=CONTROLLER"}, exitFailed, "single-node cluster"},
		{[]string{"--from-kafka", t.TempDir()}, exitFailed, "meta.properties"},
	} {
		var stdout, stderr bytes.Buffer
		if code := runMigrate(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("sluice migrate %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}
