package main

// `sluice format`: Kafka's `kafka-storage format` for a sluice node.
//
//	sluice format [--config FILE] [--set key=value ...] [--cluster-id ID]
//	              [--standalone | --initial-controllers ID@HOST:PORT:DIRECTORY_ID,... | --no-initial-controllers]
//	              [--ignore-formatted] [--add-scram 'SCRAM-SHA-512=[name=admin,password=secret]' ...]
//
// It writes meta.properties (cluster.id, node.id, directory.id) into the first log directory
// and the metadata directory (metadata.log.dir), and on a controller with --standalone or
// --initial-controllers the metadata log's first snapshot (controller.BootstrapVoters): the
// cluster ID and the initial voter set of a dynamic quorum (KIP-853). --standalone makes this
// node the only initial voter, at its controller listener; more controllers join later with
// AddRaftVoter (`kafka-metadata-quorum add-controller`). --initial-controllers lists every
// initial voter with the directory ID of its metadata directory; this node's entry gives its
// own directory.id. A controller formatted with neither (or --no-initial-controllers) joins
// an existing quorum through controller.quorum.bootstrap.servers. Without --cluster-id a
// random one is made (kafka-storage random-uuid). The cluster ID is printed.
//
// --add-scram (repeatable, Kafka's syntax; iterations=N is optional, 4096 by default) salts a
// SCRAM credential so that it exists before any broker authenticates, e.g. brokers that reach
// each other over SASL_SSL with SCRAM: the UserScramCredentialRecords go into
// bootstrap.records in the metadata directory (base64 of controller.EncodeRecord, one a line),
// which the first active controller of a new metadata log writes with the cluster ID
// (controller.Config.BootstrapRecords), as Kafka's bootstrap.checkpoint; with --standalone or
// --initial-controllers they are in the bootstrap snapshot too.
//
// Formatting is optional: a node started on empty directories with controller.quorum.voters
// (or alone) makes its cluster as before. A formatted node refuses to start on directories of
// another cluster (broker.ClaimLogDir).

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sluice/broker"
	"sluice/controller"
	"sluice/internal/config"
	"sluice/logstore"
	"sluice/wire"
)

func runFormat(args []string, stdout, stderr io.Writer) int {
	if err := format(args, stdout); err != nil {
		fmt.Fprintln(stderr, "sluice format:", err)
		if errors.Is(err, errFormatUsage) {
			return exitUsage
		}
		return exitFailed
	}
	return 0
}

var errFormatUsage = errors.New("usage")

// loadNodeConfig is the node's configuration as `sluice`, `sluice format` and `sluice migrate`
// take it: the server.properties at configPath (none when empty), then the --set overrides.
func loadNodeConfig(configPath string, overrides setFlags) (*config.Broker, error) {
	props := map[string]string{}
	if configPath != "" {
		var err error
		if props, err = config.LoadProperties(configPath); err != nil {
			return nil, err
		}
	}
	for k, v := range overrides {
		props[k] = v
	}
	return config.ParseBroker(props)
}

