package testcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

var build struct {
	once sync.Once
	dir  string // temporary directory holding a built binary; "" when SLUICE_BIN was used
	path string
	err  error
}

// ModuleRoot is the directory holding sluice's go.mod, found relative to this source file.
func ModuleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("runtime.Caller failed")
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("module root not found above %s: %w", file, err)
	}
	return root, nil
}

// Binary returns the path of the sluice binary: $SLUICE_BIN when set, else cmd/sluice built
// once per process into a temporary directory.
func Binary() (string, error) {
	build.once.Do(func() {
		if prebuilt := os.Getenv("SLUICE_BIN"); prebuilt != "" {
			build.path, build.err = filepath.Abs(prebuilt)
			return
		}
		root, err := ModuleRoot()
		if err != nil {
			build.err = err
			return
		}
		build.dir, err = os.MkdirTemp("", "sluice-bin-")
		if err != nil {
			build.err = err
			return
		}
		build.path = filepath.Join(build.dir, "sluice")
		cmd := exec.Command("go", "build", "-o", build.path, "./cmd/sluice")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/sluice: %v\n%s", err, out)
		}
	})
	return build.path, build.err
}

// RemoveBuilt removes a binary Binary built (not one named by SLUICE_BIN).
func RemoveBuilt() {
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
}
