package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// runUser is `sluice user list|set-scram|delete-scram`: SCRAM credentials as kafka-configs
// --entity-type users manages them (DescribeUserScramCredentials, AlterUserScramCredentials).
// The password is read from stdin (its first line) unless --password names it, so that it
// need not appear in a process listing or a shell history.
func runUser(c *cli, args []string) error {
	if len(args) == 0 {
		return usagef("user wants one of list, set-scram, delete-scram")
	}
	verb := args[0]
	switch verb {
	case "list", "set-scram", "delete-scram":
	default:
		return usagef("unknown user command %q: want list, set-scram or delete-scram", verb)
	}
	fs := c.flags("user "+verb, "table", "json")
	mechanism := fs.String("mechanism", "SCRAM-SHA-512", "SCRAM-SHA-256 or SCRAM-SHA-512")
	password := fs.String("password", "", "the password (default: the first line of stdin)")
	iterations := fs.Int("iterations", 4096, "SCRAM iterations, 4096 to 16384")
	pos, err := c.parse(fs, args[1:], "table", "json")
	if err != nil {
		return err
	}
	if verb != "list" { // list takes any number of user names, none for every user
		if err := oneArg("user " + verb + " wants one user name")(pos); err != nil {
			return err
		}
	}
	mech, err := scramMechanism(*mechanism)
	if err != nil {
		return err
	}
	if verb == "set-scram" && *password == "" {
		line, err := bufio.NewReader(c.in).ReadString('\n')
		if err != nil && line == "" {
			return usagef("user set-scram wants a password: --password, or a line on stdin")
		}
		*password = strings.TrimRight(line, "\r\n")
	}
	adm, err := c.connect()
	if err != nil {
		return err
	}
	ctx, cancel := c.opCtx()
	defer cancel()
	switch verb {
	case "list":
		described, err := adm.DescribeUserSCRAMs(ctx, pos...)
		if err != nil {
			return err
		}
		return c.userRows(described)
	case "set-scram":
		altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{
			User: pos[0], Mechanism: mech, Iterations: int32(*iterations), Password: *password,
		}})
		if err != nil {
			return err
		}
		if err := alteredErr(altered); err != nil {
			return err
		}
		fmt.Fprintf(c.errOut, "set %s credential of %s\n", mech, pos[0])
		return nil
	default:
		altered, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: pos[0], Mechanism: mech}}, nil)
		if err != nil {
			return err
		}
		if err := alteredErr(altered); err != nil {
			return err
		}
		fmt.Fprintf(c.errOut, "deleted %s credential of %s\n", mech, pos[0])
		return nil
	}
}

func scramMechanism(name string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(name) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, usagef("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", name)
}

// alteredErr is the first per-user error of an AlterUserScramCredentials answer.
func alteredErr(altered kadm.AlteredUserSCRAMs) error {
	for _, a := range altered.Sorted() {
		if a.Err != nil {
			if a.ErrMessage != "" {
				return fmt.Errorf("user %s: %w: %s", a.User, a.Err, a.ErrMessage)
			}
			return fmt.Errorf("user %s: %w", a.User, a.Err)
		}
	}
	return nil
}

// userRow is one user's credential as the CLI prints it.
type userRow struct {
	User       string `json:"user"`
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

func (c *cli) userRows(described kadm.DescribedUserSCRAMs) error {
	rows := []userRow{}
	var errs []error
	for _, d := range described.Sorted() {
		if d.Err != nil {
			errs = append(errs, fmt.Errorf("user %s: %w", d.User, d.Err))
			continue
		}
		for _, ci := range d.CredInfos {
			rows = append(rows, userRow{User: d.User, Mechanism: ci.Mechanism.String(), Iterations: ci.Iterations})
		}
	}
	if c.output == "json" {
		if err := c.json(rows); err != nil {
			return err
		}
	} else {
		var table [][]string
		for _, r := range rows {
			table = append(table, []string{r.User, r.Mechanism, fmt.Sprint(r.Iterations)})
		}
		if err := c.table([]string{"USER", "MECHANISM", "ITERATIONS"}, table); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}