func format(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sluice format", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", "", "Kafka-style server.properties file")
	overrides := setFlags{}
	fs.Var(overrides, "set", "key=value config override (repeatable)")
	clusterID := fs.String("cluster-id", "", "the cluster ID (default: a new random one)")
	standalone := fs.Bool("standalone", false, "this node is the only initial voter of a dynamic quorum")
	initial := fs.String("initial-controllers", "", "the initial voters: ID@HOST:PORT:DIRECTORY_ID,...")
	noInitial := fs.Bool("no-initial-controllers", false, "this controller joins an existing quorum (the default)")
	ignoreFormatted := fs.Bool("ignore-formatted", false, "leave directories already formatted for this cluster and node as they are")
	var addScram []string
	fs.Func("add-scram", "a SCRAM credential to create, as MECHANISM=[name=NAME,password=PASSWORD] (repeatable)", func(v string) error {
		addScram = append(addScram, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errFormatUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errFormatUsage, fs.Arg(0))
	}
	modes := 0
	for _, set := range []bool{*standalone, *initial != "", *noInitial} {
		if set {
			modes++
		}
	}
	if modes > 1 {
		return fmt.Errorf("%w: --standalone, --initial-controllers and --no-initial-controllers exclude each other", errFormatUsage)
	}
	cfg, err := loadNodeConfig(*configPath, overrides)
	if err != nil {
		return err
	}
	if *clusterID == "" {
		*clusterID = broker.NewDirectoryID() // the same form as Kafka's random-uuid
	}
	if len(*clusterID) > 255 {
		return errors.New("--cluster-id: longer than 255 bytes")
	}
	if (*standalone || *initial != "") && !cfg.HasRole("controller") {
		return fmt.Errorf("%w: --standalone and --initial-controllers format a controller; process.roles is %v", errFormatUsage, cfg.ProcessRoles)
	}
	if (*standalone || *initial != "") && len(cfg.QuorumVoters) > 0 {
		return errors.New("--standalone and --initial-controllers bootstrap a dynamic quorum; this configuration has a static one (controller.quorum.voters)")
	}

	var bootstrap []controller.Record
	for _, a := range addScram {
		r, err := parseAddScram(a)
		if err != nil {
			return fmt.Errorf("%w: --add-scram: %v", errFormatUsage, err)
		}
		bootstrap = append(bootstrap, r)
	}

	metadataDirID := broker.NewDirectoryID()
	var voters []controller.VoterEndpoint
	switch {
	case *standalone:
		ep, err := ownControllerEndpoint(cfg)
		if err != nil {
			return err
		}
		ep.DirectoryID, _ = decodeDirectoryID(metadataDirID)
		voters = []controller.VoterEndpoint{ep}
	case *initial != "":
		if voters, err = parseInitialControllers(*initial); err != nil {
			return fmt.Errorf("%w: --initial-controllers: %v", errFormatUsage, err)
		}
		i := slices.IndexFunc(voters, func(v controller.VoterEndpoint) bool { return v.NodeID == cfg.NodeID })
		if i < 0 {
			return fmt.Errorf("--initial-controllers does not list this node (node.id %d)", cfg.NodeID)
		}
		metadataDirID = base64.RawURLEncoding.EncodeToString(voters[i].DirectoryID[:])
		if len(cfg.ControllerListeners) > 0 {
			for j := range voters {
				voters[j].Listener = cfg.ControllerListeners[0]
			}
		}
	}

	metadataDir := cfg.MetadataLogDir
	if voters != nil {
		if err := controller.BootstrapVoters(filepath.Join(metadataDir, "__cluster_metadata-0"), *clusterID, voters, bootstrap...); err != nil {
			if !*ignoreFormatted {
				return err
			}
		}
	}
	if err := broker.FormatLogDir(metadataDir, broker.MetaProperties{ClusterID: *clusterID, NodeID: cfg.NodeID, DirectoryID: metadataDirID}, *ignoreFormatted); err != nil {
		return err
	}
	if len(bootstrap) > 0 {
		if err := writeBootstrapRecords(metadataDir, bootstrap); err != nil {
			return err
		}
	}
	// Every log directory gets its own directory.id, as kafka-storage format writes them.
	for _, logDir := range cfg.LogDirs {
		if filepath.Clean(logDir) == filepath.Clean(metadataDir) {
			continue
		}
		if err := broker.FormatLogDir(logDir, broker.MetaProperties{ClusterID: *clusterID, NodeID: cfg.NodeID, DirectoryID: broker.NewDirectoryID()}, *ignoreFormatted); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "Formatted %s with cluster.id %s", metadataDir, *clusterID)
	if voters != nil {
		fmt.Fprintf(stdout, " and %d initial voter(s)", len(voters))
	}
	if len(bootstrap) > 0 {
		fmt.Fprintf(stdout, " and %d SCRAM credential(s)", len(bootstrap))
	}
	fmt.Fprintln(stdout)
	return nil
}

// ownControllerEndpoint is this node's first controller listener, as advertised.
func ownControllerEndpoint(cfg *config.Broker) (controller.VoterEndpoint, error) {
	if len(cfg.ControllerListeners) == 0 {
		return controller.VoterEndpoint{}, errors.New("--standalone: controller.listener.names is not set")
	}
	name := cfg.ControllerListeners[0]
	for _, ls := range [][]config.Listener{cfg.AdvertisedListeners, cfg.Listeners} {
		for _, l := range ls {
			if l.Name == name && l.Host != "" && l.Host != "0.0.0.0" && l.Host != "::" && l.Port > 0 {
				return controller.VoterEndpoint{NodeID: cfg.NodeID, Listener: name, Host: l.Host, Port: l.Port}, nil
			}
		}
	}
	return controller.VoterEndpoint{}, fmt.Errorf("--standalone: the controller listener %s has no routable host and port in listeners", name)
}

// parseInitialControllers parses Kafka's --initial-controllers: ID@HOST:PORT:DIRECTORY_ID,...
func parseInitialControllers(s string) ([]controller.VoterEndpoint, error) {
	var out []controller.VoterEndpoint
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		at := strings.IndexByte(item, '@')
		last := strings.LastIndexByte(item, ':')
		if at <= 0 || last < at {
			return nil, fmt.Errorf("%q is not ID@HOST:PORT:DIRECTORY_ID", item)
		}
		id, err := strconv.ParseInt(item[:at], 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%q: bad node ID", item)
		}
		host, port, err := net.SplitHostPort(item[at+1 : last])
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil || p == 0 {
			return nil, fmt.Errorf("%q: bad port", item)
		}
		dir, err := decodeDirectoryID(item[last+1:])
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		if slices.ContainsFunc(out, func(v controller.VoterEndpoint) bool { return v.NodeID == int32(id) }) {
			return nil, fmt.Errorf("node %d is listed twice", id)
		}
		out = append(out, controller.VoterEndpoint{NodeID: int32(id), DirectoryID: dir, Listener: "CONTROLLER", Host: host, Port: int32(p)})
	}
	return out, nil
}

