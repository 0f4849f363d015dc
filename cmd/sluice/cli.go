package main

// The admin subcommands (sluice topic|produce|consume|group|cluster ...) are Kafka clients
// built on franz-go's kgo and kadm: they talk to sluice or to any Kafka-compatible broker.
// `sluice` with no subcommand (or with only flags) is the broker, as before.
//
// Output is a human table by default and JSON with -o json. Exit codes: 0 success, 1 the
// operation failed (the message says what to do), 2 the command line was wrong.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Exit codes of the subcommands.
const (
	exitFailed = 1
	exitUsage  = 2
)

// usageError is a wrong command line: exit status 2 and the usage printed.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// subcommands maps each subcommand to its runner.
var subcommands = map[string]func(c *cli, args []string) error{
	"topic":      runTopic,
	"produce":    runProduce,
	"consume":    runConsume,
	"group":      runGroup,
	"cluster":    runCluster,
	"quorum":     runQuorum,
	"acl":        runACL,
	"user":       runUser,
	"completion": runCompletion,
}

const cliUsage = `Usage:
  sluice [--config FILE] [--set key=value ...] [--http-addr ADDR]   run a broker (see sluice --help)
  sluice topic create NAME [-p PARTITIONS] [-r REPLICAS] [-c key=value ...]
  sluice topic list
  sluice topic describe NAME
  sluice topic delete NAME...
  sluice topic alter-config NAME [-c key=value ...] [--delete key ...]
  sluice topic add-partitions NAME -p TOTAL
  sluice produce TOPIC [-k SEPARATOR] [-p PARTITION]     one record per line of stdin
  sluice consume TOPIC [-g GROUP] [--offset start|end|N|@MILLIS] [-n COUNT] [-o plain|json]
  sluice group list
  sluice group describe GROUP
  sluice group seek GROUP --to start|end|N|@MILLIS [--topic T ...]   (the group must be empty)
  sluice group delete GROUP...
  sluice cluster info
  sluice cluster health                                 exit 1 unless every partition is led and fully in sync
  sluice acl list|create|delete [--allow|--deny User:NAME] [--operation Read,...] [--topic T|--group G|--transactional-id X|--cluster] [--prefixed] [--host H]
  sluice user list [USER...]                            SCRAM credentials (names, mechanisms, iterations; never secrets)
  sluice user set-scram USER [--mechanism SCRAM-SHA-512] [--password P] [--iterations N]   the password from stdin unless --password
  sluice user delete-scram USER [--mechanism SCRAM-SHA-512]
  sluice quorum describe                                the metadata quorum: leader, epoch, voters and observers with lag
  sluice completion bash|zsh                            a shell completion script (source <(sluice completion bash))
Common flags: --brokers host:port[,host:port] (default $SLUICE_BROKERS or 127.0.0.1:9092),
--profile NAME (a [NAME] section of $SLUICE_PROFILES or ~/.config/sluice/profiles: brokers =, timeout =), -o table|json.
Exit status: 0 success, 1 the operation failed, 2 a wrong command line.
`

// isSubcommand reports whether args name an admin subcommand rather than the broker.
func isSubcommand(args []string) bool {
	if len(args) == 0 {
		return false
	}
	_, ok := subcommands[args[0]]
	return ok || args[0] == "help"
}

// runCLI runs one subcommand and returns the process exit status.
func runCLI(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if args[0] == "help" {
		fmt.Fprint(stdout, cliUsage)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c := &cli{ctx: ctx, in: stdin, out: stdout, errOut: stderr}
	err := subcommands[args[0]](c, args[1:])
	for _, cancel := range c.cancels {
		cancel()
	}
	if c.client != nil {
		c.client.Close()
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, cliUsage)
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "sluice %s: %s\n\n%s", args[0], ue.msg, cliUsage)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "sluice %s: %s\n", args[0], err)
		return exitFailed
	}
}

