package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Tools locates and prepares the external clients: Kafka's jars (fetched into a cache outside
// the repository), the Java programs under clients/ (compiled at run time), kafkajs (installed
// with npm into the cache), and the interpreters.
type Tools struct {
	root    string // module root
	scripts string // compat-tests/matrix/clients
	cache   string // $SLUICE_CACHE or ~/.cache/sluice
	scratch string // temporary dir removed by Close

	mu struct {
		sync.Mutex
		kafkaLib   string           // set once fetched
		classes    string           // compiled Java programs; set once compiled
		built      map[string]error // buildProgram's results by key, once per run
		seqConnect int              // numbers connect-standalone's property files
		connectLib string           // Kafka Connect's jars; set once fetched
	}
}

// NewTools prepares the scratch directory.
func NewTools(root string) (*Tools, error) {
	cache := os.Getenv("SLUICE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, err
		}
		cache = filepath.Join(home, ".cache", "sluice")
	}
	scratch, err := os.MkdirTemp("", "sluice-matrix-")
	if err != nil {
		return nil, err
	}
	return &Tools{root: root, scripts: filepath.Join(root, "compat-tests", "matrix", "clients"), cache: cache, scratch: scratch}, nil
}

// Close removes scratch files.
func (t *Tools) Close() { os.RemoveAll(t.scratch) }

// KafkaLib fetches (once) Apache Kafka's jars with scripts/fetch-kafka.sh and returns the dir.
func (t *Tools) KafkaLib(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.kafkaLib != "" {
		return t.mu.kafkaLib, nil
	}
	cmd := exec.CommandContext(ctx, filepath.Join(t.root, "scripts", "fetch-kafka.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/fetch-kafka.sh: %w", err)
	}
	t.mu.kafkaLib = strings.TrimSpace(string(out))
	return t.mu.kafkaLib, nil
}

// JavaClasses compiles (once) the Java programs under clients/ against Kafka's jars and
// returns the class directory.
func (t *Tools) JavaClasses(ctx context.Context) (string, error) {
	lib, err := t.KafkaLib(ctx)
	if err != nil {
		return "", err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.classes != "" {
		return t.mu.classes, nil
	}
	dir := filepath.Join(t.scratch, "classes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	srcs, _ := filepath.Glob(filepath.Join(t.scripts, "*.java"))
	args := append([]string{"-nowarn", "-d", dir, "-cp", filepath.Join(lib, "*")}, srcs...)
	if out, err := exec.CommandContext(ctx, "javac", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac: %v\n%s", err, out)
	}
	// Quiet client logging: warnings only, to stderr (reload4j is the slf4j binding).
	props := "log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n" +
		"log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n" +
		"log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
	if err := os.WriteFile(filepath.Join(dir, "log4j.properties"), []byte(props), 0o644); err != nil {
		return "", err
	}
	t.mu.classes = dir
	return dir, nil
}

// Java runs a main class with Kafka's jars and the compiled programs on the class path.
func (t *Tools) Java(ctx context.Context, e *Env, stdin, class string, args ...string) (string, error) {
	lib, err := t.KafkaLib(ctx)
	if err != nil {
		return "", err
	}
	classes, err := t.JavaClasses(ctx)
	if err != nil {
		return "", err
	}
	jvm := []string{
		"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", "-Xmx256m",
		"-Dlog4j.configuration=file:" + filepath.Join(classes, "log4j.properties"),
		"-cp", classes + string(os.PathListSeparator) + filepath.Join(lib, "*"), class,
	}
	env := []string{fmt.Sprintf("MATRIX_NODES=%d", max(e.Nodes, 1))} // Compat.java checks the cluster size
	return runProgram(ctx, e.Log, e.Dir, env, stdin, "java", append(jvm, args...)...)
}

// NodeModules installs (once) kafkajs with npm into the cache and returns NODE_PATH.
func (t *Tools) NodeModules(ctx context.Context) (string, error) {
	dir := filepath.Join(t.cache, "npm")
	mods := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(mods, "kafkajs", "package.json")); err == nil {
		return mods, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", dir,
		"--cache", filepath.Join(t.cache, "npm-cache"), "kafkajs@"+kafkajsVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install kafkajs: %v\n%s", err, out)
	}
	return mods, nil
}

// kafkajsVersion is the kafkajs release the matrix installs.
const kafkajsVersion = "2.2.4"

// debianPython is the interpreter Debian's python3-kafka and python3-confluent-kafka install
// into; a version manager's python3 earlier on PATH would not see them.
const debianPython = "/usr/bin/python3"
