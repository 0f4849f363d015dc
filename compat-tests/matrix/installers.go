package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The clients below are installed by the matrix itself, from their registries, into the cache
// ($SLUICE_CACHE or ~/.cache/sluice), never into the repository. Each installer is idempotent:
// it records what it installed in a stamp file and does nothing when the stamp matches, so a
// version bump here reinstalls. scripts/install-test-deps.sh runs the ones `make test` needs
// through `go run ./compat-tests/matrix -install REGEXP`.

// pypiRequirements are the PyPI releases in the matrix's Python venv: confluent-kafka (its
// wheel bundles librdkafka), kafka-python 2.x and aiokafka, with the codec modules each needs.
var pypiRequirements = []string{
	"confluent-kafka==" + pypiConfluentKafka,
	"kafka-python[crc32c,lz4,snappy,zstd]==" + pypiKafkaPython,
	"aiokafka[lz4,snappy,zstd]==" + pypiAiokafka,
}

const (
	pypiConfluentKafka   = "2.16.1" // the newest on PyPI when this row was added (2026-12)
	pypiConfluentLibrdkf = "2.16.0" // the librdkafka its wheels bundle
	pypiKafkaPython      = "2.3.3"
	pypiAiokafka         = "0.14.0"
)

// stamped runs install unless dir/.installed holds want, then writes want there.
func stamped(dir, want string, install func() error) error {
	stamp := filepath.Join(dir, ".installed")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return nil
	}
	if err := install(); err != nil {
		return err
	}
	return os.WriteFile(stamp, []byte(want), 0o644)
}

// PythonVenv creates (once) a venv in the cache holding pypiRequirements and returns its
// interpreter. Debian's /usr/bin/python3 makes it, so the Debian rows' modules stay separate.
func (t *Tools) PythonVenv(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	dir := filepath.Join(t.cache, "pyvenv")
	python := filepath.Join(dir, "bin", "python")
	err := stamped(dir, strings.Join(pypiRequirements, "\n"), func() error {
		if _, err := os.Stat(python); err != nil {
			if out, err := exec.CommandContext(ctx, debianPython, "-m", "venv", dir).CombinedOutput(); err != nil {
				return fmt.Errorf("python3 -m venv %s: %v\n%s", dir, err, out)
			}
		}
		args := append([]string{"-m", "pip", "install", "--quiet", "--disable-pip-version-check"}, pypiRequirements...)
		if out, err := exec.CommandContext(ctx, python, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("pip install %v: %v\n%s", pypiRequirements, err, out)
		}
		return nil
	})
	return python, err
}

// venvScript is a Python client from the matrix's venv driven by clients/<script> with the
// conventional arguments.
func venvScript(id, name, family, script, quick string) *Client {
	return &Client{
		ID: id, Name: name, Family: family, Quick: quick,
		Prepare: func(ctx context.Context, t *Tools) error {
			_, err := t.PythonVenv(ctx)
			return err
		},
		Run: func(ctx context.Context, e *Env) error {
			python, err := e.Tools.PythonVenv(ctx)
			if err != nil {
				return err
			}
			if _, err := runProgram(ctx, e.Log, e.Dir, nil, "", python, append([]string{filepath.Join(e.Tools.scripts, script)}, e.Args()...)...); err != nil {
				return err
			}
			return e.verifyScenario(ctx)
		},
	}
}

// platformaticVersion is the @platformatic/kafka release the matrix installs from npm: the
// newest 1.x, the line that runs on Node 20 (Debian's and this machine's); 2.x needs Node 22
// (it calls Promise.withResolvers).
const platformaticVersion = "1.35.0"

// PlatformaticKafka installs (once) @platformatic/kafka with npm into the cache and returns the
// package's directory.
func (t *Tools) PlatformaticKafka(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	dir := filepath.Join(t.cache, "npm-platformatic")
	pkg := filepath.Join(dir, "node_modules", "@platformatic", "kafka")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	err := stamped(dir, platformaticVersion, func() error {
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", dir,
			"--cache", filepath.Join(t.cache, "npm-cache"), "@platformatic/kafka@"+platformaticVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm install @platformatic/kafka: %v\n%s", err, out)
		}
		return nil
	})
	return pkg, err
}

func runPlatformatic(ctx context.Context, e *Env) error {
	pkg, err := e.Tools.PlatformaticKafka(ctx)
	if err != nil {
		return err
	}
	if _, err := runProgram(ctx, e.Log, e.Dir, []string{"PLATFORMATIC_KAFKA=" + pkg}, "", "node", append([]string{filepath.Join(e.Tools.scripts, "platformatic.mjs")}, e.Args()...)...); err != nil {
		return err
	}
	return e.verifyScenario(ctx)
}