// decodeDirectoryID parses a Kafka Uuid (base64url of 16 bytes, no padding).
func decodeDirectoryID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("directory ID %q is not a Kafka Uuid (22 base64url characters)", s)
	}
	copy(id[:], b)
	return id, nil
}

// bootstrapRecordsFile holds, in the metadata directory, the records `sluice format` asks the
// first active controller of a new metadata log to write.
const bootstrapRecordsFile = "bootstrap.records"

// maxBootstrapRecordsBytes bounds what readBootstrapRecords reads. The records go into the
// first metadata entry with the cluster ID, so with their framing they must stay below the
// controller's entry bound (8 MiB); base64 makes 4 bytes of 3. `sluice migrate` writes the
// most: a whole Kafka cluster's topics, partitions and configs.
const maxBootstrapRecordsBytes = 7 << 20

func writeBootstrapRecords(dir string, recs []controller.Record) error {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(base64.StdEncoding.EncodeToString(controller.EncodeRecord(r)))
		b.WriteByte('\n')
	}
	return logstore.WriteFileAtomic(logstore.OSFS{}, dir, bootstrapRecordsFile, []byte(b.String()))
}

// readBootstrapRecords reads the records `sluice format` left in dir; found says whether the
// file is there (a node formatted for a new cluster and not yet part of it).
func readBootstrapRecords(dir string) (recs []controller.Record, found bool, err error) {
	path := filepath.Join(dir, bootstrapRecordsFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBootstrapRecordsBytes+1))
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxBootstrapRecordsBytes {
		return nil, true, fmt.Errorf("%s: larger than %d bytes", path, maxBootstrapRecordsBytes)
	}
	var out []controller.Record
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			return nil, true, fmt.Errorf("%s: line %d: %v", path, i+1, err)
		}
		r, err := controller.DecodeRecord(raw)
		if err != nil {
			return nil, true, fmt.Errorf("%s: line %d: %v", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, true, nil
}

// bootstrapDone removes bootstrap.records once this node's metadata log has a cluster ID: the
// first leader wrote it (with the records), and from now on a missing metadata log is a lost
// one again, which CheckLogDir refuses.
func bootstrapDone(dir string, logger *slog.Logger) {
	path := filepath.Join(dir, bootstrapRecordsFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		logger.Warn("could not remove the formatted bootstrap records; remove the file by hand", "path", path, "err", err)
	}
}

// parseAddScram parses Kafka's --add-scram value, MECHANISM=[name=NAME,password=PASSWORD] with
// an optional iterations=N (values may be double-quoted), into the credential's record. The
// password is never repeated in an error.
func parseAddScram(v string) (*controller.UserScramCredentialRecord, error) {
	mech, rest, ok := strings.Cut(v, "=")
	mech = strings.ToUpper(strings.TrimSpace(mech))
	if !ok || !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return nil, errors.New("want MECHANISM=[name=NAME,password=PASSWORD]")
	}
	m := controller.ScramMechanismByName(mech)
	if m == 0 {
		return nil, fmt.Errorf("mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	fields := map[string]string{}
	body := rest[1 : len(rest)-1]
	for len(body) > 0 {
		key, after, ok := strings.Cut(body, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, errors.New("want key=value pairs separated by commas")
		}
		var val string
		if strings.HasPrefix(after, "\"") {
			end := strings.IndexByte(after[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("%s: unterminated quote", key)
			}
			val, after = after[1:1+end], after[2+end:]
			if after != "" && !strings.HasPrefix(after, ",") {
				return nil, fmt.Errorf("%s: a comma must follow the closing quote", key)
			}
		} else {
			val, after = after, ""
			if i := strings.IndexByte(val, ','); i >= 0 {
				val, after = val[:i], val[i:]
			}
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("%s given twice", key)
		}
		fields[key] = val
		body = strings.TrimPrefix(after, ",")
	}
	for k := range fields {
		switch k {
		case "name", "password", "iterations":
		case "salt", "saltedpassword":
			return nil, fmt.Errorf("%s is not supported; give password=... and sluice salts it", k)
		default:
			return nil, fmt.Errorf("unknown key %q (want name, password, iterations)", k)
		}
	}
	if fields["name"] == "" || fields["password"] == "" {
		return nil, errors.New("name and password must be given")
	}
	iterations := wire.ScramMinIterations
	if it, ok := fields["iterations"]; ok {
		n, err := strconv.Atoi(it)
		if err != nil || n < wire.ScramMinIterations || n > 16384 {
			return nil, fmt.Errorf("iterations %q: want %d to 16384, as Kafka", it, wire.ScramMinIterations)
		}
		iterations = n
	}
	c, err := wire.NewScramCredential(mech, fields["password"], iterations)
	if err != nil {
		return nil, err
	}
	return &controller.UserScramCredentialRecord{Name: fields["name"], Mechanism: m, Salt: c.Salt,
		StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int32(c.Iterations)}, nil
}
