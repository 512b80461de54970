package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/setting"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
)

func newAWSCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "aws",
		Short: "Set up the AWS backend (SQS queues, DynamoDB tables)",
	}
	var cfg awsInitConfig
	initCmd := &cobra.Command{
		Use:   "init",
		Short: "Create the SQS queues and DynamoDB tables store.aws names, if missing",
		Long: `Create what the AWS backend needs, as configured under store.aws: the jobs
and events tables (with their indexes, and TTL on events), and for each queue
in store.aws.queue_names without a URL in store.aws.queues, its SQS queue and
a dead-letter queue. What exists is left alone, so it is safe to run again.

Credentials and region come from the usual AWS sources (environment, shared
config, instance role). For production you may prefer the CloudFormation
template in deploy/aws/spool.yaml, which creates the same; docs/aws.md lists
the IAM permissions the server needs.`,
		Example: `  spool aws init --config spool.yaml
  SPOOL_STORE_AWS_REGION=eu-west-1 spool aws init`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAWSInit(cmd.Context(), cfg, e)
		},
	}
	initCmd.Flags().StringVar(&cfg.configPath, "config", "", "the server's YAML configuration (its store.aws section)")
	cmd.AddCommand(initCmd)
	return cmd
}

// awsInitConfig is what `spool aws init` is told on its command line.
type awsInitConfig struct {
	configPath string
}

func runAWSInit(ctx context.Context, cfg awsInitConfig, e *env) error {
	for _, w := range config.UnknownEnv(os.Environ()) {
		fmt.Fprintln(e.errOut, "spool: warning: "+w)
	}
	conf, err := config.Read(cfg.configPath, os.LookupEnv)
	if err != nil {
		// The file is the only setting spool aws init has a flag for.
		return setting.Rename(err, func(name string) string {
			if name == "config" {
				return "--config"
			}
			return name
		})
	}
	for _, w := range conf.Warnings {
		fmt.Fprintln(e.errOut, "spool: warning: "+w)
	}
	if err := conf.Store.AWS.Validate(); err != nil {
		return err
	}
	rep, err := awsstore.Provision(ctx, conf.Store.AWS)
	fmt.Fprint(e.out, rep.String())
	if err != nil {
		return fmt.Errorf("setting up AWS: %w", err)
	}
	if conf.Store.Type != "aws" {
		fmt.Fprintln(e.errOut, "note: store.type is not aws yet; set it (and server.token_key) to use these resources")
	}
	return nil
}
