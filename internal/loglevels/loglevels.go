// Package loglevels gives every log component of a sluice process its own level that can
// change at run time, as Kafka's broker loggers (the BROKER_LOGGER config resource) change
// log4j levels: `kafka-configs --entity-type broker-loggers --entity-name <id> --alter
// --add-config broker=DEBUG`.
//
// A component is the value of the "component" attribute a logger is derived with
// (logger.With("component", "broker")); the root logger is everything else. A component
// without a level of its own follows the root's. Levels use Kafka's names (TRACE, DEBUG,
// INFO, WARN, ERROR, FATAL); TRACE and FATAL are slog levels below DEBUG and above ERROR.
// Levels are not persisted: a restart starts from the process's --log-level, as a Kafka
// broker starts from its log4j configuration.
package loglevels

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
)

// RootLogger is the name of the root logger, as Kafka's Log4jController calls it.
const RootLogger = "root"

// ComponentKey is the attribute that names a logger's component.
const ComponentKey = "component"

// The slog levels of Kafka's TRACE and FATAL.
const (
	LevelTrace = slog.LevelDebug - 4
	LevelFatal = slog.LevelError + 4
)

// ValidLevels are Kafka's valid log levels (LogLevelConfig.VALID_LOG_LEVELS), sorted as
// Kafka lists them in its refusal.
var ValidLevels = []string{"DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN"}

// ParseLevel parses one of ValidLevels (case-sensitive, as Kafka checks them).
func ParseLevel(s string) (slog.Level, bool) {
	switch s {
	case "TRACE":
		return LevelTrace, true
	case "DEBUG":
		return slog.LevelDebug, true
	case "INFO":
		return slog.LevelInfo, true
	case "WARN":
		return slog.LevelWarn, true
	case "ERROR":
		return slog.LevelError, true
	case "FATAL":
		return LevelFatal, true
	}
	return 0, false
}

// LevelName is the Kafka name of l: the highest named level at or below it.
func LevelName(l slog.Level) string {
	switch {
	case l >= LevelFatal:
		return "FATAL"
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARN"
	case l >= slog.LevelInfo:
		return "INFO"
	case l >= slog.LevelDebug:
		return "DEBUG"
	}
	return "TRACE"
}

// Levels holds the root level and the components' levels. Safe for concurrent use; the hot
// path (Handler.Enabled) reads two atomics and takes no lock.
type Levels struct {
	root slog.LevelVar
	mu   struct {
		sync.Mutex
		// components by name; an entry is never removed, so handlers may keep a pointer.
		components map[string]*component
	}
}

// component is one component's level. Invariant: own is meaningful only while set is true.
type component struct {
	set atomic.Bool
	own atomic.Int64
}

// New returns Levels with the root at root and no component levels.
func New(root slog.Level) *Levels {
	l := &Levels{}
	l.root.Set(root)
	l.mu.components = map[string]*component{}
	return l
}

// componentFor returns name's entry, making it on first use (a component exists once a
// logger was derived for it, as a log4j logger exists once it was asked for).
func (l *Levels) componentFor(name string) *component {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.mu.components[name]
	if c == nil {
		c = &component{}
		l.mu.components[name] = c
	}
	return c
}

func (l *Levels) effective(c *component) slog.Level {
	if c != nil && c.set.Load() {
		return slog.Level(c.own.Load())
	}
	return l.root.Level()
}

// Exists reports whether name is the root logger or a component a logger was derived for.
func (l *Levels) Exists(name string) bool {
	if name == RootLogger {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.components[name] != nil
}

// Set sets name's level (the root's, for RootLogger). It reports false for a component that
// does not exist.
func (l *Levels) Set(name string, level slog.Level) bool {
	if name == RootLogger {
		l.root.Set(level)
		return true
	}
	if !l.Exists(name) {
		return false
	}
	c := l.componentFor(name)
	c.own.Store(int64(level))
	c.set.Store(true)
	return true
}

// Unset makes name follow the root's level again. It reports false for the root and for a
// component that does not exist.
func (l *Levels) Unset(name string) bool {
	if name == RootLogger || !l.Exists(name) {
		return false
	}
	l.componentFor(name).set.Store(false)
	return true
}

// Logger is one logger and its effective level.
type Logger struct {
	Name  string
	Level slog.Level
}

// Loggers lists the root logger, then every component by name, each with its effective
// level.
func (l *Levels) Loggers() []Logger {
	l.mu.Lock()
	names := make([]string, 0, len(l.mu.components))
	comps := make(map[string]*component, len(l.mu.components))
	for n, c := range l.mu.components {
		names = append(names, n)
		comps[n] = c
	}
	l.mu.Unlock()
	slices.Sort(names)
	out := []Logger{{Name: RootLogger, Level: l.root.Level()}}
	for _, n := range names {
		out = append(out, Logger{Name: n, Level: l.effective(comps[n])})
	}
	return out
}

// Handler wraps base so that each record is kept only at or above its component's level.
// base should let every level through (its own level at LevelTrace or lower): the filtering
// is done here.
func (l *Levels) Handler(base slog.Handler) slog.Handler {
	return &handler{base: base, levels: l}
}

type handler struct {
	base   slog.Handler
	levels *Levels
	comp   *component // nil: the root logger
}

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.levels.effective(h.comp) && h.base.Enabled(ctx, level)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error { return h.base.Handle(ctx, r) }

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	next := &handler{base: h.base.WithAttrs(attrs), levels: h.levels, comp: h.comp}
	for _, a := range attrs {
		if a.Key == ComponentKey && a.Value.Kind() == slog.KindString {
			next.comp = h.levels.componentFor(a.Value.String())
		}
	}
	return next
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{base: h.base.WithGroup(name), levels: h.levels, comp: h.comp}
}