// ckgoVersion is the confluent-kafka-go release clients/ckgo/go.mod requires (and the
// librdkafka its module bundles).
const (
	ckgoVersion      = "v2.11.1"
	ckgoLibrdkafkaV  = "2.11.1"
	rustRdkafka      = "0.38.0"
	rustRdkafkaLibrd = "2.12.1"
)

// buildProgram runs a build command in one of clients/'s directories (once per matrix run; the
// tool's own caches make a rebuild of unchanged sources quick) and returns the program path.
func (t *Tools) buildProgram(ctx context.Context, key, srcDir, program string, env []string, name string, args ...string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.built == nil {
		t.mu.built = map[string]error{}
	}
	if err, done := t.mu.built[key]; done {
		return program, err
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = srcDir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, clipTail(string(out), 4000))
	}
	t.mu.built[key] = err
	return program, err
}

// clipTail keeps the last n bytes of s (a build's error is at its end).
func clipTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// CkgoProgram builds (once per run) clients/ckgo, a module of its own requiring
// confluent-kafka-go, with cgo into the cache, and returns the binary.
func (t *Tools) CkgoProgram(ctx context.Context) (string, error) {
	bin := filepath.Join(t.cache, "ckgo", "ckgo-compat")
	return t.buildProgram(ctx, "ckgo", filepath.Join(t.scripts, "ckgo"), bin, []string{"CGO_ENABLED=1", "GOWORK=off", "GOFLAGS=-mod=readonly"},
		"go", "build", "-o", bin, ".")
}

// RustProgram builds (once per run) clients/rust with cargo (the rdkafka crate from crates.io,
// its bundled librdkafka compiled by cmake) into the cache and returns the binary. librdkafka's
// cmake build needs libcurl's headers; Debian's libcurl4-openssl-dev is installed when missing.
func (t *Tools) RustProgram(ctx context.Context) (string, error) {
	if err := needDebianFile(ctx, "/usr/include/x86_64-linux-gnu/curl/curl.h", "libcurl4-openssl-dev"); err != nil {
		return "", err
	}
	target := filepath.Join(t.cache, "rust-target")
	return t.buildProgram(ctx, "rust", filepath.Join(t.scripts, "rust"), filepath.Join(target, "release", "sluice-compat-rdkafka"), nil,
		"cargo", "build", "--release", "--locked", "--quiet", "--target-dir", target)
}

// needDebianFile installs a Debian package with apt-get unless path exists.
func needDebianFile(ctx context.Context, path, pkg string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	sudo := []string{}
	if os.Geteuid() != 0 {
		sudo = []string{"sudo"}
	}
	for _, args := range [][]string{{"apt-get", "update", "-qq"}, {"apt-get", "install", "-y", "-qq", pkg}} {
		full := append(append([]string{}, sudo...), args...)
		cmd := exec.CommandContext(ctx, full[0], full[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(full, " "), err, clipTail(string(out), 2000))
		}
	}
	return nil
}

// programClient is a compiled client program taking the conventional arguments.
func programClient(id, name, family string, build func(*Tools, context.Context) (string, error)) *Client {
	return &Client{
		ID: id, Name: name, Family: family, PrepareTimeout: 30 * time.Minute,
		Prepare: func(ctx context.Context, t *Tools) error {
			_, err := build(t, ctx)
			return err
		},
		Run: func(ctx context.Context, e *Env) error {
			bin, err := build(e.Tools, ctx)
			if err != nil {
				return err
			}
			if _, err := runProgram(ctx, e.Log, e.Dir, nil, "", bin, e.Args()...); err != nil {
				return err
			}
			return e.verifyScenario(ctx)
		},
	}
}

// springBootVersion is the Spring Boot release clients/spring/pom.xml builds on (it brings
// spring-kafka 4.2.0 and kafka-clients 4.4.0).
const springBootVersion = "4.2.0"

// SpringJar builds (once per run) clients/spring with Maven (dependencies from Maven Central
// into ~/.m2, the build into the cache) and returns the Spring Boot jar.
func (t *Tools) SpringJar(ctx context.Context) (string, error) {
	dir := filepath.Join(t.cache, "spring")
	return t.buildProgram(ctx, "spring", filepath.Join(t.scripts, "spring"), filepath.Join(dir, "compat-spring-0.1.0.jar"), nil,
		"mvn", "-B", "-q", "-Dsluice.build="+dir, "package")
}

func runSpring(ctx context.Context, e *Env) error {
	jar, err := e.Tools.SpringJar(ctx)
	if err != nil {
		return err
	}
	args := append([]string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-jar", jar}, e.Args()...)
	if _, err := runProgram(ctx, e.Log, e.Dir, nil, "", "java", args...); err != nil {
		return err
	}
	return e.verifyScenario(ctx)
}
