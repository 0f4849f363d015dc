package loglevels

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

// TestComponentLevelsChangeAtRunTime: a component follows the root until it has a level of
// its own, keeps it when the root changes, and follows the root again once unset; loggers
// derived before the change see it.
func TestComponentLevelsChangeAtRunTime(t *testing.T) {
	var out bytes.Buffer
	levels := New(slog.LevelInfo)
	root := slog.New(levels.Handler(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: LevelTrace})))
	broker := root.With("component", "broker")
	wire := root.With("component", "wire", "listener", "PLAINTEXT")
	lines := func() string { s := out.String(); out.Reset(); return s }

	broker.Debug("b1")
	wire.Debug("w1")
	if got := lines(); got != "" {
		t.Fatalf("debug lines at INFO: %q", got)
	}
	if !levels.Set("broker", slog.LevelDebug) {
		t.Fatal("broker does not exist")
	}
	broker.Debug("b2")
	wire.Debug("w2")
	if got := lines(); !strings.Contains(got, "msg=b2") || strings.Contains(got, "w2") {
		t.Fatalf("after broker=DEBUG: %q", got)
	}
	levels.Set(RootLogger, slog.LevelError)
	broker.Debug("b3")
	wire.Info("w3")
	if got := lines(); !strings.Contains(got, "msg=b3") || strings.Contains(got, "w3") {
		t.Fatalf("after root=ERROR: %q", got)
	}
	levels.Unset("broker")
	broker.Warn("b4")
	if got := lines(); got != "" {
		t.Fatalf("unset broker follows root ERROR, logged %q", got)
	}
	want := []Logger{{RootLogger, slog.LevelError}, {"broker", slog.LevelError}, {"wire", slog.LevelError}}
	if got := levels.Loggers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("loggers %v, want %v", got, want)
	}
	if levels.Set("nosuch", slog.LevelDebug) || levels.Unset(RootLogger) {
		t.Fatal("set an unknown component or unset the root")
	}
}

func TestLevelNames(t *testing.T) {
	for _, name := range ValidLevels {
		l, ok := ParseLevel(name)
		if !ok || LevelName(l) != name {
			t.Errorf("%s: %v %v -> %s", name, l, ok, LevelName(l))
		}
	}
	if _, ok := ParseLevel("debug"); ok {
		t.Error("lower case accepted; Kafka's check is case-sensitive")
	}
}