// cli is one subcommand's run: its common flags and its client.
type cli struct {
	ctx         context.Context
	in          io.Reader
	out, errOut io.Writer

	brokers string
	profile string
	output  string
	timeout time.Duration

	client *kgo.Client
	// cancels end the contexts start handed out, when the command returns.
	cancels []context.CancelFunc
}

// flags returns a flag set with the common flags; output lists the -o values the command takes.
func (c *cli) flags(name string, output ...string) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.brokers, "brokers", "127.0.0.1:9092", "comma-separated bootstrap brokers")
	fs.StringVar(&c.profile, "profile", "", "a cluster named in the profiles file ($SLUICE_PROFILES or ~/.config/sluice/profiles)")
	fs.DurationVar(&c.timeout, "timeout", 15*time.Second, "how long to wait for the cluster")
	if len(output) > 0 {
		fs.StringVar(&c.output, "o", output[0], "output format: "+strings.Join(output, ", "))
	}
	return fs
}

// parse parses args with flags and positional arguments in any order, and checks -o.
func (c *cli) parse(fs *flag.FlagSet, args []string, output ...string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(output) > 0 && !contains(output, c.output) {
		return nil, usagef("-o %q: want one of %s", c.output, strings.Join(output, ", "))
	}
	if err := c.applyProfile(fs); err != nil {
		return nil, err
	}
	return pos, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// connect makes the client, with extra options, and checks the cluster answers.
func (c *cli) connect(opts ...kgo.Opt) (*kadm.Client, error) {
	seeds := strings.Split(c.brokers, ",")
	opts = append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("sluice-cli")}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("--brokers %s: %w", c.brokers, err)
	}
	c.client = cl
	ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return nil, fmt.Errorf("cannot reach a broker at %s (%v); is it running? --brokers names another", c.brokers, err)
	}
	return kadm.NewClient(cl), nil
}

// start is an admin command's set-up: args parsed with fs (-o table or json), the positional
// arguments checked by check (a usage error before anything is dialled), the cluster reached,
// and a context for the command's requests, ended when the command returns.
func (c *cli) start(fs *flag.FlagSet, args []string, check func(pos []string) error) ([]string, *kadm.Client, context.Context, error) {
	pos, err := c.parse(fs, args, "table", "json")
	if err != nil {
		return nil, nil, nil, err
	}
	if err := check(pos); err != nil {
		return nil, nil, nil, err
	}
	adm, err := c.connect()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := c.opCtx()
	c.cancels = append(c.cancels, cancel)
	return pos, adm, ctx, nil
}

// oneArg and someArgs are start's checks for one positional argument and for at least one;
// usage says what the command wants.
func oneArg(usage string) func([]string) error {
	return func(pos []string) error {
		if len(pos) != 1 {
			return usageError{usage}
		}
		return nil
	}
}

func someArgs(usage string) func([]string) error {
	return func(pos []string) error {
		if len(pos) == 0 {
			return usageError{usage}
		}
		return nil
	}
}

// noArgs is start's check for a command without positional arguments.
func noArgs(pos []string) error {
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	return nil
}

// opCtx is a context for one admin round trip.
func (c *cli) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, c.timeout)
}

// json writes v as indented JSON.
func (c *cli) json(v any) error {
	enc := json.NewEncoder(c.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows under a header, aligned.
func (c *cli) table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// explain turns a Kafka error about topic into a message a person can act on.
func explain(err error, topic string) error {
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("topic %s does not exist; `sluice topic list` shows the topics, `sluice topic create %s` makes it", topic, topic)
	case errors.Is(err, kerr.TopicAlreadyExists):
		return fmt.Errorf("topic %s already exists; `sluice topic describe %s` shows it", topic, topic)
	case errors.Is(err, kerr.InvalidReplicationFactor):
		return fmt.Errorf("topic %s: %v; `sluice cluster info` shows how many brokers there are", topic, err)
	}
	return err
}

func int32List(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
