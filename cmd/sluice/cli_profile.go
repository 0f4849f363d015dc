package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Profiles name clusters, so `sluice --profile prod topic list` needs no --brokers. The file
// is $SLUICE_PROFILES, else ~/.config/sluice/profiles, in INI style:
//
//	[prod]
//	brokers = 10.0.0.1:9092,10.0.0.2:9092
//	timeout = 30s
//
// What a command uses, first found: its --brokers/--timeout flags, the profile named by
// --profile or $SLUICE_PROFILE, $SLUICE_BROKERS, the defaults (127.0.0.1:9092, 15 s).

// profile is one named cluster of the profiles file.
type profile struct {
	brokers string
	timeout time.Duration
}

func profilesPath() string {
	if p := os.Getenv("SLUICE_PROFILES"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "sluice", "profiles")
}

// loadProfiles reads the profiles file; a missing file is no profiles.
func loadProfiles(path string) (map[string]profile, error) {
	out := map[string]profile{}
	if path == "" {
		return out, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	name, line := "", 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, ";"):
			continue
		case strings.HasPrefix(text, "[") && strings.HasSuffix(text, "]"):
			name = strings.TrimSpace(text[1 : len(text)-1])
			out[name] = profile{}
			continue
		}
		k, v, ok := strings.Cut(text, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s:%d: want [profile] then key = value lines", path, line)
		}
		p := out[name]
		switch k, v = strings.TrimSpace(k), strings.TrimSpace(v); k {
		case "brokers":
			p.brokers = v
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: timeout %q: %v", path, line, v, err)
			}
			p.timeout = d
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q (brokers, timeout)", path, line, k)
		}
		out[name] = p
	}
	return out, sc.Err()
}

// applyProfile fills what the command line left unset from the profile (--profile, else
// $SLUICE_PROFILE) and $SLUICE_BROKERS.
func (c *cli) applyProfile(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	name := c.profile
	if name == "" {
		name = os.Getenv("SLUICE_PROFILE")
	}
	if name != "" {
		path := profilesPath()
		profiles, err := loadProfiles(path)
		if err != nil {
			return err
		}
		p, ok := profiles[name]
		if !ok {
			return fmt.Errorf("no profile %q in %s", name, path)
		}
		if !set["brokers"] && p.brokers != "" {
			c.brokers, set["brokers"] = p.brokers, true
		}
		if !set["timeout"] && p.timeout > 0 {
			c.timeout = p.timeout
		}
	}
	if env := os.Getenv("SLUICE_BROKERS"); !set["brokers"] && env != "" {
		c.brokers = env
	}
	return nil
}
