package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

func newKeysCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke API keys (needs an admin key)",
		Long: `Every call to a spool server needs an API key. A key has a role:

  admin   everything, keys included
  submit  submit, cancel and read jobs
  read    read jobs and their logs
  worker  run jobs
  ingest  send the logs of programs spool did not start (docs/ingest.md),
          and nothing else: for Firehose and log shippers

With --queue, a worker, submit or read key works only on the jobs of those
queues: it runs, submits, cancels, lists and reads only them, and a job of
another queue is "not found" to it.

The server keeps only a hash of each key: a key is shown once, when it is
created. Revoking a key stops it at once, on every server.`,
	}
	cmd.AddCommand(newKeysCreateCmd(e), newKeysListCmd(e), newKeysRevokeCmd(e))
	return cmd
}

func newKeysCreateCmd(e *env) *cobra.Command {
	var cfg keysCreateConfig
	cmd := &cobra.Command{
		Use:   "create --role ROLE --name NAME",
		Short: "Create an API key and print it (its last line is the key alone)",
		Example: `  spool keys create --role submit --name ci
  spool keys create --role worker --queue builds --name builder-1
  SPOOL_API_KEY=$(spool keys create --role read --name dashboard | tail -n1)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKeysCreate(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().StringVar(&cfg.key.Name, "name", "", "unique name: letters, digits, '.', '_' and '-'")
	roles := make([]string, len(spool.Roles()))
	for i, r := range spool.Roles() {
		roles[i] = r.String()
	}
	enumVar(cmd.Flags(), &cfg.role, "role", "", "admin, submit, read, worker or ingest (sends logs of other programs, nothing else)", roles...)
	cmd.Flags().StringSliceVarP(&cfg.key.Queues, "queue", "q", nil, "the only queues the key may use (worker, submit and read keys; repeat, or comma-separate)")
	return cmd
}

// keysCreateConfig is what `spool keys create` is told on its command line.
type keysCreateConfig struct {
	key  client.KeyParams
	role string // the key's role, by name
}

func runKeysCreate(ctx context.Context, cfg keysCreateConfig, e *env) error {
	if cfg.key.Name == "" {
		return fmt.Errorf("--name is needed: the key's name, for the audit log and to revoke it")
	}
	if cfg.role == "" {
		return fmt.Errorf("--role is needed: admin, submit, read, worker or ingest")
	}
	role, err := spool.ParseRole(cfg.role)
	if err != nil {
		return err
	}
	cfg.key.Role = role
	c, err := e.client()
	if err != nil {
		return err
	}
	key, secret, err := c.CreateKey(ctx, cfg.key)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.errOut, "created %s key %q%s; it is shown this once, keep it safe:\n", key.Role.String(), key.Name, queuesNote(key))
	fmt.Fprintln(e.out, secret)
	return nil
}

// queuesNote says which queues a worker key is limited to.
func queuesNote(k *spool.Key) string {
	if len(k.Queues) == 0 {
		return ""
	}
	return " for queues " + strings.Join(k.Queues, ", ")
}

func newKeysListCmd(e *env) *cobra.Command {
	var cfg keysListConfig
	return &cobra.Command{
		Use:   "list",
		Short: "List API keys (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKeysList(cmd.Context(), cfg, e)
		},
	}
}

// keysListConfig is what `spool keys list` is told on its command line.
type keysListConfig struct {
}

func runKeysList(ctx context.Context, cfg keysListConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	keys, err := c.Keys(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tQUEUES\tCREATED\tLAST USED\tREVOKED")
	for _, k := range keys {
		used, revoked := "never", "-"
		if !k.LastUsedAt.IsZero() {
			used = ago(k.LastUsedAt, now)
		}
		if !k.RevokedAt.IsZero() {
			revoked = ago(k.RevokedAt, now)
		}
		queues := strings.Join(k.Queues, ",")
		if queues == "" {
			queues = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.Name, k.Role.String(), queues,
			ago(k.CreatedAt, now), used, revoked)
	}
	return tw.Flush()
}

func newKeysRevokeCmd(e *env) *cobra.Command {
	var cfg keysRevokeConfig
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke an API key: it stops working at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.name = args[0]
			return runKeysRevoke(cmd.Context(), cfg, e)
		},
	}
}

// keysRevokeConfig is what `spool keys revoke` is told on its command line.
type keysRevokeConfig struct {
	name string
}

func runKeysRevoke(ctx context.Context, cfg keysRevokeConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	k, err := c.RevokeKey(ctx, cfg.name)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "revoked key %q (%s)\n", k.Name, k.Role.String())
	return nil
}
